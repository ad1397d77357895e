package format

import (
	"encoding/binary"
	"hash/crc32"
)

// Magic opens every pack. Like PNG's signature it catches text-mode
// transfers (\r\n, \x1a) as well as wrong files.
const Magic = "SIPK\r\n\x1a\n"

const (
	// VersionMajor changes only when the byte layout changes; a reader must
	// refuse a major it does not know. Writers write 3 or 2 by the records'
	// dtype (LayoutFor).
	VersionMajor = 5 // 5: as 4, a band block's down section tiled by groups of Index.TileGroup records (routed packs); 4: as 3, the down rows by pieces of DownTile values; 3: a band block's gate rows, up rows and down rows in three runs; 2: gate rows, then up|down pairs (§5)
	// VersionMinor counts compatible additions (new index fields); a reader
	// must accept any minor version of its major.
	VersionMinor = 7 // 1: ranks_present (sliced packs); 2: Q8_0 and Q4_0 dtypes; 3: chat_templates; 4: layer budgets; 5: routers; 6: tile_group (version 5); 7: Q4_K and Q6_K dtypes

	PreambleSize = 128
	// SectionAlign is the alignment of the dense and FFN sections and of every band.
	SectionAlign = 4096
	// TensorAlign is the alignment of each dense tensor.
	TensorAlign = 64
	// MaxIndexSize caps the index so a corrupt length cannot make a reader allocate or map gigabytes.
	MaxIndexSize = 1 << 30
)

