package cpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/device"
)

// ErrUnsupported is wrapped by Bind for a kernel this backend does not
// implement or a command it cannot run, and by Derive for a recipe it does
// not know.
var ErrUnsupported = errors.New("cpu: unsupported")

// Options configure a Backend.
type Options struct {
	// Threads is the number of goroutines that share a command's work: the
	// caller's plus Threads-1 workers. 0 means runtime.NumCPU().
	Threads int
}

// Backend runs bound commands on the CPU. It owns its buffers (host
// memory, or the mapped model file's bytes) and its bound programs, each
// named by a handle (runtime/device), so that one backend serves several
// models. Its methods are not safe for concurrent use: its owner (the
// runtime) submits one program at a time; each command may use all the
// threads.
type Backend struct {
	pool    *pool
	scratch scratch
	// last is the command that ran last, nil once the host has written
	// since: what a GEMM checks before it reuses the prepared X of the
	// one before it (gemm.prepared).
	last  *Exec
	bufs  [][]byte // by buffer id - 1; nil when freed
	progs [][]*Exec
	// freeBufs and freeProgs are the ids of freed entries, reused first.
	freeBufs, freeProgs []int
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

// Name is "cpu".
func (b *Backend) Name() string { return "cpu" }

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

// add registers data as a buffer.
func (b *Backend) add(data []byte) device.Buffer {
	if n := len(b.freeBufs); n > 0 {
		i := b.freeBufs[n-1]
		b.freeBufs = b.freeBufs[:n-1]
		b.bufs[i] = data
		return device.NewBuffer(i+1, len(data))
	}
	b.bufs = append(b.bufs, data)
	return device.NewBuffer(len(b.bufs), len(data))
}

// Alloc allocates size zeroed bytes (Alloc's alignment) as a buffer.
func (b *Backend) Alloc(size int) (device.Buffer, error) {
	if size <= 0 {
		return device.Buffer{}, fmt.Errorf("cpu: a buffer of %d bytes", size)
	}
	return b.add(Alloc(size)), nil
}

// Map makes host bytes (a weight of the mapped model file) a buffer,
// without a copy: the bytes must outlive it.
func (b *Backend) Map(data []byte) (device.Buffer, error) {
	if len(data) == 0 {
		return device.Buffer{}, fmt.Errorf("cpu: mapping an empty weight")
	}
	return b.add(data), nil
}

// Derive builds a derived weight of size bytes from srcs by recipe:
// concat_rows copies the sources' bytes one after the other;
// repack:<dtype>x16 (x16.go: q4_0, q8_0, q4_k, q6_k) interleaves rows of
// rowElems elements in groups of 16, each source on its own;
// repack:<dtype>_planar (q4_0, q6_k; kernels.ToPlanar) stacks the sources' rows
// and splits their blocks into two planes, the layout the CUDA GEMVs read
// (the CPU runs it only to replay and verify a GPU plan).
func (b *Backend) Derive(recipe string, srcs []device.Buffer, size, rowElems int) (buf device.Buffer, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if ferr := b.pool.takeFault(); ferr != nil && err == nil {
			buf, err = device.Buffer{}, fmt.Errorf("cpu: deriving a weight by %s: %w", recipe, ferr)
		}
	}()
	defer b.pool.catch()
	return b.derive(recipe, srcs, size, rowElems)
}

