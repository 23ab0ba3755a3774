//go:build darwin

package metal

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"unsafe"

	kmetal "github.com/akunu-dev/akunu/kernels/metal"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/specs/chips"
	"github.com/ebitengine/purego"
)

const (
	metalFramework      = "/System/Library/Frameworks/Metal.framework/Metal"
	foundationFramework = "/System/Library/Frameworks/Foundation.framework/Foundation"

	storageModeShared = 0 // MTLResourceStorageModeShared (with the default cache and hazard modes)
	// MTLCommandBufferErrorOptionEncoderExecutionStatus: a failed buffer's
	// error lists each encoder's state (what names the failed command).
	errorOptionEncoderStatus = 1
	statusError              = 5 // MTLCommandBufferStatusError
)

// Backend runs bound commands on the system's default Metal device. It is
// not safe for concurrent use: the runtime drives it from one goroutine.
type Backend struct {
	opts       Options
	dev, queue uintptr
	cbDesc     uintptr // MTLCommandBufferDescriptor: unretained references, encoder status
	infoKey    uintptr // MTLCommandBufferEncoderInfoErrorKey
	info       DeviceInfo

	kernelFile map[string]string // kernel name → .metal file
	fileConsts map[string]bool   // the file declares function constants
	libs       map[string]uintptr
	pipes      map[string]*Pipeline

	reg        registry
	owned      []uintptr // buffers, labels: released by Close
	stepLabels []uintptr // "step N" NSStrings, made the first time step N is encoded

	// Encoding state: the command buffer being encoded, its encoder, and
	// the buffers committed and not yet waited for.
	pending      uintptr
	pendingCmds  int
	pendingSteps int
	enc          encoder
	step         int
	pool         uintptr
	inflight     []flight
	err          error // a failure while encoding, returned by the next Wait
}

// flight is a committed command buffer and what it held.
type flight struct {
	cb          uintptr
	cmds, steps int
}

