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
