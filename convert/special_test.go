//go:build linux

package convert

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A checkpoint file that is a named pipe is refused at once, naming it:
// opening one used to block until a writer came.
func TestOpenModelRefusesNamedPipes(t *testing.T) {
	for _, name := range []string{"model.safetensors", "config.json", "tokenizer.json", "generation_config.json", "tokenizer_config.json"} {
		dir := t.TempDir()
		for _, f := range []string{"config.json", "tokenizer.json", "generation_config.json", "model.safetensors"} {
			if err := os.Symlink(filepath.Join(mustAbs(t, tinyDir), f), filepath.Join(dir, f)); err != nil {
				t.Fatal(err)
			}
		}
		fifo := filepath.Join(dir, name)
		os.Remove(fifo)
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			m, err := OpenModel(dir)
			if err == nil {
				m.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), fifo+" is a named pipe, not a regular file") {
				t.Errorf("%s a named pipe: %v", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s a named pipe: OpenModel blocks", name)
		}
	}
	fifo := filepath.Join(t.TempDir(), "chat.jinja")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := readChatTemplates(fifo, false); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo+" is a named pipe, not a regular file") {
			t.Errorf("--chat-template a named pipe: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("--chat-template a named pipe blocks")
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
