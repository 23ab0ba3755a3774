package metal

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/device"
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

// slot is one buffer slot of a bound command, indexed by the kernel's
// slot ([[buffer(i)]]); buf 0 is an unbound slot (the parameter struct's,
// or a conditional binding whose constant is off).
type slot struct {
	buf  uintptr
	base uint64 // bufRef.base
	off  uint64 // the binding's offset, moved by binding patches
	size uint64 // the handle's bytes: what the bounds tail counts against
}

// Command is a resolved command bound to this backend: the pipeline state,
// the buffers by slot, its own copy of the parameter bytes (patched in
// place before each step, then copied into the command buffer by
// setBytes) and the launch sizes as MTLSize. Encoding it allocates
// nothing.
type Command struct {
	Label string
	pso   uintptr
	slots []slot
	// params are the inline bytes sent by setBytes at paramSlot: the
	// parameter struct (psize bytes), then, for a kernel that reads them,
	// its buffers' bound lengths (boundsTail).
	params    []byte
	psize     int
	bounds    bool
	paramSlot uint32
	tgMem     uint64 // rounded up to tgMemAlign
	// grid and tg are MTLSize values (three NSUIntegers); on arm64 a
	// 24-byte struct argument is passed by reference, so the encoder hands
	// Metal pointers to these.
	grid, tg [3]uint64
	threads  bool // dispatchThreads rather than dispatchThreadgroups
	patches  []device.Patch
	// label is the command's label as an NSString, made at Bind and
	// released at Unbind.
	label uintptr
}

// boundsTail is device.BoundsTail: the kernels that read their buffers'
// bound lengths after the parameter struct (kernels/gpu/bounds.h).
func boundsTail(k *kernels.Kernel) bool { return device.BoundsTail(k) }

// bindProgram binds commands that device.Resolve accepted, each with the
// pipeline pipeline returns for it. Resolve has made every generic check
// (catalog kernel, parameter size, bindings inside their buffers, patches
// within bounds, launch); what is left is Metal's own. Errors name the
// command's index and label.
func bindProgram(cmds []device.Command, pipeline func(plans.Pipeline) (*Pipeline, error), bufs *buffers) ([]*Command, error) {
	out := make([]*Command, len(cmds))
	for i := range cmds {
		dc := &cmds[i]
		pl, err := pipeline(dc.Pipeline)
		if err == nil {
			out[i], err = bindCommand(pl, dc, bufs)
		}
		if err != nil {
			return nil, fmt.Errorf("metal: [%d] %s: %w", i, dc.Label, err)
		}
	}
	return out, nil
}

// bindCommand prepares one resolved command to run with pipeline pl: the
// MTLBuffers behind its handles, its inline bytes, its MTLSizes. It
// refuses what Metal cannot take: a buffer slot past 30, more than 4 KiB of
// inline bytes, a threadgroup larger than the pipeline allows, and a
// buffer this backend did not make.
func bindCommand(pl *Pipeline, dc *device.Command, bufs *buffers) (*Command, error) {
	c := &Command{Label: dc.Label, pso: pl.pso, threads: dc.DispatchThreads, slots: make([]slot, len(dc.Slots)),
		psize: len(dc.Params), bounds: boundsTail(dc.Kernel)}
	for i, s := range dc.Slots {
		if !s.Buf.Valid() {
			continue
		}
		if i >= maxBufferSlots {
			return nil, fmt.Errorf("buffer slot %d (Metal has %d): %w", i, maxBufferSlots, ErrUnsupported)
		}
		e, ok := bufs.ref(s.Buf)
		if !ok {
			return nil, fmt.Errorf("slot %d: buffer %d was not made by this backend: %w", i, s.Buf.ID(), ErrUnsupported)
		}
		c.slots[i] = slot{buf: e.id, base: e.base, off: s.Offset, size: uint64(e.size)}
	}
	n := len(dc.Params)
	if c.bounds {
		n += 8 * len(c.slots)
	}
	if n > 0 {
		if n > maxInlineBytes {
			return nil, fmt.Errorf("%d inline parameter bytes (setBytes takes at most %d): %w", n, maxInlineBytes, ErrUnsupported)
		}
		if dc.ParamSlot < 0 || dc.ParamSlot >= maxBufferSlots {
			return nil, fmt.Errorf("parameter slot %d (Metal has %d): %w", dc.ParamSlot, maxBufferSlots, ErrUnsupported)
		}
		c.params = make([]byte, n)
		copy(c.params, dc.Params)
		c.paramSlot = uint32(dc.ParamSlot)
		if c.bounds {
			for i := range c.slots {
				c.setBound(i)
			}
		}
	}
	c.tgMem = (uint64(dc.TGMem) + tgMemAlign - 1) &^ (tgMemAlign - 1)
	for i := range 3 {
		c.grid[i], c.tg[i] = uint64(dc.Grid[i]), uint64(dc.Threadgroup[i])
	}
	if t := c.tg[0] * c.tg[1] * c.tg[2]; pl.MaxThreads > 0 && t > uint64(pl.MaxThreads) {
		return nil, fmt.Errorf("%d threads per threadgroup; pipeline %s allows %d: %w", t, pl.Key, pl.MaxThreads, ErrUnsupported)
	}
	c.patches = append([]device.Patch(nil), dc.Patches...)
	return c, nil
}

