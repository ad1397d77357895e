// Package filecache keeps files that a test binary's tests share, made once
// each (a converted pack, say): the first test that asks for a key makes
// the file, later ones get its path. Only tests import it.
package filecache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sipack/sipack/convert"
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

// Pack returns a pack of the model in dir converted with opt, converted
// once per distinct opt. ok is false, and nothing converted, when opt holds
// pointers (Order, Progress, Warnings): an address is no key, since a
// later test's may reuse a freed one.
func (c *Cache) Pack(t testing.TB, dir string, opt convert.Options) (path string, ok bool) {
	t.Helper()
	if opt.Order != nil || opt.Progress != nil || opt.Warnings != nil {
		return "", false
	}
	opt.ModelDir = dir
	return c.Get(t, fmt.Sprintf("%#v", opt), func(out string) {
		opt.Output = out
		if _, err := convert.Convert(context.Background(), opt); err != nil {
			t.Fatal(err)
		}
	}), true
}
