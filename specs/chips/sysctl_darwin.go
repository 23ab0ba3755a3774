package chips

import "golang.org/x/sys/unix"

// sysctl reads a string sysctl (machdep.cpu.brand_string) without cgo.
func sysctl(name string) (string, error) { return unix.Sysctl(name) }