func (b *Backend) derive(recipe string, srcs []device.Buffer, size, rowElems int) (device.Buffer, error) {
	switch recipe {
	case plans.RecipeConcatRows:
		data, err := b.stack(recipe, srcs, size)
		if err != nil {
			return device.Buffer{}, err
		}
		return b.add(data), nil
	case kernels.PlanarPairsRecipe(dtype.Q4_0):
		dt := dtype.Q4_0
		if len(srcs) != 2 || rowElems <= 0 || rowElems%int(dt.BlockSize()) != 0 {
			return device.Buffer{}, fmt.Errorf("cpu: %s: %d sources of %d-element rows: want a gate and an up weight: %w", recipe, len(srcs), rowElems, ErrUnsupported)
		}
		a, b2 := b.bytes(srcs[0]), b.bytes(srcs[1])
		rows, data := Alloc(size), Alloc(size)
		err := kernels.InterleaveRows(rows, a, b2, rowElems/int(dt.BlockSize())*int(dt.BlockBytes()))
		if err == nil {
			err = kernels.ToPlanar(dt, data, rows)
		}
		if err != nil {
			return device.Buffer{}, fmt.Errorf("cpu: %s: %w", recipe, err)
		}
		return b.add(data), nil
	case kernels.PlanarRecipe(dtype.Q4_0), kernels.PlanarRecipe(dtype.Q6_K):
		dt := dtype.Q4_0
		if recipe == kernels.PlanarRecipe(dtype.Q6_K) {
			dt = dtype.Q6_K
		}
		stacked, err := b.stack(recipe, srcs, size)
		if err != nil {
			return device.Buffer{}, err
		}
		data := Alloc(size)
		if err := kernels.ToPlanar(dt, data, stacked); err != nil {
			return device.Buffer{}, fmt.Errorf("cpu: %w", err)
		}
		return b.add(data), nil
	}
	if l := x16ByRecipe(recipe); l != nil {
		return l.derive(b, srcs, size, rowElems)
	}
	return device.Buffer{}, fmt.Errorf("cpu: recipe %q: %w", recipe, ErrUnsupported)
}

// stack is the sources' bytes one after the other, size in all (the
// concat_rows recipe, and the planar recipe's first step).
func (b *Backend) stack(recipe string, srcs []device.Buffer, size int) ([]byte, error) {
	data := Alloc(size)
	off := 0
	for _, s := range srcs {
		src := b.bytes(s)
		if src == nil || off+len(src) > size {
			return nil, fmt.Errorf("cpu: %s: sources of %d+ bytes for %d", recipe, off+len(src), size)
		}
		off += copy(data[off:], src)
	}
	if off != size {
		return nil, fmt.Errorf("cpu: %s: sources give %d of %d bytes", recipe, off, size)
	}
	return data, nil
}

// bytes is buffer h's memory, nil for no buffer.
func (b *Backend) bytes(h device.Buffer) []byte {
	if i := h.ID() - 1; i >= 0 && i < len(b.bufs) {
		return b.bufs[i]
	}
	return nil
}

// Free releases a buffer; programs bound over it must be unbound first.
func (b *Backend) Free(h device.Buffer) {
	if i := h.ID() - 1; i >= 0 && i < len(b.bufs) && b.bufs[i] != nil {
		b.bufs[i] = nil
		b.freeBufs = append(b.freeBufs, i)
	}
}

// Write copies src into dst at byte off.
func (b *Backend) Write(dst device.Buffer, off int, src []byte) error {
	d := b.bytes(dst)
	if off < 0 || off > len(d)-len(src) {
		return fmt.Errorf("cpu: write of %d bytes at %d into a buffer of %d", len(src), off, len(d))
	}
	copy(d[off:], src)
	b.last = nil
	return nil
}

// Read copies len(dst) bytes of src from byte off.
func (b *Backend) Read(dst []byte, src device.Buffer, off int) error {
	s := b.bytes(src)
	if off < 0 || off > len(s)-len(dst) {
		return fmt.Errorf("cpu: read of %d bytes at %d from a buffer of %d", len(dst), off, len(s))
	}
	copy(dst, s[off:])
	return nil
}

// Copy copies n bytes from src at srcOff to dst at dstOff, now: every
// command encoded before it has already run.
func (b *Backend) Copy(dst device.Buffer, dstOff int, src device.Buffer, srcOff int, n int) {
	copy(b.bytes(dst)[dstOff:dstOff+n], b.bytes(src)[srcOff:srcOff+n])
	b.last = nil
}

// Bind prepares commands (resolved by device.Resolve) as one program.
func (b *Backend) Bind(cmds []device.Command) (device.Program, error) {
	execs := make([]*Exec, len(cmds))
	for i := range cmds {
		e, err := b.bindExec(&cmds[i])
		if err != nil {
			return device.Program{}, err
		}
		execs[i] = e
	}
	for i, only := range device.HostOnly(cmds) {
		execs[i].hostOnly = only
	}
	linkGEMMs(execs)
	groupGEMVs(execs)
	if n := len(b.freeProgs); n > 0 {
		i := b.freeProgs[n-1]
		b.freeProgs = b.freeProgs[:n-1]
		b.progs[i] = execs
		return device.NewProgram(i + 1), nil
	}
	b.progs = append(b.progs, execs)
	return device.NewProgram(len(b.progs)), nil
}

