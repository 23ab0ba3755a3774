//go:build darwin

package runtime

import (
	"fmt"

	"github.com/akunu-dev/akunu/runtime/metal"
)

// The Metal backend is a Backend as it is: no adapter, no downcast.
var _ Backend = (*metal.Backend)(nil)

// NewMetal is the Metal backend (runtime/metal) on the system's default
// GPU.
func NewMetal(o metal.Options) (Backend, error) {
	b, err := metal.New(o)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// DefaultBackend is Metal when this Mac has a Metal device, else the CPU
// backend with threads (0: every core); the string says why.
func DefaultBackend(threads int) (Backend, string) {
	b, err := metal.New(metal.Options{})
	if err != nil {
		return NewCPU(threads), fmt.Sprintf("cpu (%v)", err)
	}
	return b, "metal (" + b.Device().Name + ")"
}
