package cpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
)

// ErrUnsupported is wrapped by Bind for a kernel this backend does not
// implement or a command it cannot run (a parameter struct of the wrong
// size, a missing binding).
var ErrUnsupported = errors.New("cpu: unsupported")

// Options configure a Backend.
type Options struct {
	// Threads is the number of goroutines that share a command's work: the
	// caller's plus Threads-1 workers. 0 means runtime.NumCPU().
	Threads int
}

// Backend runs bound commands on the CPU. Commands run one at a time (Run
// is not safe for concurrent use); each one may use all the threads.
type Backend struct {
	pool    *pool
	scratch scratch
}

// New starts a backend and its workers; Close stops them.
func New(o Options) *Backend {
	if o.Threads <= 0 {
		o.Threads = runtime.NumCPU()
	}
	b := &Backend{pool: newPool(o.Threads)}
	b.scratch.workers = make([]workerScratch, o.Threads)
	return b
}

// Threads is the number of goroutines a command may use.
func (b *Backend) Threads() int { return b.pool.threads }

// Close stops the workers. Bound commands must not run afterwards.
func (b *Backend) Close() { b.pool.close() }

// Alloc returns size zeroed bytes aligned to 64 (a cache line, and the
// widest vector load): the backend's scratch, KV and I/O buffers. Weight
// buffers are the mmapped file's bytes, used as they are (the GGUF data
// section is 32-byte aligned, so every tensor's elements are naturally
// aligned too).
func Alloc(size int) []byte {
	const align = 64
	raw := make([]byte, size+align)
	off := int((align - uintptr(unsafe.Pointer(unsafe.SliceData(raw)))%align) % align)
	return raw[off : off+size : off+size]
}

// scratch is memory the kernels use between their inputs and outputs,
// sized at bind time to the largest command so that runs never allocate.
// shared serves the calling goroutine before a split (the quantized
// activations); workers[w] is private to worker w.
type scratch struct {
	q8      q8act     // activations quantized to 8 bits (quantized GEMV/GEMM)
	f       []float32 // activations widened to f32 (gates, f16 inputs)
	workers []workerScratch
}

type workerScratch struct {
	f   []float32   // per worker: a dequantized row, attention scores, a RoPE table
	acc []float32   // per worker: an output accumulator
	v4  [4]float32  // per worker: four rows' dot products (gemv)
	v16 [16]float32 // and a 4×4 tile's (gemm)
	_   [64]byte    // 192 bytes in all: no line shared with the next worker
}

func grow(s []float32, n int) []float32 {
	if len(s) >= n {
		return s
	}
	return make([]float32, n)
}

func (s *scratch) needWorker(f, acc int) {
	for i := range s.workers {
		s.workers[i].f = grow(s.workers[i].f, f)
		s.workers[i].acc = grow(s.workers[i].acc, acc)
	}
}

// slot is one bound buffer: the whole buffer and the binding's offset, so a
// binding patch (the embedding's token slot) moves the offset only.
type slot struct {
	buf []byte
	off uint64
}

// Exec is a command bound to this backend: its kernel's prepared state, its
// buffers and its parameter struct, decoded once. Patch and Run touch only
// what they were prepared with; neither allocates.
type Exec struct {
	b       *Backend
	Label   string
	Kernel  *kernels.Kernel
	impl    impl
	slots   []slot
	params  unsafe.Pointer // the kernel's parameter struct, inside impl
	psize   int
	patches []plans.Patch
}

// impl is a kernel's prepared state for one command. run executes it with
// the current parameters and binding offsets.
type impl interface {
	run(e *Exec)
}

// buf returns the bytes of binding slot i from its current offset.
func (e *Exec) buf(i int) []byte {
	s := &e.slots[i]
	return s.buf[s.off:]
}

// bound reports whether slot i has a buffer.
func (e *Exec) bound(i int) bool { return i < len(e.slots) && e.slots[i].buf != nil }

// Run executes the command.
func (e *Exec) Run() { e.impl.run(e) }

// Patch writes the command's patches for step s (plans.Patch semantics:
// Base + Stride·x into the parameter bytes at At, or into the offset of
// binding At).
func (e *Exec) Patch(s plans.Step) {
	for i := range e.patches {
		p := &e.patches[i]
		v := p.Base + p.Stride*p.Kind.X(s)
		e.apply(p, p.At, v)
		if p.Kind == plans.PatchPositionKV {
			e.apply(p, p.At+uint32(p.Width), p.Base+p.Stride*plans.PatchKVLength.X(s))
		}
	}
}

func (e *Exec) apply(p *plans.Patch, at uint32, v uint64) {
	if p.Target == plans.PatchBinding {
		e.slots[at].off = v // Bind resolved At to the slot
		return
	}
	e.SetParam(int(at), int(p.Width), v)
}

// SetParam writes v (width 4 or 8 bytes, little-endian) at byte at of the
// parameter struct, the way a param patch does. Out-of-range writes are
// ignored (Bind refused such patches).
func (e *Exec) SetParam(at, width int, v uint64) {
	if at < 0 || at+width > e.psize {
		return
	}
	b := unsafe.Slice((*byte)(e.params), e.psize)
	if width == 8 {
		binary.LittleEndian.PutUint64(b[at:], v)
	} else {
		binary.LittleEndian.PutUint32(b[at:], uint32(v))
	}
}

// SetOffset moves binding slot i to byte offset off of its buffer.
func (e *Exec) SetOffset(i int, off uint64) { e.slots[i].off = off }

// Params returns the parameter struct's bytes as the kernel reads them
// (tests and debugging).
func (e *Exec) Params() []byte { return unsafe.Slice((*byte)(e.params), e.psize) }

