package metal

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
)

// Metal's limits that a command must respect (Metal feature set tables):
// buffer argument indices 0..30, setBytes up to 4 KiB, threadgroup memory
// lengths in multiples of 16 bytes.
const (
	maxBufferSlots = 31
	maxInlineBytes = 4096
	tgMemAlign     = 16
)

// Pipeline is a compiled compute pipeline (an MTLComputePipelineState)
// and what it was made from.
type Pipeline struct {
	Key    string
	Kernel string
	// MaxThreads is the pipeline's maxTotalThreadsPerThreadgroup (0 when
	// unknown); Bind refuses a threadgroup larger than it.
	MaxThreads int
	pso        uintptr
}

// bufRef is a device buffer as a binding sees it: the MTLBuffer and the
// byte offset of the Go slice's first byte inside it (non-zero for a
// no-copy wrap whose start was rounded down to a page).
type bufRef struct {
	id   uintptr
	base uint64
}

// slot is one buffer binding of a bound command.
type slot struct {
	index uint32 // [[buffer(index)]]
	buf   uintptr
	base  uint64 // bufRef.base
	off   uint64 // the plan's offset, moved by binding patches
}

// Command is a plan command bound to this backend: the pipeline state,
// the buffers by slot, its own copy of the parameter bytes (patched in
// place before each step, then copied into the command buffer by
// setBytes) and the launch sizes as MTLSize. Encoding it allocates
// nothing.
type Command struct {
	Label string
	pso   uintptr
	slots []slot
	// params are the inline parameter bytes (setBytes at paramSlot).
	params    []byte
	paramSlot uint32
	tgMem     uint64 // rounded up to tgMemAlign
	// grid and tg are MTLSize values (three NSUIntegers); on arm64 a
	// 24-byte struct argument is passed by reference, so the encoder hands
	// Metal pointers to these.
	grid, tg [3]uint64
	threads  bool // dispatchThreads rather than dispatchThreadgroups
	patches  []plans.Patch
	// label is the command's label as an NSString, made at Bind.
	label uintptr
}