// Preamble is the fixed 128-byte header of a pack. Offsets are absolute.
//
//	off  size  field
//	  0     8  magic "SIPK\r\n\x1a\n"
//	  8     2  version major
//	 10     2  version minor
//	 12     4  flags (must be 0 in v1)
//	 16     8  index offset (must be 128)
//	 24     8  index length
//	 32     8  dense section offset (4096-aligned)
//	 40     8  dense section length
//	 48     8  FFN section offset (4096-aligned)
//	 56     8  FFN section length (= band count × band bytes)
//	 64     8  band bytes (4096-aligned)
//	 72     4  band neurons B
//	 76     4  band count
//	 80    32  BLAKE3-256 of the index bytes
//	112     8  file length
//	120     4  CRC-32C of bytes [0, 120)
//	124     4  reserved, must be 0
type Preamble struct {
	Major, Minor uint16
	Flags        uint32
	IndexOff     uint64
	IndexLen     uint64
	DenseOff     uint64
	DenseLen     uint64
	FFNOff       uint64
	FFNLen       uint64
	BandBytes    uint64
	BandNeurons  uint32
	BandCount    uint32
	IndexHash    [32]byte
	FileLen      uint64
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MarshalBinary encodes p into its 128 bytes, CRC included.
func (p *Preamble) MarshalBinary() []byte {
	b := make([]byte, PreambleSize)
	copy(b, Magic)
	le := binary.LittleEndian
	le.PutUint16(b[8:], p.Major)
	le.PutUint16(b[10:], p.Minor)
	le.PutUint32(b[12:], p.Flags)
	le.PutUint64(b[16:], p.IndexOff)
	le.PutUint64(b[24:], p.IndexLen)
	le.PutUint64(b[32:], p.DenseOff)
	le.PutUint64(b[40:], p.DenseLen)
	le.PutUint64(b[48:], p.FFNOff)
	le.PutUint64(b[56:], p.FFNLen)
	le.PutUint64(b[64:], p.BandBytes)
	le.PutUint32(b[72:], p.BandNeurons)
	le.PutUint32(b[76:], p.BandCount)
	copy(b[80:112], p.IndexHash[:])
	le.PutUint64(b[112:], p.FileLen)
	le.PutUint32(b[120:], crc32.Checksum(b[:120], castagnoli))
	return b
}

// parsePreamble decodes and checks the preamble against the real file size.
// Every rule of SPEC.md §2 is one check here.
func parsePreamble(b []byte, fileSize int64) (*Preamble, error) {
	const sec = "preamble"
	if len(b) < len(Magic) || string(b[:len(Magic)]) != Magic {
		return nil, formatErr(ErrMagic, sec, 0, "bad magic", nil)
	}
	if len(b) < PreambleSize {
		return nil, formatErr(ErrTruncated, sec, int64(len(b)), "file shorter than the 128-byte preamble", len(b))
	}
	le := binary.LittleEndian
	p := &Preamble{
		Major: le.Uint16(b[8:]), Minor: le.Uint16(b[10:]), Flags: le.Uint32(b[12:]),
		IndexOff: le.Uint64(b[16:]), IndexLen: le.Uint64(b[24:]),
		DenseOff: le.Uint64(b[32:]), DenseLen: le.Uint64(b[40:]),
		FFNOff: le.Uint64(b[48:]), FFNLen: le.Uint64(b[56:]),
		BandBytes: le.Uint64(b[64:]), BandNeurons: le.Uint32(b[72:]), BandCount: le.Uint32(b[76:]),
		FileLen: le.Uint64(b[112:]),
	}
	copy(p.IndexHash[:], b[80:112])
	if p.Major < 1 || p.Major > VersionMajor { // 1, 2: interleaved records, pairs (§5), still read and written
		return nil, formatErr(ErrVersion, sec, 8, "unsupported major version", p.Major)
	}
	if crc := le.Uint32(b[120:]); crc != crc32.Checksum(b[:120], castagnoli) {
		return nil, formatErr(ErrChecksum, sec, 120, "preamble CRC-32C mismatch", crc)
	}
	if p.Flags&^FlagLayerBands != 0 {
		return nil, formatErr(ErrVersion, sec, 12, "unknown flags", p.Flags)
	}
	if r := le.Uint32(b[124:]); r != 0 {
		return nil, formatErr(ErrIndex, sec, 124, "reserved field is not zero", r)
	}
	if p.FileLen != uint64(fileSize) {
		if uint64(fileSize) < p.FileLen {
			return nil, formatErr(ErrTruncated, sec, fileSize, "truncated: file is shorter than the preamble says", p.FileLen)
		}
		return nil, formatErr(ErrBounds, sec, 112, "file is longer than the preamble says", fileSize)
	}
	if p.IndexOff != PreambleSize {
		return nil, formatErr(ErrBounds, sec, 16, "index must start at offset 128", p.IndexOff)
	}
	if p.IndexLen == 0 || p.IndexLen > MaxIndexSize {
		return nil, formatErr(ErrBounds, sec, 24, "index length out of range", p.IndexLen)
	}
	end, ok := addOK(p.IndexOff, p.IndexLen)
	if !ok || end > p.DenseOff {
		return nil, formatErr(ErrBounds, sec, 24, "index overlaps the dense section", p.IndexLen)
	}
	if p.DenseOff%SectionAlign != 0 {
		return nil, formatErr(ErrAlign, sec, 32, "dense section offset not 4096-aligned", p.DenseOff)
	}
	end, ok = addOK(p.DenseOff, p.DenseLen)
	if !ok || end > p.FFNOff {
		return nil, formatErr(ErrBounds, sec, 40, "dense section overlaps the FFN section", p.DenseLen)
	}
	if p.FFNOff%SectionAlign != 0 {
		return nil, formatErr(ErrAlign, sec, 48, "FFN section offset not 4096-aligned", p.FFNOff)
	}
	if p.BandBytes%SectionAlign != 0 {
		return nil, formatErr(ErrAlign, sec, 64, "band bytes not 4096-aligned", p.BandBytes)
	}
	if p.BandCount > 0 && (p.BandBytes == 0 || p.BandNeurons == 0) {
		return nil, formatErr(ErrBounds, sec, 64, "bands present but band size is zero", p.BandBytes)
	}
	ffnLen, ok := mulOK(p.BandBytes, uint64(p.BandCount))
	if !ok || ffnLen != p.FFNLen {
		return nil, formatErr(ErrBounds, sec, 56, "FFN length is not band count × band bytes", p.FFNLen)
	}
	end, ok = addOK(p.FFNOff, p.FFNLen)
	if !ok || end != p.FileLen {
		return nil, formatErr(ErrBounds, sec, 56, "FFN section does not end at the end of the file", end)
	}
	return p, nil
}

func addOK(a, b uint64) (uint64, bool) {
	s := a + b
	return s, s >= a
}

func mulOK(a, b uint64) (uint64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	p := a * b
	return p, p/b == a
}

func alignUp(x, a uint64) uint64 { return (x + a - 1) / a * a }

func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
