// Package tty tells whether output goes to a terminal, where the demo and
// `boincd status --watch` redraw in place instead of printing line after
// line.
package tty

import (
	"io"
	"os"
)

// Is reports whether w is a terminal (a character device).
func Is(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
