//go:build linux || darwin

package gguf

import "syscall"

// diskUsage is the bytes of disk a file's blocks take (holes take none).
func diskUsage(path string) (int64, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, false
	}
	return int64(st.Blocks) * 512, true
}