// bindCommand prepares cmd to run with pipeline p; lookup finds the device
// buffer behind a plan buffer's bytes.
func bindCommand(p *Pipeline, cmd *plans.Command, bufs [][]byte, lookup func([]byte) (bufRef, bool)) (*Command, error) {
	k, ok := kernels.Lookup(p.Kernel)
	if !ok {
		return nil, fmt.Errorf("metal: %s: kernel %q: %w", cmd.Label, p.Kernel, kernels.ErrNoKernel)
	}
	c := &Command{Label: cmd.Label, pso: p.pso, threads: cmd.DispatchThreads}
	for _, bd := range cmd.Bindings {
		switch {
		case bd.Slot >= maxBufferSlots:
			return nil, fmt.Errorf("metal: %s: buffer slot %d (Metal has %d): %w", cmd.Label, bd.Slot, maxBufferSlots, ErrUnsupported)
		case int(bd.Buffer) >= len(bufs):
			return nil, fmt.Errorf("metal: %s: slot %d: buffer %d of %d: %w", cmd.Label, bd.Slot, bd.Buffer, len(bufs), plans.ErrInvalid)
		case bd.Offset > uint64(len(bufs[bd.Buffer])):
			return nil, fmt.Errorf("metal: %s: slot %d: offset %d past the buffer's %d bytes: %w", cmd.Label, bd.Slot, bd.Offset, len(bufs[bd.Buffer]), plans.ErrInvalid)
		}
		ref, ok := lookup(bufs[bd.Buffer])
		if !ok {
			return nil, fmt.Errorf("metal: %s: slot %d: buffer %d was not allocated or wrapped by this backend: %w", cmd.Label, bd.Slot, bd.Buffer, ErrUnsupported)
		}
		c.slots = append(c.slots, slot{index: bd.Slot, buf: ref.id, base: ref.base, off: bd.Offset})
	}
	if len(cmd.Params) > 0 {
		if len(cmd.Params) > maxInlineBytes {
			return nil, fmt.Errorf("metal: %s: %d parameter bytes (setBytes takes at most %d): %w", cmd.Label, len(cmd.Params), maxInlineBytes, ErrUnsupported)
		}
		if k.Params != nil && len(cmd.Params) != k.Params.Size {
			return nil, fmt.Errorf("metal: %s: %s takes %d parameter bytes, the command has %d: %w", cmd.Label, k.Name, k.Params.Size, len(cmd.Params), plans.ErrInvalid)
		}
		if cmd.ParamsSlot >= maxBufferSlots {
			return nil, fmt.Errorf("metal: %s: parameter slot %d: %w", cmd.Label, cmd.ParamsSlot, ErrUnsupported)
		}
		c.params = append([]byte(nil), cmd.Params...)
		c.paramSlot = cmd.ParamsSlot
	}
	c.tgMem = (uint64(cmd.ThreadgroupMemory) + tgMemAlign - 1) &^ (tgMemAlign - 1)
	for i := range 3 {
		c.grid[i], c.tg[i] = uint64(cmd.Grid[i]), uint64(cmd.Threadgroup[i])
		if c.grid[i] == 0 || c.tg[i] == 0 {
			return nil, fmt.Errorf("metal: %s: empty launch: grid %v, threadgroup %v: %w", cmd.Label, cmd.Grid, cmd.Threadgroup, plans.ErrInvalid)
		}
	}
	if n := c.tg[0] * c.tg[1] * c.tg[2]; p.MaxThreads > 0 && n > uint64(p.MaxThreads) {
		return nil, fmt.Errorf("metal: %s: %d threads per threadgroup; pipeline %s allows %d: %w", cmd.Label, n, p.Key, p.MaxThreads, ErrUnsupported)
	}
	for _, pt := range cmd.Patches {
		switch pt.Target {
		case plans.PatchParam:
			n := int(pt.Width)
			if pt.Kind == plans.PatchPositionKV {
				n *= 2
			}
			if pt.Width != 4 && pt.Width != 8 || int(pt.At)+n > len(c.params) {
				return nil, fmt.Errorf("metal: %s: patch %v of %d bytes at %d outside the %d parameter bytes: %w", cmd.Label, pt.Kind, pt.Width, pt.At, len(c.params), plans.ErrInvalid)
			}
		case plans.PatchBinding:
			if int(pt.At) >= len(c.slots) {
				return nil, fmt.Errorf("metal: %s: patch %v of binding %d: the command has %d: %w", cmd.Label, pt.Kind, pt.At, len(c.slots), plans.ErrInvalid)
			}
		default:
			return nil, fmt.Errorf("metal: %s: patch target %v: %w", cmd.Label, pt.Target, ErrUnsupported)
		}
	}
	c.patches = append([]plans.Patch(nil), cmd.Patches...)
	return c, nil
}

// SetParam writes v (width 4 or 8, little-endian) at byte at of the
// command's parameter bytes; it reaches the GPU at the next Encode.
// Out-of-range writes are ignored.
func (c *Command) SetParam(at, width int, v uint64) {
	if at < 0 || at+width > len(c.params) {
		return
	}
	if width == 8 {
		binary.LittleEndian.PutUint64(c.params[at:], v)
	} else {
		binary.LittleEndian.PutUint32(c.params[at:], uint32(v))
	}
}

// Params is the command's parameter bytes as the next Encode sends them.
func (c *Command) Params() []byte { return c.params }

// patch writes step s's values into the parameter bytes and the binding
// offsets (plans.Patch semantics). setBytes copies the parameters into
// the command buffer when the command is encoded, so one Go copy serves
// every step of a chain.
func (c *Command) patch(s plans.Step) {
	for i := range c.patches {
		p := &c.patches[i]
		v := p.Base + p.Stride*p.Kind.X(s)
		if p.Target == plans.PatchBinding {
			c.slots[p.At].off = v
			continue
		}
		c.SetParam(int(p.At), int(p.Width), v)
		if p.Kind == plans.PatchPositionKV {
			c.SetParam(int(p.At)+int(p.Width), int(p.Width), p.Base+p.Stride*plans.PatchKVLength.X(s))
		}
	}
}

