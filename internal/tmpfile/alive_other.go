//go:build !unix

package tmpfile

import "os"

// alive reports whether a process with this id runs: on Windows FindProcess
// opens the process and fails when there is none.
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