// setBound writes slot i's bound length (the bytes from its offset to its
// buffer's end; 0 unbound) into the bounds tail.
func (c *Command) setBound(i int) {
	sl := &c.slots[i]
	var n uint64
	if sl.buf != 0 && sl.off <= sl.size {
		n = sl.size - sl.off
	}
	binary.LittleEndian.PutUint64(c.params[c.psize+8*i:], n)
}

// SetParam writes v (width 4 or 8, little-endian) at byte at of the
// command's parameter struct; it reaches the GPU at the next Encode.
// Writes outside the struct (the bounds tail included) are ignored.
func (c *Command) SetParam(at, width int, v uint64) { device.PutParam(c.params, c.psize, at, width, v) }

// SetOffset moves binding slot's offset (and its bound length).
func (c *Command) SetOffset(slot int, off uint64) {
	c.slots[slot].off = off
	if c.bounds {
		c.setBound(slot)
	}
}

// Params is the command's parameter struct as the next Encode sends it.
func (c *Command) Params() []byte { return c.params[:c.psize] }

// patch writes step s's values into the parameter bytes and the binding
// offsets (device.Patch semantics). setBytes copies the parameters into
// the command buffer when the command is encoded, so one Go copy serves
// every step of a chain.
func (c *Command) patch(s plans.Step) { device.ApplyPatches(c.patches, s, c) }

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
		if sl := &c.slots[i]; sl.buf != 0 {
			e.setBuffer(sl.buf, sl.base+sl.off, uint32(i))
		}
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

// resolveCopy turns a copy between two buffers of this backend into the
// MTLBuffers and offsets of the blit (a no-copy wrap's page offset
// added). The ranges must lie inside the buffers; offsets and size must be
// multiples of 4 (Metal's rule for buffer copies on macOS); two ranges of
// one MTLBuffer must not overlap (copyFromBuffer's rule). Only the error
// path allocates.
func resolveCopy(bufs *buffers, dst device.Buffer, dstOff int, src device.Buffer, srcOff int, n int) (copyOp, error) {
	s, ok := bufs.ref(src)
	if !ok {
		return copyOp{}, fmt.Errorf("metal: copy source (buffer %d) was not made by this backend: %w", src.ID(), ErrUnsupported)
	}
	d, ok := bufs.ref(dst)
	if !ok {
		return copyOp{}, fmt.Errorf("metal: copy destination (buffer %d) was not made by this backend: %w", dst.ID(), ErrUnsupported)
	}
	op := copyOp{src: s.id, dst: d.id, srcOff: s.base + uint64(srcOff), dstOff: d.base + uint64(dstOff), size: uint64(n)}
	switch {
	case n <= 0 || dstOff < 0 || srcOff < 0 || dstOff > d.size-n || srcOff > s.size-n:
		return copyOp{}, fmt.Errorf("metal: copy of %d bytes from [%d:] of %d to [%d:] of %d: out of range", n, srcOff, s.size, dstOff, d.size)
	case n%4 != 0 || op.dstOff%4 != 0 || op.srcOff%4 != 0:
		return copyOp{}, fmt.Errorf("metal: copy of %d bytes from offset %d to %d: not multiples of 4: %w", n, op.srcOff, op.dstOff, ErrUnsupported)
	case op.src == op.dst && op.srcOff < op.dstOff+op.size && op.dstOff < op.srcOff+op.size:
		return copyOp{}, fmt.Errorf("metal: copy of %d bytes from offset %d to %d of one buffer: the ranges overlap", n, op.srcOff, op.dstOff)
	}
	return op, nil
}
