package format

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"unsafe"
)

// HugeMapped is how many bytes of b — a pack's prefix as Open mapped or
// read it — the kernel maps with 2 MiB pages, and whether it could tell
// (Linux only: /proc/self/smaps). A mapped pack is in huge pages when the
// page cache holds its file in 2 MiB folios: as WritePack leaves it, or
// as the kernel's read-ahead reads it; a file written or copied in small
// writes sits in small folios until the cache drops it, and its decode
// reads slower (WriteChunk says how much).
func HugeMapped(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	return hugeMapped(b)
}

// HugeMapped is the package HugeMapped of the loaded prefix.
func (p *Pack) HugeMapped() (int64, bool) { return HugeMapped(p.data) }

// smapsHuge sums, over the mappings in smaps (the text of /proc/PID/smaps)
// that overlap [lo, hi), their FilePmdMapped, ShmemPmdMapped (a file on
// tmpfs) and AnonHugePages: the bytes mapped by 2 MiB pages. A mapping that extends past the range counts at
// most its overlap. ok is false when no mapping overlaps the range.
func smapsHuge(smaps io.Reader, lo, hi uint64) (huge int64, ok bool) {
	sc := bufio.NewScanner(smaps)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	in := false
	var overlap uint64
	for sc.Scan() {
		line := sc.Bytes()
		if start, end, isHeader := smapsRange(line); isHeader {
			in = start < hi && end > lo
			overlap = min(end, hi) - max(start, lo)
			ok = ok || in
			continue
		}
		if !in {
			continue
		}
		for _, key := range [][]byte{[]byte("FilePmdMapped:"), []byte("ShmemPmdMapped:"), []byte("AnonHugePages:")} {
			if v, found := bytes.CutPrefix(line, key); found {
				f := bytes.Fields(v)
				if len(f) == 0 {
					continue
				}
				kb, err := strconv.ParseUint(string(f[0]), 10, 64)
				if err == nil {
					huge += int64(min(kb<<10, overlap))
				}
			}
		}
	}
	return huge, ok
}

// smapsRange parses a mapping's header line ("start-end perms ..." in
// hexadecimal); isHeader is false for the field lines under it.
func smapsRange(line []byte) (start, end uint64, isHeader bool) {
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 {
		return 0, 0, false
	}
	a, b, found := bytes.Cut(line[:sp], []byte("-"))
	if !found {
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(string(a), 16, 64)
	e, err2 := strconv.ParseUint(string(b), 16, 64)
	if err1 != nil || err2 != nil || e < s {
		return 0, 0, false
	}
	return s, e, true
}

// addrRange is b's address range.
func addrRange(b []byte) (lo, hi uint64) {
	lo = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	return lo, lo + uint64(len(b))
}