// Unbind forgets a program.
func (b *Backend) Unbind(p device.Program) {
	if i := p.ID() - 1; i >= 0 && i < len(b.progs) && b.progs[i] != nil {
		b.progs[i] = nil
		b.freeProgs = append(b.freeProgs, i)
	}
}

// Commands are program p's bound commands (tests, verify).
func (b *Backend) Commands(p device.Program) []*Exec { return b.progs[p.ID()-1] }

// SetParam writes v (width 4 or 8, little-endian) at byte at of command
// cmd of program p: the sampling knobs a generation rewrites.
func (b *Backend) SetParam(p device.Program, cmd, at, width int, v uint64) {
	b.progs[p.ID()-1][cmd].SetParam(at, width, v)
}

// Encode runs program p once per step, in order, each step's patches
// written before its commands; a command whose writes only the host reads
// runs in the last step only. It does not allocate.
func (b *Backend) Encode(p device.Program, steps []plans.Step) {
	b.encode(p, steps, nil)
}

// EncodeTimed runs program p for one step as Encode does and adds each
// command's wall time to ns[i] (len(ns) ≥ the program's commands): where a
// step goes, command by command. A GEMV group's time is its leader's; its
// members, run by the leader, add nothing. For profiles, not for serving:
// it reads the clock twice a command.
func (b *Backend) EncodeTimed(p device.Program, s plans.Step, ns []int64) {
	b.encode(p, []plans.Step{s}, ns)
}

// encode is Encode, each command's time added to ns where ns is not nil.
func (b *Backend) encode(p device.Program, steps []plans.Step, ns []int64) {
	// A fault on a mapped weight is recorded, not fatal; Wait reports it
	// (fault.go). A backend that faulted runs nothing until then.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.pool.catch()
	if b.pool.faulted.Load() {
		return
	}
	execs := b.progs[p.ID()-1]
	var t0 time.Time
	for i, s := range steps {
		last := i == len(steps)-1
		for c, e := range execs {
			if ns != nil {
				t0 = time.Now()
			}
			e.Patch(s)
			switch {
			case e.group != nil:
				e.group.run()
			case e.grouped, e.hostOnly && !last:
			default:
				e.Run()
			}
			if ns != nil {
				ns[c] += int64(time.Since(t0))
			}
		}
	}
}

// Commit has nothing to do: Encode ran everything. Wait and WaitOldest
// report a memory fault Encode's kernels hit (fault.go).
func (b *Backend) Commit()           {}
func (b *Backend) Wait() error       { return b.pool.takeFault() }
func (b *Backend) WaitOldest() error { return b.pool.takeFault() }

// scratch is memory the kernels use between their inputs and outputs,
// sized at bind time to the largest command so that runs never allocate.
// shared serves the calling goroutine before a split (the quantized
// activations); workers[w] is private to worker w.
type scratch struct {
	q8      q8act     // activations quantized to 8 bits (quantized GEMV/GEMM)
	x16     []byte    // q8's rows as the x16 kernels' records (x16.go)
	rope    ropeTab   // a step's RoPE tables (ropeKV)
	f       []float32 // activations widened to f32 (gates, f16 inputs)
	workers []workerScratch
}

type workerScratch struct {
	f   []float32          // per worker: a dequantized row, attention scores, a RoPE table
	acc []float32          // per worker: an output accumulator
	v4  [4]float32         // per worker: four rows' dot products (gemv)
	v16 [16]float32        // and a 4×4 tile's (gemm)
	sc  [headGroup]float32 // RMS scales of a group of rows (ropeKV, norm)
	q8  q8act              // a row quantized to Q8_0 (a Q8_0 KV cache's writes and queries)
	row []byte             // a planar weight row in the file's layout (gemv); 256 bytes in all: no line shared with the next worker
}

