//go:build cuda || cudaemu

package cuda

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// fatbinEntry is one image in an nvcc fatbin: SASS (an ELF cubin) for one
// architecture, or PTX for a virtual architecture and its ISA version.
type fatbinEntry struct {
	ptx          bool
	arch         int // 87: sm_87 (SASS) or compute_87 (PTX)
	major, minor int // PTX ISA version (PTX entries)
}

// parseFatbin lists a fatbin's images. The layout is nvcc's (fatbinary.h):
// a 16-byte header (magic 0xBA55ED50, version, header size, payload size),
// then per image a header — kind (1 PTX, 2 ELF), header size, payload
// size, the PTX ISA minor and major at 24 and 26, the architecture at 28 —
// followed by its payload.
func parseFatbin(b []byte) ([]fatbinEntry, error) {
	le := binary.LittleEndian
	if len(b) < 16 || le.Uint32(b) != 0xBA55ED50 {
		return nil, fmt.Errorf("not a fatbin")
	}
	off := uint64(le.Uint16(b[6:]))
	end := off + le.Uint64(b[8:])
	if end > uint64(len(b)) {
		return nil, fmt.Errorf("fatbin: %d bytes of images past its %d bytes", end, len(b))
	}
	var out []fatbinEntry
	for off+32 <= end {
		h := b[off:]
		kind, hs, size := le.Uint16(h), uint64(le.Uint32(h[4:])), le.Uint64(h[8:])
		if hs < 32 || off+hs+size > end {
			return nil, fmt.Errorf("fatbin: image at %d runs past the end", off)
		}
		e := fatbinEntry{ptx: kind == 1, arch: int(le.Uint32(h[28:]))}
		if e.ptx {
			e.minor, e.major = int(le.Uint16(h[24:])), int(le.Uint16(h[26:]))
		}
		out = append(out, e)
		off += hs + size
	}
	return out, nil
}

// describeFatbin names a fatbin's images ("sm_87, sm_90, compute_80 PTX 7.8").
func describeFatbin(b []byte) string {
	es, err := parseFatbin(b)
	if err != nil {
		return err.Error()
	}
	var s []string
	for _, e := range es {
		if e.ptx {
			s = append(s, fmt.Sprintf("compute_%d PTX %d.%d", e.arch, e.major, e.minor))
		} else {
			s = append(s, fmt.Sprintf("sm_%d", e.arch))
		}
	}
	return strings.Join(s, ", ")
}

// ptxDriver is the CUDA version (cuDriverGetVersion's 1000·major+10·minor)
// whose driver first JIT-compiles PTX ISA major.minor: ISA 7.x came with
// CUDA 11.x, 8.0-8.5 with 12.0-12.5, 8.6-8.8 with 12.7-12.9; 0 for an ISA
// this table does not know (the module load then says whether it works).
func ptxDriver(major, minor int) int {
	switch {
	case major == 7:
		return 11000 + 10*minor
	case major == 8 && minor <= 5:
		return 12000 + 10*minor
	case major == 8:
		return 12000 + 10*(minor+1)
	}
	return 0
}

// requiredDriver is the oldest CUDA driver that loads fatbin b: the
// newest of its PTX images' CUDA versions. CUDA's compatibility promise
// for a newer driver covers PTX; a cubin built by a newer toolkit than the
// driver is not promised to load, so the PTX's version, which is the
// building toolkit's, is the requirement.
func requiredDriver(b []byte) int {
	es, err := parseFatbin(b)
	if err != nil {
		return 0
	}
	need := 0
	for _, e := range es {
		if e.ptx {
			need = max(need, ptxDriver(e.major, e.minor))
		}
	}
	return need
}

// checkDriver refuses a driver (cuDriverGetVersion: have) older than
// fatbin b needs, naming both versions: loading the kernels on it fails
// with a less helpful error, or not until the first launch.
func checkDriver(have int, b []byte) error {
	need := requiredDriver(b)
	if have <= 0 {
		return fmt.Errorf("cuda: cannot read the CUDA driver's version (cuDriverGetVersion)")
	}
	if have < need {
		return fmt.Errorf("cuda: the NVIDIA driver supports CUDA %s; sirun-cuda's kernels (%s) need a driver for CUDA %s or newer (JetPack 6 on a Jetson; driver 520 or newer elsewhere)",
			cudaVersion(have), describeFatbin(b), cudaVersion(need))
	}
	return nil
}

// cudaVersion writes 12020 as 12.2.
func cudaVersion(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }
