package cli

import (
	"io"
	"os"
)

// IsTerminal reports whether w is a terminal (a character device): where
// progress may rewrite a line with \r. Into a file or a pipe, commands
// write whole lines instead, or nothing.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
