// Package tmpfile names the temporary files the writers (packs, profiles,
// plots) write before renaming them into place, finds the ones a killed
// process left behind, and keeps reads and renames to regular files.
//
// The writer of DIR/NAME writes DIR/.NAME.sipack-tmp-PID: hidden, with a
// fixed marker, so that any later run writing into DIR recognises every
// temporary file left there whatever its NAME, and with the writer's process
// id, so that two processes never share one and a file of a process that no
// longer runs can be told from one still being written. Older versions wrote
// NAME.tmp-PID (and NAME.tmp); those are still removed, for the same NAME.
package tmpfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Marker is what every temporary file's name holds before the process id.
const Marker = ".sipack-tmp-"

// Name is the temporary file this process writes for path.
func Name(path string) string {
	dir, base := filepath.Split(path)
	return fmt.Sprintf("%s.%s%s%d", dir, base, Marker, os.Getpid())
}

// Stale is a temporary file left by a process that is not running.
type Stale struct {
	Path  string
	PID   int // 0 for the unnumbered NAME.tmp of older versions
	Bytes int64
}

// RemoveStale removes the temporary files whose writer no longer runs from
// the folder of path: every .NAME.sipack-tmp-PID of a dead PID, and the
// path.tmp-PID and path.tmp older versions wrote for this path. It returns
// what it removed; files of live processes and of this one are kept.
func RemoveStale(path string) ([]Stale, error) {
	var cands []Stale
	entries, _ := os.ReadDir(filepath.Dir(path)) // a missing folder holds nothing
	for _, e := range entries {
		if pid := pidOf(e.Name()); pid > 0 {
			cands = append(cands, Stale{Path: filepath.Join(filepath.Dir(path), e.Name()), PID: pid})
		}
	}
	legacy, err := filepath.Glob(globEscape(path) + ".tmp*")
	if err != nil {
		return nil, err
	}
	for _, m := range legacy {
		suffix := strings.TrimPrefix(m, path+".tmp")
		pid := 0
		if suffix != "" {
			n, err := strconv.Atoi(strings.TrimPrefix(suffix, "-"))
			if err != nil || !strings.HasPrefix(suffix, "-") || n <= 0 {
				continue // not one of ours
			}
			pid = n
		}
		cands = append(cands, Stale{Path: m, PID: pid})
	}
	var out []Stale
	for _, s := range cands {
		if s.PID != 0 && (s.PID == os.Getpid() || alive(s.PID)) {
			continue
		}
		st, err := os.Lstat(s.Path)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		if err := os.Remove(s.Path); err != nil {
			return out, fmt.Errorf("remove stale temporary file %s: %w", s.Path, err)
		}
		s.Bytes = st.Size()
		out = append(out, s)
	}
	return out, nil
}

// pidOf is the process id in a temporary file's name (.NAME.sipack-tmp-PID),
// or 0 for any other name.
func pidOf(name string) int {
	i := strings.LastIndex(name, Marker)
	if !strings.HasPrefix(name, ".") || i < 1 {
		return 0
	}
	digits := name[i+len(Marker):]
	n, err := strconv.Atoi(digits)
	if err != nil || n <= 0 || strconv.Itoa(n) != digits {
		return 0
	}
	return n
}

// Probe checks that path's temporary file can be created, by creating and
// removing it, so that a command refuses an output it could not write
// (missing or read-only folder, no permission) before its work instead of
// after it.
func Probe(path string) error {
	tmp := Name(path)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("output %s cannot be written: folder %s: %w", path, filepath.Dir(path), err)
	}
	f.Close()
	if err := os.Remove(tmp); err != nil {
		return fmt.Errorf("output %s: remove the probe %s: %w", path, tmp, err)
	}
	return nil
}

// Rename moves the finished temporary file tmp to path, unless path exists
// and is not a regular file (links followed): renaming over /dev/null or a
// named pipe would replace the special file itself. tmp is removed when the
// rename is refused or fails.
func Rename(tmp, path string) error {
	err := CheckOutput(path)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// CheckOutput refuses an output path that exists and is not a regular file
// (links followed): the writers rename over it, which would replace a
// device or a named pipe with a regular file. A path that cannot be
// examined (missing, or in a missing folder) passes: creating the file
// there reports what is wrong.
func CheckOutput(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return nil
	}
	if st.IsDir() {
		return fmt.Errorf("output %s is a directory; give a file name", path)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("output %s is %s, not a regular file; refusing to replace it", path, Kind(st.Mode()))
	}
	return nil
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
