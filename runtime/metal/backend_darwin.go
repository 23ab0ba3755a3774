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
	"github.com/akunu-dev/akunu/runtime/device"
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

// Backend runs bound commands on the system's default Metal device. It
// owns its buffers (shared-storage MTLBuffers, and no-copy wraps of the
// mapped model file) and its bound programs, each named by a handle
// (runtime/device), so that one backend serves several models. It is not
// safe for concurrent use: the runtime drives it from one goroutine.
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

	bufs       buffers           // by handle id; Free and Close release the MTLBuffers
	progs      table[[]*Command] // by handle id; Unbind and Close release the labels
	stepLabels []uintptr         // "step N" NSStrings, made the first time step N is encoded

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
// index. Libraries and pipelines are made by Bind, as the commands name
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

// newShared makes a zeroed shared-storage MTLBuffer of size bytes (at
// least 16: Metal refuses an empty buffer): the CPU and the GPU see the
// same memory, so Write and Read are copies through its contents.
func (b *Backend) newShared(size int) (bufEntry, error) {
	if size <= 0 {
		return bufEntry{}, fmt.Errorf("metal: a buffer of %d bytes", size)
	}
	n := max(size, 16)
	if b.info.MaxBufferLength > 0 && uint64(n) > b.info.MaxBufferLength {
		return bufEntry{}, fmt.Errorf("metal: a buffer of %d bytes exceeds the device's maxBufferLength %d: %w", n, b.info.MaxBufferLength, ErrUnsupported)
	}
	buf := msg2(b.dev, sels.newBufferWithLength, uintptr(n), storageModeShared)
	if buf == 0 {
		return bufEntry{}, fmt.Errorf("metal: newBufferWithLength:%d failed (out of memory?)", n)
	}
	host := ptr(msg0(buf, sels.contents))
	clear(unsafe.Slice((*byte)(host), n))
	return bufEntry{bufRef: bufRef{id: buf}, size: size, host: host}, nil
}

func (b *Backend) add(e bufEntry) device.Buffer { return device.NewBuffer(b.bufs.add(e), e.size) }

// Alloc returns a zeroed shared-storage buffer of size bytes.
func (b *Backend) Alloc(size int) (device.Buffer, error) {
	e, err := b.newShared(size)
	if err != nil {
		return device.Buffer{}, err
	}
	return b.add(e), nil
}

// Map makes host bytes readable by the GPU without a copy:
// newBufferWithBytesNoCopy over the page-aligned span that contains them
// (pageSpan), the bytes' offset inside it added to every binding. data
// must lie in memory mapped in whole pages (the model file's mmap) and
// outlive the buffer. Where Metal refuses, the bytes are copied into a
// shared buffer instead.
func (b *Backend) Map(data []byte) (device.Buffer, error) {
	if len(data) == 0 {
		return device.Buffer{}, fmt.Errorf("metal: mapping an empty weight")
	}
	host := unsafe.Pointer(unsafe.SliceData(data))
	sp, err := pageSpan(uintptr(host), len(data), PageSize)
	if err != nil {
		return device.Buffer{}, err
	}
	buf := uintptr(0)
	if b.info.MaxBufferLength == 0 || uint64(sp.Length) <= b.info.MaxBufferLength {
		buf = msg4(b.dev, sels.newBufferWithBytesNoCopy, sp.Start, sp.Length, storageModeShared, 0)
	}
	if buf == 0 {
		e, err := b.newShared(len(data))
		if err != nil {
			return device.Buffer{}, err
		}
		copy(unsafe.Slice((*byte)(e.host), e.size), data)
		return b.add(e), nil
	}
	return b.add(bufEntry{bufRef: bufRef{id: buf, base: sp.Offset}, size: len(data), host: host}), nil
}

