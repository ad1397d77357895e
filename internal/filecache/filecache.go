// Package filecache keeps files that a test binary's tests share, made once
// each (a converted pack, say): the first test that asks for a key makes
// the file, later ones get its path. Only tests import it.
package filecache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// SharedPacksEnv names a directory where Pack keeps its packs across test
// binaries: the emulated arm runs (make test-arm64) take the packs a
// native run converted, as a device takes packs made on a host, instead
// of converting them again under emulation.
const SharedPacksEnv = "SIPACK_TEST_PACKS"

// Pack returns a pack of the model in dir converted with opt, converted
// once per distinct opt (once per directory with SharedPacksEnv set). ok
// is false, and nothing converted, when opt holds pointers (Order,
// Progress, Warnings): an address is no key, since a later test's may
// reuse a freed one.
func (c *Cache) Pack(t testing.TB, dir string, opt convert.Options) (path string, ok bool) {
	t.Helper()
	if opt.Order != nil || opt.Progress != nil || opt.Warnings != nil {
		return "", false
	}
	opt.ModelDir = dir
	key := fmt.Sprintf("%#v", opt)
	return c.Get(t, key, func(out string) {
		shared := ""
		if d := os.Getenv(SharedPacksEnv); d != "" {
			sum := sha256.Sum256([]byte(key))
			shared = filepath.Join(d, hex.EncodeToString(sum[:12])+c.Ext)
			if b, err := os.ReadFile(shared); err == nil {
				if err := os.WriteFile(out, b, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
		opt.Output = out
		if _, err := convert.Convert(context.Background(), opt); err != nil {
			t.Fatal(err)
		}
		if shared != "" {
			if err := copyFile(out, shared); err != nil {
				t.Fatal(err)
			}
		}
	}), true
}

// copyFile writes src's bytes to dst through a temporary file renamed into
// place, so that a reader never sees a partial pack.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}
