package cuda

import (
	"errors"
	"fmt"
)

// ErrUnavailable is wrapped by New's error where no CUDA driver loads, or
// it finds no GPU: the caller falls back to another backend.
var ErrUnavailable = errors.New("cuda: no CUDA driver or GPU")

// ErrUnsupported is wrapped by errors for what the plan asks and this
// backend cannot do (a kernel with no CUDA entry, a CPU-only weight
// layout, Metal's dispatchThreads).
var ErrUnsupported = errors.New("cuda: unsupported")

// Error is a failed driver or NVRTC call: the call and the result's name.
type Error struct {
	Call string
	Code int
	Name string
}

func (e *Error) Error() string {
	if e.Name != "" {
		return fmt.Sprintf("cuda: %s: %s (%d)", e.Call, e.Name, e.Code)
	}
	return fmt.Sprintf("cuda: %s: error %d", e.Call, e.Code)
}
