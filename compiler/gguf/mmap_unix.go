//go:build linux || darwin

package gguf

import (
	"math"
	"os"
	"syscall"
)

// mapFile maps size bytes of fd read-only and shared.
func mapFile(fd *os.File, size int64) ([]byte, func([]byte) error, error) {
	if size == 0 {
		return nil, func([]byte) error { return nil }, nil // mmap refuses length 0
	}
	if size > math.MaxInt {
		return nil, nil, syscall.EFBIG
	}
	data, err := syscall.Mmap(int(fd.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, syscall.Munmap, nil
}

// fileSize is the size of the open file, by fstat into a stack buffer: no
// allocation, so a runtime may ask before every replay.
func fileSize(fd *os.File) (int64, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(fd.Fd()), &st); err != nil {
		return 0, err
	}
	return st.Size, nil
}
