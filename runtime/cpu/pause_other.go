//go:build !amd64 || purego

package cpu

// pause is a no-op where there is no spin-wait hint in assembly here.
func pause() {}