// Derive builds a derived weight of size bytes from srcs by recipe:
// concat_rows, the sources one after the other, copied by a blit encoder
// into a new shared buffer (committed and waited for, as loading needs
// the bytes before anything runs). A piece whose offsets or size are not
// multiples of 4, which a blit on macOS refuses, is copied by the host:
// both sides are memory it sees. Metal has no repack layouts of its own,
// so the row length, which only a repack needs, is not read.
func (b *Backend) Derive(recipe string, srcs []device.Buffer, size, _ int) (device.Buffer, error) {
	if recipe != plans.RecipeConcatRows {
		return device.Buffer{}, fmt.Errorf("metal: recipe %q: %w", recipe, ErrUnsupported)
	}
	ps, err := b.bufs.concatRows(srcs, size)
	if err != nil {
		return device.Buffer{}, err
	}
	dst, err := b.newShared(size)
	if err != nil {
		return device.Buffer{}, err
	}
	out := unsafe.Slice((*byte)(dst.host), size)
	var ops []copyOp
	for _, p := range ps {
		if p.blit {
			ops = append(ops, copyOp{src: p.src.id, srcOff: p.src.base, dst: dst.id, dstOff: uint64(p.dstOff), size: uint64(p.src.size)})
		} else {
			copy(out[p.dstOff:], unsafe.Slice((*byte)(p.src.host), p.src.size))
		}
	}
	if err := b.blitNow(ops); err != nil {
		release(dst.id)
		return device.Buffer{}, fmt.Errorf("metal: concat_rows: %w", err)
	}
	return b.add(dst), nil
}

// blitNow runs copies in a command buffer of their own and waits for it.
func (b *Backend) blitNow(ops []copyOp) error {
	if len(ops) == 0 {
		return nil
	}
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	pool := poolPush()
	defer poolPop(pool)
	cb := msg0(b.queue, sels.commandBufferWithUnretainedReferences)
	if cb == 0 {
		return errors.New("the queue gave no command buffer")
	}
	var e encoder
	if e.id = msg0(cb, sels.blitCommandEncoder); e.id == 0 {
		return errors.New("the command buffer gave no blit encoder")
	}
	for i := range ops {
		e.copyBuffer(&ops[i])
	}
	msg0(e.id, sels.endEncoding)
	msg0(cb, sels.commit)
	msg0(cb, sels.waitUntilCompleted)
	if msg0(cb, sels.status) == statusError {
		return fmt.Errorf("%w: %s", ErrCommandBuffer, nsErrorString(msg0(cb, sels.error)))
	}
	return nil
}

// Free releases a buffer. Programs bound over it must be unbound first and
// nothing that uses it may be in flight: command buffers hold unretained
// references.
func (b *Backend) Free(h device.Buffer) {
	if _, ok := b.bufs.ref(h); !ok {
		return
	}
	if e, ok := b.bufs.remove(h.ID()); ok {
		release(e.id)
	}
}

// Write copies src into dst at byte off; Read copies len(dst) bytes of src
// from off. Both go through the shared memory at once: the runtime calls
// them only while nothing that uses the buffer is in flight.
func (b *Backend) Write(dst device.Buffer, off int, src []byte) error {
	return b.bufs.write(dst, off, src)
}
func (b *Backend) Read(dst []byte, src device.Buffer, off int) error {
	return b.bufs.read(dst, src, off)
}

// pipeline returns the compute pipeline of p, creating it (and its file's
// library) the first time its cache key is seen. Its errors start with the
// pipeline (Bind puts the command before them).
func (b *Backend) pipeline(p plans.Pipeline) (*Pipeline, error) {
	key := pipelineKey(p)
	if pl, ok := b.pipes[key]; ok {
		return pl, nil
	}
	file, ok := b.kernelFile[p.Kernel]
	if !ok {
		return nil, fmt.Errorf("pipeline %s: kernel %s has no MSL in kernels/metal: %w", key, p.Kernel, ErrUnsupported)
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
		return nil, fmt.Errorf("pipeline %s: %w", key, err)
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
		return nil, fmt.Errorf("pipeline %s: %s has no function %s: %s", key, file, p.Kernel, nsErrorString(nserr))
	}
	nserr = 0
	pso := msg2(b.dev, sels.newComputePipelineState, fn, uintptr(unsafe.Pointer(&nserr)))
	release(fn)
	if pso == 0 {
		return nil, fmt.Errorf("pipeline %s: %s", key, nsErrorString(nserr))
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
		return 0, fmt.Errorf("%s: %s", what, nsErrorString(nserr))
	}
	b.libs[file] = lib
	return lib, nil
}
