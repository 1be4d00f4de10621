// Package tty tells the example programs whether a writer is a terminal
// they may redraw and colour.
package tty

import (
	"io"
	"os"

	"golang.org/x/term"
)

// Is reports whether w is an interactive terminal: an *os.File whose
// descriptor is a terminal (not merely a character device such as
// /dev/null), with TERM not "dumb".
func Is(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}
