package runtime

import "syscall"

// limitMemory caps the child's address space at 8 GiB, so that an
// allocation sized from a damaged plan fails fast instead of driving the
// machine into swap.
func limitMemory() {
	lim := syscall.Rlimit{Cur: 8 << 30, Max: 8 << 30}
	_ = syscall.Setrlimit(syscall.RLIMIT_AS, &lim)
}
