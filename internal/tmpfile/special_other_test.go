//go:build !linux

package tmpfile

import (
	"testing"
	"time"
)

type special struct{ path, kind string }

func (special) check(*testing.T) {}

func specialFiles(t *testing.T, dir string) []special {
	t.Skip("named pipes and device nodes are made on Linux only")
	return nil
}

func timeout() <-chan time.Time { return time.After(10 * time.Second) }
