package format

import "io"

// WriteChunk is the size and alignment of WritePack's writes: 2 MiB, the
// PMD huge page of amd64 and of arm64 with 4 KiB pages.
//
// Linux (6.x; ext4 since 6.16, xfs) caches a buffered write in folios no
// larger than the write and aligned to it in the file. A pack written in
// chunks of 2 MiB at multiples of 2 MiB sits in the page cache as 2 MiB
// folios, which a mapping of the pack (sirun's load) maps with huge pages.
// A pack in small folios (written in smaller pieces) decodes its dense
// tensors 2.4-2.9× slower with one thread (the whole step 1.6×) until the
// cache drops it (docs/performance.md, "Loading").
const WriteChunk = 2 << 20

// chunkWriter buffers a file written from offset 0 and hands it to w in
// whole chunks of len(buf) bytes, so every write but the last starts at a
// multiple of the chunk and is one chunk long.
type chunkWriter struct {
	w   io.Writer
	buf []byte // len: bytes held; cap: the chunk
	err error
}

func newChunkWriter(w io.Writer, chunk int) *chunkWriter {
	return &chunkWriter{w: w, buf: make([]byte, 0, chunk)}
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if c.err != nil {
			return n, c.err
		}
		k := copy(c.buf[len(c.buf):cap(c.buf)], p)
		c.buf = c.buf[:len(c.buf)+k]
		n, p = n+k, p[k:]
		if len(c.buf) == cap(c.buf) {
			c.flush()
		}
	}
	return n, c.err
}

// Flush writes what is held (the file's last, short chunk).
func (c *chunkWriter) Flush() error {
	if c.err == nil && len(c.buf) > 0 {
		c.flush()
	}
	return c.err
}

func (c *chunkWriter) flush() {
	var n int
	n, c.err = c.w.Write(c.buf)
	if c.err == nil && n < len(c.buf) {
		c.err = io.ErrShortWrite
	}
	c.buf = c.buf[:0]
}
