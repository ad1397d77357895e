//go:build unix

package tmpfile

import (
	"errors"
	"syscall"
)

// alive reports whether a process with this id runs (signal 0 probes it;
// EPERM means it exists but belongs to another user).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
