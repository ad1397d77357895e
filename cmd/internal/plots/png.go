package plots

import (
	"fmt"
	"io"
	"os"

	"gonum.org/v1/plot/vg/vgimg"

	"github.com/sipack/sipack/internal/tmpfile"
)

// savePNG writes the canvas as PNG through a temporary file.
func savePNG(path string, img *vgimg.Canvas) error {
	return writeTo(path, vgimg.PngCanvas{Canvas: img})
}

// writeTo writes w's output through a temporary file (tmpfile.Name),
// renamed into place when complete; a path that exists and is not a
// regular file (/dev/null, a named pipe) is refused, never renamed over.
func writeTo(path string, w interface {
	WriteTo(io.Writer) (int64, error)
}) error {
	if err := tmpfile.CheckOutput(path); err != nil {
		return err
	}
	tmp := tmpfile.Name(path)
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return tmpfile.Rename(tmp, path)
}
