package format

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// recordingWriter keeps what it is given and the size of every write.
type recordingWriter struct {
	data   bytes.Buffer
	writes []int
	fail   int // fail the write of this index (1-based); 0: never
}

func (r *recordingWriter) Write(p []byte) (int, error) {
	r.writes = append(r.writes, len(p))
	if len(r.writes) == r.fail {
		return len(p) / 2, errors.New("disk full")
	}
	return r.data.Write(p)
}

// Every write the file sees is one whole chunk at a multiple of the chunk,
// but the last, whatever the sizes written into the chunkWriter; the bytes
// arrive whole and in order.
func TestChunkWriterWritesWholeAlignedChunks(t *testing.T) {
	const chunk = 4096
	rng := rand.New(rand.NewPCG(1, 2))
	var want bytes.Buffer
	rw := &recordingWriter{}
	c := newChunkWriter(rw, chunk)
	for _, n := range []int{1, 100, chunk - 101, chunk, 3*chunk + 17, 0, 5, 10 * chunk, 2*chunk - 5} {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		want.Write(p)
		if got, err := c.Write(p); got != n || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v", n, got, err)
		}
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rw.data.Bytes(), want.Bytes()) {
		t.Fatalf("the file holds %d bytes, not the %d written in order", rw.data.Len(), want.Len())
	}
	off := 0
	for i, n := range rw.writes {
		if off%chunk != 0 {
			t.Fatalf("write %d at offset %d, not a multiple of %d", i, off, chunk)
		}
		if n != chunk && i != len(rw.writes)-1 {
			t.Fatalf("write %d of %d bytes, not the whole chunk (writes %v)", i, n, rw.writes)
		}
		off += n
	}
	if last := rw.writes[len(rw.writes)-1]; last != want.Len()%chunk {
		t.Fatalf("last write %d bytes, want %d", last, want.Len()%chunk)
	}
}

// A short write is an error, kept: nothing later is written after it.
func TestChunkWriterShortWriteIsAnError(t *testing.T) {
	rw := &recordingWriter{fail: 2}
	c := newChunkWriter(rw, 16)
	_, err := c.Write(make([]byte, 40))
	if err == nil {
		t.Fatal("a short write of the second chunk went unreported")
	}
	if _, err2 := c.Write([]byte{1}); err2 == nil || c.Flush() == nil {
		t.Fatal("the chunkWriter went on after a failed write")
	}
	if len(rw.writes) != 2 {
		t.Fatalf("%d writes reached the file after the failed one", len(rw.writes)-2)
	}
}
