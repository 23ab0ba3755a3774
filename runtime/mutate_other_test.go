//go:build !linux

package runtime

// limitMemory relies on debug.SetMemoryLimit alone off Linux.
func limitMemory() {}
