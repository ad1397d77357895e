//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || windows)

package format

import (
	"errors"
	"io"
	"os"
)

// mapFile reads [0, length) of f into memory: an OS without a mapping this
// package knows still runs packs, at the cost of loading the prefix up front.
func mapFile(f *os.File, length int, _ bool) ([]byte, error) {
	b := make([]byte, length)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, int64(length)), b); err != nil {
		return nil, err
	}
	return b, nil
}

func unmap([]byte) error { return nil }

// allocAnon is Go heap memory: the collector frees it once the pack drops it.
func allocAnon(length int) ([]byte, error) { return make([]byte, length), nil }

func freeAnon([]byte) error { return nil }

func lockMemory([]byte) error { return errors.New("locking memory is not supported on this OS") }
