package format

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const smapsSample = `7f0000000000-7f0000800000 r--s 00000000 fd:00 1234 /tmp/a.sip
Size:               8192 kB
Rss:                8192 kB
FilePmdMapped:      6144 kB
AnonHugePages:         0 kB
VmFlags: rd sh mr mw me ms
7f0000800000-7f0001000000 rw-p 00000000 00:00 0
Size:               8192 kB
FilePmdMapped:         0 kB
AnonHugePages:      4096 kB
7f0002000000-7f0002200000 r--s 00000000 fd:00 99 /tmp/b.sip
FilePmdMapped:      2048 kB
7f0003000000-7f0003400000 r--s 00000000 00:1f 7 /dev/shm/c.sip
FilePmdMapped:         0 kB
ShmemPmdMapped:     4096 kB
`

func TestSmapsHugeSumsTheMappingsOverTheRange(t *testing.T) {
	const base = 0x7f0000000000
	for _, c := range []struct {
		lo, hi uint64
		want   int64
		ok     bool
	}{
		{base, base + 8<<20, 6 << 20, true},           // the first mapping
		{base, base + 16<<20, 10 << 20, true},         // both: file and anonymous huge pages
		{base + 8<<20, base + 9<<20, 1 << 20, true},   // 1 MiB of the second: at most the overlap
		{base + 16<<20, base + 32<<20, 0, false},      // the gap: no mapping
		{base + 32<<20, base + 34<<20, 2 << 20, true}, // the third
		{base + 48<<20, base + 52<<20, 4 << 20, true}, // on tmpfs: ShmemPmdMapped
	} {
		got, ok := smapsHuge(strings.NewReader(smapsSample), c.lo, c.hi)
		if got != c.want || ok != c.ok {
			t.Errorf("[%#x, %#x): %d bytes, %v; want %d, %v", c.lo, c.hi, got, ok, c.want, c.ok)
		}
	}
}

// On Linux a mapped file's share is known and within the mapping; on other
// systems it is not known.
func TestHugeMappedOfAMapping(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := MapFilePopulated(f, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer Unmap(b)
	huge, ok := HugeMapped(b)
	if ok != (runtime.GOOS == "linux") || huge < 0 || huge > int64(len(b)) {
		t.Fatalf("HugeMapped = %d, %v on %s for a %d-byte mapping", huge, ok, runtime.GOOS, len(b))
	}
}
