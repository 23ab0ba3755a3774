//go:build !darwin

package runtime

import "github.com/akunu-dev/akunu/runtime/metal"

// NewMetal fails here: Metal exists only on macOS (metal.ErrUnavailable).
func NewMetal(metal.Options) (Backend, error) { return nil, metal.ErrUnavailable }

// DefaultBackend is the CPU backend with threads (0: every core) on
// systems without Metal; the string says why.
func DefaultBackend(threads int) (Backend, string) {
	return NewCPU(threads), "cpu (no Metal on this system)"
}