// constants are a pipeline's function-constant values by name.
type constants struct {
	k    *kernels.Kernel
	vals []uint32
	set  []bool
}

func (c constants) u(name string, def uint32) uint32 {
	for i, kc := range c.k.Constants {
		if kc.Name == name && i < len(c.set) && c.set[i] {
			return c.vals[i]
		}
	}
	return def
}

func (c constants) b(name string) bool { return c.u(name, 0) != 0 }

// binder prepares a kernel's state for a command: it returns the impl and a
// pointer to the parameter struct inside it, which Bind fills from the
// command's parameter bytes and patches then write into.
type binder func(k *kernels.Kernel, c constants) (impl, unsafe.Pointer)

// Bind prepares cmd, a command of pipeline p, to run over bufs (the plan's
// buffers by index: weights as the mmapped bytes, the rest from Alloc).
// Everything a run needs is resolved here: the kernel, the buffer slices,
// the constants and the parameter struct; the backend's scratch grows to
// what the command needs.
func (b *Backend) Bind(p plans.Pipeline, cmd *plans.Command, bufs [][]byte) (*Exec, error) {
	k, ok := kernels.Lookup(p.Kernel)
	if !ok {
		return nil, fmt.Errorf("cpu: %s: kernel %q: %w", cmd.Label, p.Kernel, kernels.ErrNoKernel)
	}
	bind, ok := binders[p.Kernel]
	if !ok {
		return nil, fmt.Errorf("cpu: %s: kernel %s: %w", cmd.Label, p.Kernel, ErrUnsupported)
	}
	c := constants{k: k, vals: make([]uint32, len(k.Constants)), set: make([]bool, len(k.Constants))}
	for _, pc := range p.Constants {
		if int(pc.Index) < len(k.Constants) {
			c.vals[pc.Index], c.set[pc.Index] = pc.Value, true
		}
	}
	e := &Exec{b: b, Label: cmd.Label, Kernel: k, slots: make([]slot, len(k.Bindings))}
	for _, bd := range cmd.Bindings {
		if int(bd.Slot) >= len(k.Bindings) || int(bd.Slot) == k.ParamSlot {
			return nil, fmt.Errorf("cpu: %s: %s has no buffer slot %d: %w", cmd.Label, k.Name, bd.Slot, ErrUnsupported)
		}
		if int(bd.Buffer) >= len(bufs) || bufs[bd.Buffer] == nil {
			return nil, fmt.Errorf("cpu: %s: slot %d: buffer %d is not allocated: %w", cmd.Label, bd.Slot, bd.Buffer, ErrUnsupported)
		}
		if bd.Offset > uint64(len(bufs[bd.Buffer])) {
			return nil, fmt.Errorf("cpu: %s: slot %d: offset %d past the buffer's %d bytes: %w", cmd.Label, bd.Slot, bd.Offset, len(bufs[bd.Buffer]), ErrUnsupported)
		}
		e.slots[bd.Slot] = slot{buf: bufs[bd.Buffer], off: bd.Offset}
	}
	for _, bd := range k.Bindings {
		if bd.Role == kernels.RoleParam || e.slots[bd.Slot].buf != nil {
			continue
		}
		if bd.When == "" || c.b(bd.When) {
			return nil, fmt.Errorf("cpu: %s: %s: binding %s (slot %d) is not bound: %w", cmd.Label, k.Name, bd.Name, bd.Slot, ErrUnsupported)
		}
	}
	e.impl, e.params = bind(k, c)
	e.psize = k.Params.Size
	if len(cmd.Params) != e.psize {
		return nil, fmt.Errorf("cpu: %s: %s takes %d parameter bytes, the command has %d: %w", cmd.Label, k.Name, e.psize, len(cmd.Params), ErrUnsupported)
	}
	copy(e.Params(), cmd.Params)
	for _, pt := range cmd.Patches {
		switch pt.Target {
		case plans.PatchParam:
			n := int(pt.Width)
			if pt.Kind == plans.PatchPositionKV {
				n *= 2
			}
			if pt.Width != 4 && pt.Width != 8 || int(pt.At)+n > e.psize {
				return nil, fmt.Errorf("cpu: %s: patch %v of %d bytes at %d outside the %d parameter bytes: %w", cmd.Label, pt.Kind, pt.Width, pt.At, e.psize, ErrUnsupported)
			}
		case plans.PatchBinding:
			if !bindingIndexOK(cmd, pt.At) {
				return nil, fmt.Errorf("cpu: %s: patch %v of binding %d: the command has %d: %w", cmd.Label, pt.Kind, pt.At, len(cmd.Bindings), ErrUnsupported)
			}
		default:
			return nil, fmt.Errorf("cpu: %s: patch target %v: %w", cmd.Label, pt.Target, ErrUnsupported)
		}
	}
	e.patches = append([]plans.Patch(nil), cmd.Patches...)
	// A binding patch names an index into cmd.Bindings; resolve it to the
	// slot now, so Patch writes the slot directly.
	for i := range e.patches {
		if e.patches[i].Target == plans.PatchBinding {
			e.patches[i].At = cmd.Bindings[e.patches[i].At].Slot
		}
	}
	if pr, ok := e.impl.(preparer); ok {
		if err := pr.prepare(e); err != nil {
			return nil, fmt.Errorf("cpu: %s: %s: %w", cmd.Label, k.Name, err)
		}
	}
	return e, nil
}

func bindingIndexOK(cmd *plans.Command, at uint32) bool { return int(at) < len(cmd.Bindings) }

// preparer is an impl that checks its command and sizes the scratch at bind
// time.
type preparer interface {
	prepare(e *Exec) error
}
