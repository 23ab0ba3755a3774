package runtime

import (
	"fmt"

	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/cuda"
)

// The CUDA backend is a Backend as it is: no adapter, no downcast.
var _ Backend = (*cuda.Backend)(nil)

// It replays a few sequences' rows as decode steps (cuda.Options.DecodeRows).
var _ decodeRows = (*cuda.Backend)(nil)

// NewCUDA is the CUDA backend (runtime/cuda) on GPU o.Device; the error
// wraps cuda.ErrUnavailable where no driver or GPU is found.
func NewCUDA(o cuda.Options) (Backend, error) {
	b, err := cuda.New(o)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// BackendFor is the backend that runs a plan compiled for t best on this
// machine, and a line that says which and why: CUDA for an NVIDIA plan,
// Metal for an Apple plan on a Mac, the CPU for a CPU plan. Where a GPU
// plan's backend does not load, the CPU replays it (its kernels have CPU
// twins) and the line says so: a plan is never replayed elsewhere silently.
func BackendFor(t plans.Target, threads int) (Backend, string) {
	switch t.Vendor {
	case "nvidia":
		b, err := cuda.New(cuda.Options{})
		if err != nil {
			return NewCPU(threads), fmt.Sprintf("cpu: the plan is for %s but CUDA does not load (%v); replaying it on the CPU, slowly (compile for this machine's CPU for speed)", t.Chip, err)
		}
		d := b.Device()
		return b, fmt.Sprintf("cuda (%s, sm_%d%d)", d.Name, d.Major, d.Minor)
	case "apple":
		b, why := DefaultBackend(threads)
		if b.Name() == "cpu" {
			why = fmt.Sprintf("cpu: the plan is for %s but Metal does not load (%s); replaying it on the CPU, slowly", t.Chip, why)
		}
		return b, why
	}
	return NewCPU(threads), "cpu"
}
