package format

import (
	"fmt"
	"os"
	"syscall"
)

// fileIdentity is device, inode, size and the modification and change
// times in nanoseconds: any write to the file or rename over it changes one.
func fileIdentity(f *os.File, st os.FileInfo) string {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("dev %d ino %d size %d mtime %d ctime %d", s.Dev, s.Ino, s.Size, syscall.TimespecToNsec(s.Mtim), syscall.TimespecToNsec(s.Ctim))
}
