package runtime

import (
	"fmt"

	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/cpu"
)

// Backend is what the replay loop needs of a device, and no more: memory,
// pipelines created once by kernel name and constants, commands bound once,
// and a command range encoded for N steps with each step's patches, then
// committed and waited for.
//
// Buffers are host-visible byte slices: the CPU's own memory, or on Apple
// GPUs shared storage (unified memory). The loop writes token ids into the
// io "tokens" buffer and reads io "logits" between submissions, never
// during one.
type Backend interface {
	// Name is the backend's name ("cpu").
	Name() string
	// Alloc returns size zeroed bytes the device reads and writes.
	Alloc(size int) ([]byte, error)
	// Wrap makes host bytes (the mapped model file, a derived weight)
	// readable by the device, without a copy where it can.
	Wrap(data []byte) ([]byte, error)
	// Pipeline creates the pipeline of p (a kernel and its constants).
	Pipeline(p plans.Pipeline) (Pipeline, error)
	// Bind prepares cmd to run with pipeline p over bufs (the plan's
	// buffers by index).
	Bind(p Pipeline, cmd *plans.Command, bufs [][]byte) (Command, error)
	// SetParam writes v (width 4 or 8, little-endian) at byte at of a bound
	// command's parameters: the sampling knobs a generation rewrites.
	SetParam(c Command, at, width int, v uint64)
	// Encode records cmds once per step, in order, each step's patches
	// written before its commands. It must not allocate.
	Encode(cmds []Command, steps []plans.Step)
	// EncodeCopy records a device-side copy of n bytes from src[srcOff:]
	// to dst[dstOff:] (both from Alloc), ordered after what was encoded
	// before it and before what is encoded after it: the chain hand-off
	// (readback of a chain's tokens, its last token into slot 0) without
	// the host. n and the offsets are multiples of 4; ranges of one buffer
	// must not overlap. It must not allocate.
	EncodeCopy(dst []byte, dstOff int, src []byte, srcOff int, n int)
	// Commit submits what was encoded. Wait blocks until every submission
	// has run; WaitOldest until the oldest one not yet waited for has,
	// while the newer keep running (one chain in flight while the host
	// reads the last). Both return the first failure.
	Commit()
	Wait() error
	WaitOldest() error
	Close()
}

// Pipeline and Command are a backend's handles, opaque to the loop.
type (
	Pipeline any
	Command  any
)

// NewCPU is the CPU backend (runtime/cpu) behind the Backend interface;
// threads 0 means every core.
func NewCPU(threads int) Backend { return &cpuBackend{b: cpu.New(cpu.Options{Threads: threads})} }

// cpuBackend adapts runtime/cpu: it runs each command as it is encoded, so
// Commit and Wait have nothing left to do.
type cpuBackend struct{ b *cpu.Backend }

func (c *cpuBackend) Name() string                                { return "cpu" }
func (c *cpuBackend) Threads() int                                { return c.b.Threads() }
func (c *cpuBackend) Alloc(size int) ([]byte, error)              { return cpu.Alloc(size), nil }
func (c *cpuBackend) Wrap(data []byte) ([]byte, error)            { return data, nil }
func (c *cpuBackend) Pipeline(p plans.Pipeline) (Pipeline, error) { return &p, nil }

func (c *cpuBackend) Bind(p Pipeline, cmd *plans.Command, bufs [][]byte) (Command, error) {
	pl, ok := p.(*plans.Pipeline)
	if !ok {
		return nil, fmt.Errorf("cpu: %s: pipeline %T is not the CPU backend's", cmd.Label, p)
	}
	return c.b.Bind(*pl, cmd, bufs)
}

func (c *cpuBackend) SetParam(cmd Command, at, width int, v uint64) {
	cmd.(*cpu.Exec).SetParam(at, width, v)
}

func (c *cpuBackend) Encode(cmds []Command, steps []plans.Step) {
	for _, s := range steps {
		for _, cmd := range cmds {
			e := cmd.(*cpu.Exec)
			e.Patch(s)
			e.Run()
		}
	}
}

// EncodeCopy copies now: every command encoded before it has already run.
func (c *cpuBackend) EncodeCopy(dst []byte, dstOff int, src []byte, srcOff int, n int) {
	copy(dst[dstOff:dstOff+n], src[srcOff:srcOff+n])
}

func (c *cpuBackend) Commit()           {}
func (c *cpuBackend) Wait() error       { return nil }
func (c *cpuBackend) WaitOldest() error { return nil }
func (c *cpuBackend) Close()            { c.b.Close() }
