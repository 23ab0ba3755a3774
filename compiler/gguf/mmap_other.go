//go:build !linux && !darwin

package gguf

import (
	"io"
	"os"
)

// mapFile reads the file into memory where we have no mmap wrapper: correct,
// but neither lazy nor shared.
func mapFile(fd *os.File, size int64) ([]byte, func([]byte) error, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(fd, data); err != nil {
		return nil, nil, err
	}
	return data, func([]byte) error { return nil }, nil
}

// fileSize is the size of the open file. The file was read into memory, so
// a later truncation cannot fault; it is still reported, as on Unix.
func fileSize(fd *os.File) (int64, error) {
	st, err := fd.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
