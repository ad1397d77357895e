//go:build !linux

package format

import (
	"fmt"
	"os"
	"path/filepath"
)

// fileIdentity is the absolute path, size and modification time in
// nanoseconds: a rewrite of the file changes the time.
func fileIdentity(f *os.File, st os.FileInfo) string {
	abs, err := filepath.Abs(f.Name())
	if err != nil {
		return ""
	}
	return fmt.Sprintf("path %q size %d mtime %d", abs, st.Size(), st.ModTime().UnixNano())
}
