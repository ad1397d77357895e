// Package filecache keeps files that a test binary's tests share, made once
// each (a converted pack, say): the first test that asks for a key makes
// the file, later ones get its path. Only tests import it.
package filecache

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Cache is a directory of files by key; the zero value is ready to use.
type Cache struct {
	Ext   string // the files' names end so (".sip")
	mu    sync.Mutex
	dir   string
	paths map[string]string
}

// Get returns the file made for key, calling make with a path to write it
// to the first time. A test that changes the file must make its own.
func (c *Cache) Get(t testing.TB, key string, make func(out string)) string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if path, ok := c.paths[key]; ok {
		return path
	}
	if c.dir == "" {
		d, err := os.MkdirTemp("", "filecache-")
		if err != nil {
			t.Fatal(err)
		}
		c.dir, c.paths = d, map[string]string{}
	}
	path := filepath.Join(c.dir, fmt.Sprint(len(c.paths))+c.Ext)
	make(path)
	if !t.Failed() {
		c.paths[key] = path
	}
	return path
}

// Remove deletes the files (TestMain, after the tests).
func (c *Cache) Remove() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir != "" {
		os.RemoveAll(c.dir)
	}
	c.dir, c.paths = "", nil
}