func grow(s []float32, n int) []float32 {
	if len(s) >= n {
		return s
	}
	return make([]float32, n)
}

// needWorkerQ8 gives every worker room for a row of n elements quantized
// to Q8_0.
func (s *scratch) needWorkerQ8(n int) {
	for i := range s.workers {
		s.workers[i].q8.need(n)
	}
}

func (s *scratch) needWorker(f, acc int) {
	for i := range s.workers {
		s.workers[i].f = grow(s.workers[i].f, f)
		s.workers[i].acc = grow(s.workers[i].acc, acc)
	}
}

// slot is one bound buffer: the whole buffer and the binding's offset, so a
// binding patch (the embedding's token slot, a decode step's KV slot)
// moves the offset only.
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
	patches []device.Patch
	// group is the GEMV group this command leads (gemvgroup.go); grouped
	// marks every member, which Encode runs through its group's leader.
	group   *gemvGroup
	grouped bool
	// hostOnly: what the command writes only the host reads
	// (device.HostOnly); of several steps, Encode runs it in the last.
	hostOnly bool
}

// Grouped reports that the command runs within a GEMV group its leader
// runs (gemvgroup.go): EncodeTimed gives it no time of its own.
func (e *Exec) Grouped() bool { return e.grouped }

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
func (e *Exec) Run() {
	e.impl.run(e)
	e.b.last = e
}

// Patch writes the command's patches for step s (device.Patch semantics:
// Base + Stride·x into the parameter bytes at At, or into the offset of
// slot At).
func (e *Exec) Patch(s plans.Step) {
	for i := range e.patches {
		p := &e.patches[i]
		v := p.Value(s)
		if p.Binding {
			e.slots[p.At].off = v
			continue
		}
		e.SetParam(int(p.At), int(p.Width), v)
		if p.Two() {
			e.SetParam(int(p.At)+int(p.Width), int(p.Width), p.Second(s))
		}
	}
}

// SetParam writes v (width 4 or 8 bytes, little-endian) at byte at of the
// parameter struct, the way a param patch does. Out-of-range writes are
// ignored (Resolve refused such patches).
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

// bindExec prepares one resolved command. Resolve has checked its
// bindings, parameter size and patches; what is left is the CPU's own: a
// kernel it implements, and the kernel's prepare (shapes its code relies
// on), which also grows the shared scratch to what the command needs.
func (b *Backend) bindExec(cmd *device.Command) (*Exec, error) {
	k := cmd.Kernel
	bind, ok := binders[k.Name]
	if !ok {
		return nil, fmt.Errorf("cpu: %s: kernel %s: %w", cmd.Label, k.Name, ErrUnsupported)
	}
	c := constants{k: k, vals: make([]uint32, len(k.Constants)), set: make([]bool, len(k.Constants))}
	for _, pc := range cmd.Pipeline.Constants {
		if int(pc.Index) < len(k.Constants) {
			c.vals[pc.Index], c.set[pc.Index] = pc.Value, true
		}
	}
	e := &Exec{b: b, Label: cmd.Label, Kernel: k, slots: make([]slot, len(k.Bindings))}
	for i, s := range cmd.Slots {
		if s.Buf.Valid() {
			e.slots[i] = slot{buf: b.bytes(s.Buf), off: s.Offset}
		}
	}
	e.impl, e.params = bind(k, c)
	e.psize = k.Params.Size
	if len(cmd.Params) != e.psize {
		return nil, fmt.Errorf("cpu: %s: %s takes %d parameter bytes, the command has %d: %w", cmd.Label, k.Name, e.psize, len(cmd.Params), ErrUnsupported)
	}
	copy(e.Params(), cmd.Params)
	e.patches = append([]device.Patch(nil), cmd.Patches...)
	if pr, ok := e.impl.(preparer); ok {
		if err := pr.prepare(e); err != nil {
			return nil, fmt.Errorf("cpu: %s: %s: %w", cmd.Label, k.Name, err)
		}
	}
	return e, nil
}

// preparer is an impl that checks its command and sizes the scratch at bind
// time.
type preparer interface {
	prepare(e *Exec) error
}