// New opens the default Metal device, its command queue and the kernel
// index. Libraries and pipelines are made by Pipeline, as the plan names
// them.
func New(o Options) (*Backend, error) {
	if err := loadObjC(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	lib, err := purego.Dlopen(metalFramework, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if _, err := purego.Dlopen(foundationFramework, purego.RTLD_NOW|purego.RTLD_GLOBAL); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	create, err := purego.Dlsym(lib, "MTLCreateSystemDefaultDevice")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	selsOnce()
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	pool := poolPush()
	defer poolPop(pool)

	dev, _, _ := purego.SyscallN(create)
	if dev == 0 {
		return nil, ErrNoDevice
	}
	b := &Backend{opts: o, dev: dev, libs: map[string]uintptr{}, pipes: map[string]*Pipeline{},
		inflight: make([]flight, 0, 4)}
	if b.opts.LanguageVersion == 0 {
		b.opts.LanguageVersion = languageVersion3_0
	}
	if b.queue = msg0(dev, sels.newCommandQueue); b.queue == 0 {
		release(dev)
		return nil, fmt.Errorf("metal: newCommandQueue failed")
	}
	if cls := class("MTLCommandBufferDescriptor"); cls != 0 {
		b.cbDesc = msg0(cls, sels.new)
		msg1(b.cbDesc, sels.setRetainedReferences, 0)
		msg1(b.cbDesc, sels.setErrorOptions, errorOptionEncoderStatus)
	}
	if addr, err := purego.Dlsym(lib, "MTLCommandBufferEncoderInfoErrorKey"); err == nil && addr != 0 {
		b.infoKey = *(*uintptr)(ptr(addr))
	}
	b.info = DeviceInfo{
		Name:            goString(msg0(dev, sels.name)),
		UnifiedMemory:   msg0(dev, sels.hasUnifiedMemory)&0xff != 0,
		MaxBufferLength: uint64(msg0(dev, sels.maxBufferLength)),
		WorkingSet:      uint64(msg0(dev, sels.recommendedMaxWS)),
	}
	for _, f := range families {
		if msg1(dev, sels.supportsFamily, f.id)&0xff != 0 {
			b.info.Family = f.name
			break
		}
	}
	if out, err := exec.Command("ioreg", "-r", "-c", "AGXAccelerator").Output(); err == nil {
		if n, ok := chips.ParseIORegGPUCores(string(out)); ok {
			b.info.GPUCores = n
		}
	}
	ks, fcs, err := kmetal.Parse()
	if err != nil {
		b.Close()
		return nil, err
	}
	b.kernelFile = make(map[string]string, len(ks))
	for name, k := range ks {
		b.kernelFile[name] = k.File
	}
	b.fileConsts = map[string]bool{}
	for f, c := range fcs {
		b.fileConsts[f] = len(c) > 0
	}
	return b, nil
}

var selsDone bool

func selsOnce() {
	if !selsDone {
		registerSels()
		selsDone = true
	}
}

func (b *Backend) Name() string       { return "metal" }
func (b *Backend) Device() DeviceInfo { return b.info }

// Alloc returns size zeroed bytes of a shared-storage buffer: the CPU and
// the GPU see the same memory, so the runtime reads logits and writes
// token ids through the slice between submissions.
func (b *Backend) Alloc(size int) ([]byte, error) {
	if size < 0 {
		return nil, fmt.Errorf("metal: alloc of %d bytes", size)
	}
	n := max(size, 16)
	if b.info.MaxBufferLength > 0 && uint64(n) > b.info.MaxBufferLength {
		return nil, fmt.Errorf("metal: a buffer of %d bytes exceeds the device's maxBufferLength %d: %w", n, b.info.MaxBufferLength, ErrUnsupported)
	}
	buf := msg2(b.dev, sels.newBufferWithLength, uintptr(n), storageModeShared)
	if buf == 0 {
		return nil, fmt.Errorf("metal: newBufferWithLength:%d failed (out of memory?)", n)
	}
	c := msg0(buf, sels.contents)
	s := unsafe.Slice((*byte)(ptr(c)), n)
	clear(s)
	b.reg.add(s, bufRef{id: buf})
	b.owned = append(b.owned, buf)
	return s[:size:size], nil
}

// Wrap makes host bytes readable by the GPU without a copy:
// newBufferWithBytesNoCopy over the page-aligned span that contains them
// (pageSpan), the bytes' offset inside it added to every binding. data
// must lie in memory mapped in whole pages (the model file's mmap); the
// mapping must outlive the backend. Where Metal refuses, the bytes are
// copied into a shared buffer instead.
func (b *Backend) Wrap(data []byte) ([]byte, error) {
	if len(data) == 0 {
		return b.Alloc(0)
	}
	sp, err := pageSpan(uintptr(unsafe.Pointer(unsafe.SliceData(data))), len(data), PageSize)
	if err != nil {
		return nil, err
	}
	buf := uintptr(0)
	if b.info.MaxBufferLength == 0 || uint64(sp.Length) <= b.info.MaxBufferLength {
		buf = msg4(b.dev, sels.newBufferWithBytesNoCopy, sp.Start, sp.Length, storageModeShared, 0)
	}
	if buf == 0 {
		cp, err := b.Alloc(len(data))
		if err != nil {
			return nil, err
		}
		copy(cp, data)
		return cp, nil
	}
	b.reg.add(data, bufRef{id: buf, base: sp.Offset})
	b.owned = append(b.owned, buf)
	return data, nil
}

// Pipeline returns the compute pipeline of p, creating it (and its file's
// library) the first time its cache key is seen.
func (b *Backend) Pipeline(p plans.Pipeline) (*Pipeline, error) {
	key := pipelineKey(p)
	if pl, ok := b.pipes[key]; ok {
		return pl, nil
	}
	file, ok := b.kernelFile[p.Kernel]
	if !ok {
		return nil, fmt.Errorf("metal: pipeline %s: kernel %s has no MSL in kernels/metal: %w", key, p.Kernel, ErrUnsupported)
	}
	consts, err := encodeConstants(p)
	if err != nil {
		return nil, err
	}
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	pool := poolPush()
	defer poolPop(pool)
	lib, err := b.library(file)
	if err != nil {
		return nil, err
	}
	name := nsString(p.Kernel)
	defer release(name)
	var fn, nserr uintptr
	if len(consts) == 0 && !b.fileConsts[file] {
		fn = msg1(lib, sels.newFunctionWithName, name)
	} else {
		fcv := msg0(class("MTLFunctionConstantValues"), sels.new)
		for i := range consts {
			c := &consts[i]
			msg3(fcv, sels.setConstantValue, uintptr(unsafe.Pointer(&c.bytes[0])), uintptr(c.dataType), uintptr(c.index))
		}
		fn = msg3(lib, sels.newFunctionWithNameConstants, name, fcv, uintptr(unsafe.Pointer(&nserr)))
		release(fcv)
	}
	if fn == 0 {
		return nil, fmt.Errorf("metal: pipeline %s: %s has no function %s: %s", key, file, p.Kernel, nsErrorString(nserr))
	}
	nserr = 0
	pso := msg2(b.dev, sels.newComputePipelineState, fn, uintptr(unsafe.Pointer(&nserr)))
	release(fn)
	if pso == 0 {
		return nil, fmt.Errorf("metal: pipeline %s: %s", key, nsErrorString(nserr))
	}
	pl := &Pipeline{Key: key, Kernel: p.Kernel, MaxThreads: int(msg0(pso, sels.maxTotalThreads)), pso: pso}
	b.pipes[key] = pl
	return pl, nil
}

// library returns the MTLLibrary of one .metal file: a precompiled
// metallib from Options.MetallibDir when there is one, else the embedded
// source compiled now. One library per file, because function-constant
// indices are consistent within a file only (docs/metal.md).
func (b *Backend) library(file string) (uintptr, error) {
	if lib, ok := b.libs[file]; ok {
		return lib, nil
	}
	var lib, nserr uintptr
	what := ""
	if b.opts.MetallibDir != "" {
		path := filepath.Join(b.opts.MetallibDir, strings.TrimSuffix(file, ".metal")+".metallib")
		if _, err := os.Stat(path); err == nil {
			what = "load " + path
			ns := nsString(path)
			url := msg1(class("NSURL"), sels.fileURLWithPath, ns) // autoreleased
			lib = msg2(b.dev, sels.newLibraryWithURL, url, uintptr(unsafe.Pointer(&nserr)))
			release(ns)
		}
	}
	if what == "" {
		what = "compile " + file
		src, err := kmetal.Source(file)
		if err != nil {
			return 0, err
		}
		ns := nsString(src)
		opts := msg0(class("MTLCompileOptions"), sels.new)
		msg1(opts, sels.setLanguageVersion, uintptr(b.opts.LanguageVersion))
		lib = msg3(b.dev, sels.newLibraryWithSource, ns, opts, uintptr(unsafe.Pointer(&nserr)))
		release(opts)
		release(ns)
	}
	if lib == 0 { // with a library, nserr holds only warnings
		return 0, fmt.Errorf("metal: %s: %s", what, nsErrorString(nserr))
	}
	b.libs[file] = lib
	return lib, nil
}

// Bind prepares cmd to run with pipeline p over bufs (the plan's buffers,
// each from Alloc or Wrap of this backend).
func (b *Backend) Bind(p *Pipeline, cmd *plans.Command, bufs [][]byte) (*Command, error) {
	c, err := bindCommand(p, cmd, bufs, b.reg.lookup)
	if err != nil {
		return nil, err
	}
	c.label = nsString(cmd.Label)
	b.owned = append(b.owned, c.label)
	return c, nil
}

// SetParam writes a parameter of a bound command (sampling knobs).
func (b *Backend) SetParam(c *Command, at, width int, v uint64) { c.SetParam(at, width, v) }

// Encode records cmds once per step into the pending command buffer (one
// buffer per chain), each step's patches written before its commands.
func (b *Backend) Encode(cmds []*Command, steps []plans.Step) {
	b.Begin()
	for i, s := range steps {
		b.Step(i)
		for _, c := range cmds {
			b.Dispatch(c, s)
		}
	}
	b.End()
}

// Begin starts (or continues) the pending command buffer. The calling
// goroutine keeps its OS thread and an autorelease pool until End: the
// buffer and encoders Metal returns are autoreleased objects.
func (b *Backend) Begin() {
	goruntime.LockOSThread()
	b.pool = b.enc.pool(0)
	b.step = -1
	if b.pending != 0 {
		return
	}
	var cb uintptr
	if b.cbDesc != 0 {
		cb = b.enc.call1(b.queue, sels.commandBufferWithDescriptor, b.cbDesc)
	} else {
		cb = b.enc.call0(b.queue, sels.commandBufferWithUnretainedReferences)
	}
	if cb == 0 {
		b.fail(errors.New("metal: the queue gave no command buffer"))
		return
	}
	b.pending = b.enc.call0(cb, sels.retain) // kept past the pool until Wait
	b.pendingCmds, b.pendingSteps = 0, 0
}

// Step opens the compute encoder of chain step i, labelled "step i" (the
// label a failed buffer reports). Its dispatches run in order: the
// encoder is serial and the buffers hazard-tracked, so each command sees
// the last one's writes.
func (b *Backend) Step(i int) {
	if b.pending == 0 {
		return
	}
	b.endEncoder()
	b.step = i
	b.pendingSteps++
	if b.opts.EncoderPerCommand {
		return
	}
	b.openEncoder(b.stepLabel(i))
}

// Dispatch encodes one command for step s.
func (b *Backend) Dispatch(c *Command, s plans.Step) {
	if b.pending == 0 {
		return
	}
	if b.step < 0 {
		b.Step(0)
	}
	if b.opts.EncoderPerCommand {
		b.endEncoder()
		l := nsString(fmt.Sprintf("step %d: %s", b.step, c.Label))
		b.openEncoder(l)
		release(l) // the encoder copies its label
	}
	if b.enc.id == 0 {
		return
	}
	c.encode(&b.enc, s)
	b.pendingCmds++
}

// End closes the encoder and gives the thread back.
func (b *Backend) End() {
	b.endEncoder()
	b.enc.pool(b.pool)
	b.pool = 0
	goruntime.UnlockOSThread()
}

func (b *Backend) openEncoder(label uintptr) {
	b.enc.id = b.enc.call0(b.pending, sels.computeCommandEncoder)
	if b.enc.id == 0 {
		b.fail(errors.New("metal: the command buffer gave no compute encoder"))
		return
	}
	b.enc.call1(b.enc.id, sels.setLabel, label)
}

func (b *Backend) endEncoder() {
	if b.enc.id != 0 {
		b.enc.call0(b.enc.id, sels.endEncoding)
		b.enc.id = 0
	}
}

// stepLabel is the NSString "step i", made once per step index.
func (b *Backend) stepLabel(i int) uintptr {
	for len(b.stepLabels) <= i {
		l := nsString(fmt.Sprintf("step %d", len(b.stepLabels)))
		b.stepLabels = append(b.stepLabels, l)
		b.owned = append(b.owned, l)
	}
	return b.stepLabels[i]
}

func (b *Backend) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Copy records a copy of n bytes from src[srcOff:] to dst[dstOff:] (both
// from Alloc) into the pending command buffer, in a blit encoder of its
// own after the compute encoders encoded so far: hazard tracking orders it
// after their writes and before the next encoder's reads, in this buffer
// and in the next ones of the queue. A copy that cannot be made fails the
// next Wait. It allocates nothing (the registry lookup is a scan).
func (b *Backend) Copy(dst []byte, dstOff int, src []byte, srcOff int, n int) {
	op, err := resolveCopy(dst, dstOff, src, srcOff, n, b.reg.lookup)
	if err != nil {
		b.fail(err)
		return
	}
	b.Begin()
	if b.pending != 0 {
		b.endEncoder()
		blit := b.enc.call0(b.pending, sels.blitCommandEncoder)
		if blit == 0 {
			b.fail(errors.New("metal: the command buffer gave no blit encoder"))
		} else {
			b.enc.id = blit
			b.enc.copyBuffer(&op)
			b.endEncoder()
		}
	}
	b.End()
}

// Commit submits the pending command buffer; it runs while the caller
// encodes the next one (Encode again before Wait: double buffering).
func (b *Backend) Commit() {
	if b.pending == 0 {
		return
	}
	b.enc.call0(b.pending, sels.commit)
	b.inflight = append(b.inflight, flight{cb: b.pending, cmds: b.pendingCmds, steps: b.pendingSteps})
	b.pending = 0
}

// Wait blocks until every committed buffer has run, and returns the first
// failure: an encoding error, or a CommandError naming the command.
func (b *Backend) Wait() error {
	return b.wait(len(b.inflight))
}

// WaitOldest blocks until the oldest committed buffer not yet waited for
// has run, and returns its failure (or an encoding error); the newer ones
// keep running. The queue runs buffers in commit order, so the oldest is
// also the first to finish.
func (b *Backend) WaitOldest() error {
	return b.wait(min(1, len(b.inflight)))
}

// wait waits for the n oldest committed buffers and drops them from
// inflight (shifted in place: no allocation).
func (b *Backend) wait(n int) error {
	if n == 0 && b.err == nil {
		return nil
	}
	goruntime.LockOSThread()
	pool := b.enc.pool(0)
	err := b.err
	b.err = nil
	for _, f := range b.inflight[:n] {
		b.enc.call0(f.cb, sels.waitUntilCompleted)
		if b.enc.call0(f.cb, sels.status) == statusError && err == nil {
			err = b.commandError(f)
		}
		b.enc.call0(f.cb, sels.release)
	}
	b.enc.pool(pool)
	goruntime.UnlockOSThread()
	b.inflight = b.inflight[:copy(b.inflight, b.inflight[n:])]
	return err
}

// commandError reads a failed buffer's NSError and encoder infos.
func (b *Backend) commandError(f flight) error {
	e := &CommandError{Step: -1, Commands: f.cmds, Steps: f.steps}
	nserr := msg0(f.cb, sels.error)
	if nserr == 0 {
		return e
	}
	e.Code = int64(msg0(nserr, sels.code))
	e.Message = nsErrorString(nserr)
	var infos []encoderInfo
	if ui := msg0(nserr, sels.userInfo); ui != 0 && b.infoKey != 0 {
		if arr := msg1(ui, sels.objectForKey, b.infoKey); arr != 0 {
			for i := range int(msg0(arr, sels.count)) {
				in := msg1(arr, sels.objectAtIndex, uintptr(i))
				info := encoderInfo{Label: goString(msg0(in, sels.label)), State: int(msg0(in, sels.errorState))}
				if sp := msg0(in, sels.debugSignposts); sp != 0 {
					for j := range int(msg0(sp, sels.count)) {
						info.Signposts = append(info.Signposts, goString(msg1(sp, sels.objectAtIndex, uintptr(j))))
					}
				}
				infos = append(infos, info)
			}
		}
	}
	e.Label, e.Step = failedCommand(infos)
	return e
}

// Close waits for the GPU, then releases every object the backend made.
// The slices Alloc returned are invalid afterwards.
func (b *Backend) Close() {
	if b.dev == 0 {
		return
	}
	if b.pending != 0 {
		release(b.pending)
		b.pending = 0
	}
	b.Wait()
	for _, pl := range b.pipes {
		release(pl.pso)
	}
	for _, lib := range b.libs {
		release(lib)
	}
	for _, id := range b.owned {
		release(id)
	}
	b.pipes, b.libs, b.owned, b.stepLabels, b.reg = nil, nil, nil, nil, registry{}
	release(b.cbDesc)
	release(b.queue)
	release(b.dev)
	b.dev = 0
}

// encoder sends a command's messages to one MTLComputeCommandEncoder.
// It passes SyscallN a slice of its own argument array: a variadic call
// would put the argument list on the heap (SyscallN is uintptrescapes),
// one allocation per message; the slice form allocates nothing
// (syscall_linux_test.go measures both). The Go pointers stored in args
// are heap objects the bound Command keeps alive (its parameter bytes,
// its MTLSizes), and Go's collector does not move heap objects.
type encoder struct {
	id   uintptr
	args [7]uintptr
}

func (e *encoder) send(sel uintptr, n int) {
	e.args[0], e.args[1] = e.id, sel
	purego.SyscallN(msgSendFn, e.args[:2+n]...)
}

// call0 and call1 send other objects the per-chain messages (command
// buffer, encoder, commit, wait) through the same array.
func (e *encoder) call0(id, sel uintptr) uintptr {
	e.args[0], e.args[1] = id, sel
	r, _, _ := purego.SyscallN(msgSendFn, e.args[:2]...)
	return r
}

func (e *encoder) call1(id, sel, a uintptr) uintptr {
	e.args[0], e.args[1], e.args[2] = id, sel, a
	r, _, _ := purego.SyscallN(msgSendFn, e.args[:3]...)
	return r
}

// pool pushes (p == 0) or pops an autorelease pool.
func (e *encoder) pool(p uintptr) uintptr {
	if p == 0 {
		r, _, _ := purego.SyscallN(poolPushFn, e.args[:0]...)
		return r
	}
	e.args[0] = p
	purego.SyscallN(poolPopFn, e.args[:1]...)
	return 0
}

func (e *encoder) pushDebugGroup(label uintptr) {
	e.args[2] = label
	e.send(sels.pushDebugGroup, 1)
}

func (e *encoder) popDebugGroup() { e.send(sels.popDebugGroup, 0) }

func (e *encoder) setPipeline(pso uintptr) {
	e.args[2] = pso
	e.send(sels.setComputePipelineState, 1)
}

func (e *encoder) setBuffer(buf uintptr, offset uint64, index uint32) {
	e.args[2], e.args[3], e.args[4] = buf, uintptr(offset), uintptr(index)
	e.send(sels.setBuffer, 3)
}

func (e *encoder) setBytes(p unsafe.Pointer, n int, index uint32) {
	e.args[2], e.args[3], e.args[4] = uintptr(p), uintptr(n), uintptr(index)
	e.send(sels.setBytes, 3)
}

func (e *encoder) setThreadgroupMemory(n uint64, index uint32) {
	e.args[2], e.args[3] = uintptr(n), uintptr(index)
	e.send(sels.setThreadgroupMemoryLength, 2)
}

// copyBuffer is the blit encoder's
// copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size:.
func (e *encoder) copyBuffer(op *copyOp) {
	e.args[2], e.args[3], e.args[4], e.args[5], e.args[6] = op.src, uintptr(op.srcOff), op.dst, uintptr(op.dstOff), uintptr(op.size)
	e.send(sels.copyFromBuffer, 5)
}

// dispatch passes the MTLSizes by reference: arm64 passes a 24-byte
// struct argument as a pointer to a copy, and Metal reads it during the
// call.
func (e *encoder) dispatch(grid, tg *[3]uint64, threads bool) {
	s := sels.dispatchThreadgroups
	if threads {
		s = sels.dispatchThreads
	}
	e.args[2], e.args[3] = uintptr(unsafe.Pointer(grid)), uintptr(unsafe.Pointer(tg))
	e.send(s, 2)
}
