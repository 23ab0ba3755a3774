package runtime

import (
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/cpu"
	"github.com/akunu-dev/akunu/runtime/device"
)

// Backend is what the engine needs of a device, and no more. The backend
// owns its memory and its bound programs; the engine holds handles
// (runtime/device) and moves bytes only through Write and Read, so a GPU's
// memory never has to look like a Go slice. One backend serves several
// models; its methods are not safe for concurrent use (the engine submits
// one program at a time).
type Backend interface {
	// Name is the backend's name ("cpu", "metal").
	Name() string
	// Alloc returns size zeroed bytes the device reads and writes.
	Alloc(size int) (device.Buffer, error)
	// Map makes a weight (bytes of the mapped model file) readable by the
	// device: wrapped without a copy where the memory allows, uploaded
	// otherwise. The bytes outlive the buffer.
	Map(data []byte) (device.Buffer, error)
	// Derive builds a derived weight of size bytes from srcs by recipe
	// (concat_rows; a backend's own repack:<layout>), on the device.
	// rowElems is the elements in one row of the weight (the plan
	// buffer's Shape[0]), 0 when the plan does not say: a repack needs
	// it to find where the sources' rows start.
	Derive(recipe string, srcs []device.Buffer, size, rowElems int) (device.Buffer, error)
	// Free releases a buffer; Unbind releases a program. A model frees
	// what it made when it closes, so a shared backend outlives it.
	Free(device.Buffer)
	Unbind(device.Program)
	// Write copies host bytes into a buffer at byte off; Read copies a
	// buffer's bytes from off into dst. Both happen at once, so the
	// caller calls them only while no submission that uses the buffer is
	// in flight. They must not allocate.
	Write(dst device.Buffer, off int, src []byte) error
	Read(dst []byte, src device.Buffer, off int) error
	// Bind prepares commands that device.Resolve accepted as one program.
	Bind(cmds []device.Command) (device.Program, error)
	// SetParam writes v (width 4 or 8, little-endian) at byte at of
	// command cmd of program p: the sampling knobs a generation rewrites.
	SetParam(p device.Program, cmd, at, width int, v uint64)
	// Encode records program p once per step, in order, each step's
	// patches written before its commands. A command whose writes only
	// the host reads (device.HostOnly) may be left out of every step but
	// the last. It must not allocate.
	Encode(p device.Program, steps []plans.Step)
	// Copy records a device-side copy of n bytes from src at srcOff to dst
	// at dstOff, ordered after what was encoded before it and before what
	// is encoded after it: the chain hand-off (a chain's tokens to a
	// readback buffer, its last token into slot 0) without the host. n
	// and the offsets are multiples of 4; ranges of one buffer must not
	// overlap. It must not allocate.
	Copy(dst device.Buffer, dstOff int, src device.Buffer, srcOff int, n int)
	// Commit submits what was encoded. Wait blocks until every submission
	// has run; WaitOldest until the oldest one not yet waited for has,
	// while the newer keep running (one chain in flight while the host
	// reads the last). Both return the first failure.
	Commit()
	Wait() error
	WaitOldest() error
	Close()
}

// decodeRows is a Backend whose decode program can outrun a plan's batch
// programs for the rows of a few sequences: on a GPU the batch programs'
// GEMMs of 2 to 8 rows over a weight's file layout run at a fraction of
// the decode GEMVs' rate. A Forward of at most DecodeRows(plan) rows,
// each its own sequence's and each with its output (batched decode in a
// server), replays them as that many decode steps, one a row. A backend
// without it replays only a lone row so (the CPU, whose batch programs
// read the weights once for every row and give the decode program's bits;
// ADR 0032).
type decodeRows interface {
	DecodeRows(p *plans.Plan) int
}

// splitRows is a Backend whose batch programs of up to SplitRows(plan)
// rows run at several times a row's rate of the larger ones (on NVIDIA the
// planar small GEMMs of 2 to 8 rows against the tiled GEMM of 16 and up,
// whose replay costs about the same whatever its rows). A replay of r
// rows, s < r ≤ 2s for s = SplitRows, runs as s rows and then r − s; more
// rows are one replay (a split into three or more was not measured
// against the tiled one). 0 splits nothing (the CPU, whose cost grows
// with the rows).
type splitRows interface {
	SplitRows(p *plans.Plan) int
}

// The CPU backend is a Backend as it is: no adapter, no downcast.
var _ Backend = (*cpu.Backend)(nil)

// NewCPU is the CPU backend (runtime/cpu); threads 0 means every core.
func NewCPU(threads int) Backend { return cpu.New(cpu.Options{Threads: threads}) }