// calls are the compute-encoder messages a command sends. The darwin
// encoder sends them through objc_msgSend; tests record them.
type calls interface {
	pushDebugGroup(label uintptr)
	popDebugGroup()
	setPipeline(pso uintptr)
	setBuffer(buf uintptr, offset uint64, index uint32)
	setBytes(p unsafe.Pointer, n int, index uint32)
	setThreadgroupMemory(n uint64, index uint32)
	dispatch(grid, tg *[3]uint64, threads bool)
}

// encode records the command for step s: patches first, then the
// messages of one dispatch, inside a debug group named by its label (the
// name a failed command buffer reports).
func (c *Command) encode(e calls, s plans.Step) {
	c.patch(s)
	if c.label != 0 {
		e.pushDebugGroup(c.label)
	}
	e.setPipeline(c.pso)
	for i := range c.slots {
		sl := &c.slots[i]
		e.setBuffer(sl.buf, sl.base+sl.off, sl.index)
	}
	if len(c.params) > 0 {
		e.setBytes(unsafe.Pointer(&c.params[0]), len(c.params), c.paramSlot)
	}
	if c.tgMem > 0 {
		e.setThreadgroupMemory(c.tgMem, 0)
	}
	e.dispatch(&c.grid, &c.tg, c.threads)
	if c.label != 0 {
		e.popDebugGroup()
	}
}

// copyOp is one buffer-to-buffer copy as
// copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size: takes it.
type copyOp struct {
	src, dst       uintptr
	srcOff, dstOff uint64
	size           uint64
}

// blitCalls are the blit-encoder messages a copy sends; the darwin
// encoder sends them through objc_msgSend, tests record them.
type blitCalls interface {
	copyBuffer(op *copyOp)
}

// resolveCopy turns a copy between two slices this backend made into the
// MTLBuffers and offsets of the blit. Offsets and size must be multiples
// of 4 (Metal's rule for buffer copies on macOS), and two ranges of one
// buffer must not overlap (copyFromBuffer's rule). Only the error path
// allocates.
func resolveCopy(dst []byte, dstOff int, src []byte, srcOff int, n int, lookup func([]byte) (bufRef, bool)) (copyOp, error) {
	switch {
	case n <= 0 || dstOff < 0 || srcOff < 0 || dstOff > len(dst)-n || srcOff > len(src)-n:
		return copyOp{}, fmt.Errorf("metal: copy of %d bytes from [%d:] of %d to [%d:] of %d: out of range", n, srcOff, len(src), dstOff, len(dst))
	case n%4 != 0 || dstOff%4 != 0 || srcOff%4 != 0:
		return copyOp{}, fmt.Errorf("metal: copy of %d bytes from offset %d to %d: not multiples of 4: %w", n, srcOff, dstOff, ErrUnsupported)
	}
	s, ok := lookup(src[srcOff : srcOff+n])
	if !ok {
		return copyOp{}, fmt.Errorf("metal: copy source was not allocated by this backend: %w", ErrUnsupported)
	}
	d, ok := lookup(dst[dstOff : dstOff+n])
	if !ok {
		return copyOp{}, fmt.Errorf("metal: copy destination was not allocated by this backend: %w", ErrUnsupported)
	}
	if s.id == d.id && s.base < d.base+uint64(n) && d.base < s.base+uint64(n) {
		return copyOp{}, fmt.Errorf("metal: copy of %d bytes from offset %d to %d of one buffer: the ranges overlap", n, s.base, d.base)
	}
	return copyOp{src: s.id, dst: d.id, srcOff: s.base, dstOff: d.base, size: uint64(n)}, nil
}
