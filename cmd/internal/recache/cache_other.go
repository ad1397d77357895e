//go:build !linux

package main

import (
	"errors"
	"os"
)

// drop: this OS gives no way to drop one file's page cache here.
func drop(*os.File) error { return errors.New("not supported on this OS (Linux only)") }

func compact() {}
