package format

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The record of verified packs: one line per pack file whose loaded bytes
// matched their BLAKE3 hashes, keyed by the file's identity (device, inode,
// size, modification and change times), so a pack is hashed once and again
// only when the file changes or a run loads more bands than were checked.

// VerifiedList is the file that records verified packs, in dir.
const VerifiedList = "verified"

// identity is the key a pack file is remembered by; "" where the platform
// gives none (the pack is then verified every time it is asked to be).
func (p *Pack) identity() string {
	if p.file == nil {
		return ""
	}
	st, err := p.file.Stat()
	if err != nil {
		return ""
	}
	return fileIdentity(p.file, st)
}

// VerifiedBands reports how many bands of the pack the list in dir records
// as verified for the file as it is now (0: none, or not recorded).
func (p *Pack) VerifiedBands(dir string) int {
	id := p.identity()
	if id == "" || dir == "" {
		return 0
	}
	f, err := os.Open(filepath.Join(dir, VerifiedList))
	if err != nil {
		return 0
	}
	defer f.Close()
	best := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, bands, ok := strings.Cut(sc.Text(), " bands ")
		if !ok || key != id {
			continue
		}
		if n, err := strconv.Atoi(bands); err == nil && n > best {
			best = n
		}
	}
	return best
}

// RememberVerified records in dir that the pack's loaded bands verified.
// The list is appended to (one short write, atomic for O_APPEND) and
// rewritten without stale lines once it grows past a few hundred.
func (p *Pack) RememberVerified(dir string) error {
	id := p.identity()
	if id == "" {
		return errors.New("this platform gives no file identity to remember a pack by")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, VerifiedList)
	if st, err := os.Stat(path); err == nil && st.Size() > 64<<10 {
		os.Remove(path) // forgetting costs a re-verification, nothing else
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%s bands %d\n", id, p.LoadedBands)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// VerifiedDir is where sirun records verified packs: the user's cache
// directory ($XDG_CACHE_HOME or ~/.cache on Linux), sipack/ in it.
func VerifiedDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "sipack"), nil
}
