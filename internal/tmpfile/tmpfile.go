// Package tmpfile names the temporary files the writers (packs, profiles)
// write before renaming them into place, and finds the ones a killed process
// left behind.
//
// A writer of NAME writes NAME.tmp-PID, so two processes writing the same
// NAME never share a temporary file, and a file left by a process that no
// longer runs can be told from one still being written.
package tmpfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Name is the temporary file this process writes for path.
func Name(path string) string { return fmt.Sprintf("%s.tmp-%d", path, os.Getpid()) }

// Stale is a temporary file of path left by a process that is not running.
type Stale struct {
	Path  string
	PID   int // 0 for the unnumbered NAME.tmp of older versions
	Bytes int64
}

// RemoveStale removes the temporary files of path whose writer is no longer
// running (NAME.tmp-PID with PID dead, and the NAME.tmp older versions
// wrote) and returns what it removed; files of live processes are kept.
func RemoveStale(path string) ([]Stale, error) {
	matches, err := filepath.Glob(globEscape(path) + ".tmp*")
	if err != nil {
		return nil, err
	}
	var out []Stale
	for _, m := range matches {
		suffix := strings.TrimPrefix(m, path+".tmp")
		pid := 0
		if suffix != "" {
			n, err := strconv.Atoi(strings.TrimPrefix(suffix, "-"))
			if err != nil || !strings.HasPrefix(suffix, "-") || n <= 0 {
				continue // not one of ours
			}
			if n == os.Getpid() || alive(n) {
				continue
			}
			pid = n
		}
		st, err := os.Lstat(m)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		if err := os.Remove(m); err != nil {
			return out, fmt.Errorf("remove stale temporary file %s: %w", m, err)
		}
		out = append(out, Stale{Path: m, PID: pid, Bytes: st.Size()})
	}
	return out, nil
}

// globEscape quotes the glob metacharacters of a literal path.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) && !(r == '\\' && filepath.Separator == '\\') {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
