package device

import (
	"encoding/binary"
	"fmt"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
)

// Buffer is a handle to memory a backend allocated or mapped. The zero
// Buffer is no buffer. A backend gives each buffer an id of its own (an
// index into its table, counted from 1) and the size it holds.
type Buffer struct {
	id   int32
	size int
}

// NewBuffer is how a backend makes a handle: id ≥ 1, its own index.
func NewBuffer(id int, size int) Buffer { return Buffer{id: int32(id), size: size} }

// ID is the backend's id of the buffer (0: none).
func (b Buffer) ID() int { return int(b.id) }

// Size is the bytes the buffer holds.
func (b Buffer) Size() int { return b.size }

// Valid reports whether b is a buffer.
func (b Buffer) Valid() bool { return b.id > 0 }

// Program is a handle to commands a backend bound (Bind). The zero Program
// is none.
type Program struct{ id int32 }

// NewProgram is how a backend makes a handle: id ≥ 1, its own index.
func NewProgram(id int) Program { return Program{id: int32(id)} }

// ID is the backend's id of the program (0: none).
func (p Program) ID() int { return int(p.id) }

// Span is the rows [Lo, Hi) of a command's output (Backend.OutputRows in
// runtime: a draft model's LM head over a shortlist of its vocabulary).
type Span struct{ Lo, Hi int32 }

// Command is one plan command resolved against its kernel and its buffers,
// every check made: what a backend binds.
type Command struct {
	Label    string
	Kernel   *kernels.Kernel
	Pipeline plans.Pipeline
	// Slots has one entry per binding slot of the kernel, by slot index;
	// an unbound slot (the parameter struct's, or a conditional binding
	// whose constant is off) has no Buf.
	Slots []Slot
	// Params is the parameter struct's bytes, exactly the kernel's size;
	// ParamSlot is the slot they are bound at.
	Params    []byte
	ParamSlot int
	// The launch, as the plan gives it.
	Grid, Threadgroup [3]uint32
	TGMem             uint32
	DispatchThreads   bool
	// Patches are the command's patches with binding targets turned into
	// kernel slot indices.
	Patches []Patch
}

// Slot is one bound buffer of a command: the buffer, the byte offset its
// binding starts at, and the plan buffer's kind.
type Slot struct {
	Buf    Buffer
	Offset uint64
	Kind   plans.BufferKind
}

// Patch is a plans.Patch resolved for a backend: it writes Base + Stride·x
// (x the kind's value at a step) into the parameter bytes at At (Width 4 or
// 8; PatchPositionKV writes a second value, the KV length, at At + Width),
// or, when Binding, into the offset of kernel slot At.
type Patch struct {
	Kind         plans.PatchKind
	Binding      bool
	At           uint32
	Width        uint8
	Base, Stride uint64
}

// Value is the (first) value p writes at step s.
func (p *Patch) Value(s plans.Step) uint64 { return p.Base + p.Stride*p.Kind.X(s) }

// Second is the second value of a PatchPositionKV patch (the KV length) at
// step s.
func (p *Patch) Second(s plans.Step) uint64 {
	return p.Base + p.Stride*plans.PatchKVLength.X(s)
}

// Two reports whether p writes two values.
func (p *Patch) Two() bool { return p.Kind == plans.PatchPositionKV }

func (c *Command) String() string { return fmt.Sprintf("%s (%s)", c.Label, c.Kernel.Name) }

// BoundsTail reports whether kernel k reads, after its parameter struct,
// the byte length of each of its buffers from the binding's offset
// (kernels/gpu/bounds.h): the kernels whose rows name a KV sequence slot
// or source rows that the host chose (gather_rows' rows, pool's ranges),
// which must leave alone one that lies past its buffer, as their CPU
// twins do. Neither MSL nor CUDA gives a kernel its buffers' lengths, so a
// GPU backend sends them: one uint64 per kernel slot (0 for an unbound
// one), after the struct.
func BoundsTail(k *kernels.Kernel) bool {
	switch k.Op {
	case kernels.OpRoPEQKVWrite, kernels.OpHeadNormRoPEKVWrite, kernels.OpAttentionPrefill:
		return k.Variant&kernels.Rows != 0
	case kernels.OpGatherRows, kernels.OpPool:
		return true
	}
	return false
}

// Patchable is a bound command as ApplyPatches writes into it: its
// parameter bytes and its bindings' offsets.
type Patchable interface {
	SetParam(at, width int, v uint64)
	SetOffset(slot int, off uint64)
}

// ApplyPatches writes step s's values into c: a parameter patch's value
// (and a PatchPositionKV's second) through SetParam, a binding patch's
// through SetOffset. One loop for every GPU backend.
func ApplyPatches(ps []Patch, s plans.Step, c Patchable) {
	for i := range ps {
		p := &ps[i]
		v := p.Value(s)
		if p.Binding {
			c.SetOffset(int(p.At), v)
			continue
		}
		c.SetParam(int(p.At), int(p.Width), v)
		if p.Two() {
			c.SetParam(int(p.At)+int(p.Width), int(p.Width), p.Second(s))
		}
	}
}

// PutParam writes v (width 4 or 8, little-endian) at byte at of params,
// a parameter struct of size bytes; a write outside the struct is
// ignored.
func PutParam(params []byte, size, at, width int, v uint64) {
	if at < 0 || at+width > size || size > len(params) {
		return
	}
	if width == 8 {
		binary.LittleEndian.PutUint64(params[at:], v)
	} else {
		binary.LittleEndian.PutUint32(params[at:], uint32(v))
	}
}
