//go:build linux

package cuda

import (
	"encoding/binary"
	"fmt"
	"os"
	"regexp"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/kernels/gpu"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/device"
	"github.com/ebitengine/purego"
)

// Driver API constants (cuda.h).
const (
	attrMaxThreadsPerBlock = 1
	attrMultiprocessors    = 16
	attrCCMajor            = 75
	attrCCMinor            = 76
	funcMaxThreads         = 0
	funcLocalBytes         = 3
	funcNumRegs            = 4
	funcMaxDynamicShared   = 8
	errNotReady            = 600
	// generations is how many submissions of one program may be in flight
	// at once, each with its own copy of the parameters (the engine keeps
	// at most two: one chain running while the host reads the last).
	generations = 3
	maxArgs     = 16
	// maxGraphs bounds the graphs a program keeps (one per step slot,
	// generation and KV sequence slot); past it, the graphs of other
	// sequence slots go, and where that is not enough chains launch from
	// the host.
	maxGraphs = 3 * 512
	// captureRelaxed is CU_STREAM_CAPTURE_MODE_RELAXED.
	captureRelaxed = 2
)

// Backend is the CUDA backend: one GPU, one context (the device's primary
// context), one stream. Like every backend its methods are not safe for
// concurrent use.
type Backend struct {
	d     *driver
	opt   Options
	dev   Device
	ctx   uintptr
	strm  uintptr
	arch  int
	cache cache

	bufs  []dbuf
	free  []int
	progs []*program
	pfree []int

	modules   map[string]uintptr   // loaded cubins by source key
	pipelines map[string]*pipeline // by plans.CacheKey

	inflight []uintptr // events of committed submissions, oldest first
	events   []uintptr // spare events
	err      error     // the first failure since the last Wait

	args [12]uintptr // cuLaunchKernel's arguments: the per-step path allocates nothing

	pdl  bool         // launches let a command start before the one before it ends
	cfg  launchConfig // cuLaunchKernelEx's configuration, rewritten per launch
	attr launchAttr   // its one attribute: programmatic stream serialization

	uploaded   int64
	uploadTime time.Duration

	prof *profiler // AKUNU_CUDA_PROFILE=1
}

// Options configure the backend.
type Options struct {
	// Device is the CUDA device ordinal.
	Device int
	// CacheDir holds compiled kernels; "" is $AKUNU_CUDA_CACHE or the
	// user's cache directory, "off" compiles every load.
	CacheDir string
	// SyncEachCommand waits for every command as it is encoded, so that a
	// fault names its command (akunu verify); slow.
	SyncEachCommand bool
	// NoGraphs launches every command of every step from the host instead
	// of replaying each step as a captured CUDA graph (for comparison;
	// AKUNU_CUDA_GRAPHS=0 sets it).
	NoGraphs bool
	// NoPDL launches every command only once the one before it has
	// finished. By default, on compute capability 9.0 and later, a command
	// is launched while the one before it runs (programmatic dependent
	// launch): its threadgroups start, read their parameters and prefetch
	// their weights, then wait for the command before (grid_wait in
	// kernels/gpu/prelude_cuda.h). AKUNU_CUDA_PDL=0 sets it.
	NoPDL bool
	// Skip leaves out every command whose label and kernel, "label
	// kernel", it matches: a developer's tool for what a command costs in
	// the decode graph as it runs (the output is wrong; ADR 0029).
	// AKUNU_CUDA_SKIP=REGEXP sets it.
	Skip *regexp.Regexp
	// DecodeRows is the most rows of distinct sequences (batched decode in
	// a server) the runtime replays as that many decode steps rather than
	// one batch program (runtime's decodeRows interface; ADR 0032): 0
	// lets the plan decide (Backend.DecodeRows), 1 is only a lone row.
	// AKUNU_CUDA_DECODE_ROWS=N sets it.
	DecodeRows int
	// SplitRows is the rows of the batch program that a replay of more
	// rows, and at most twice as many, is cut into (runtime's splitRows
	// interface): 0 lets the plan decide (Backend.SplitRows), -1 is no
	// split. AKUNU_CUDA_SPLIT_ROWS=N sets it (0 there: no split).
	SplitRows int
}

// DefaultDecodeRows: up to this many sequences' next tokens, a decode
// step each beat one batch program of their rows on an H100 where the
// batch programs' small GEMMs read the file's layout (ADR 0032: 2–6
// sequences on every shape measured, 8 on the 1B and 8B shapes). More
// sequences are one batch program of their rows (16 and up: the tiled
// GEMM).
const DefaultDecodeRows = 8

// launchConfig is the driver's CUlaunchConfig, launchAttr its
// CUlaunchAttribute (an id, padding, a 64-byte value union).
type launchConfig struct {
	grid, block [3]uint32
	shmem       uint32
	_           uint32
	stream      uintptr
	attrs       *launchAttr
	nattrs      uint32
	_           uint32
}

type launchAttr struct {
	id    uint32
	_     uint32
	value [64]byte
}

// attrProgrammaticSerialization is CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
const attrProgrammaticSerialization = 6

// Device describes the GPU.
type Device struct {
	Name         string
	Major, Minor int // compute capability
	SMs          int
	Memory       int64
	Driver       int    // the driver's CUDA version (12040: 12.4)
	NVRTC        string // the NVRTC library and its version
}

type dbuf struct {
	ptr  uint64
	size int
}

type pipeline struct {
	key        string
	fn         uintptr
	maxThreads int
	entry      *gpu.Entry
}

// New opens the CUDA driver and NVRTC and takes GPU opt.Device; the error
// wraps ErrUnavailable where there is none.
func New(opt Options) (*Backend, error) {
	if v := os.Getenv("AKUNU_CUDA_SKIP"); v != "" {
		re, err := regexp.Compile(v)
		if err != nil {
			return nil, fmt.Errorf("cuda: AKUNU_CUDA_SKIP: %w", err)
		}
		opt.Skip = re
	}
	d, err := loadDriver()
	if err != nil {
		return nil, err
	}
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	if os.Getenv("AKUNU_CUDA_GRAPHS") == "0" {
		opt.NoGraphs = true
	}
	if os.Getenv("AKUNU_CUDA_PDL") == "0" {
		opt.NoPDL = true
	}
	if v := os.Getenv("AKUNU_CUDA_DECODE_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("cuda: AKUNU_CUDA_DECODE_ROWS=%q: a count of rows, 1 or more", v)
		}
		opt.DecodeRows = n
	}
	if v := os.Getenv("AKUNU_CUDA_SPLIT_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("cuda: AKUNU_CUDA_SPLIT_ROWS=%q: a count of rows, 0 for none", v)
		}
		opt.SplitRows = n
		if n == 0 {
			opt.SplitRows = -1 // none
		}
	}
	b := &Backend{d: d, opt: opt, modules: map[string]uintptr{}, pipelines: map[string]*pipeline{}}
	if os.Getenv("AKUNU_CUDA_PROFILE") == "1" {
		b.prof = &profiler{byName: map[string]*profStat{}}
		b.opt.NoGraphs = true
	}
	var dev int32
	if r := d.call(d.cuDeviceGet, uintptr(unsafe.Pointer(&dev)), uintptr(opt.Device)); r != 0 {
		return nil, fmt.Errorf("%w: device %d: %v", ErrUnavailable, opt.Device, d.err("cuDeviceGet", r))
	}
	var name [256]byte
	d.call(d.cuDeviceGetName, uintptr(unsafe.Pointer(&name[0])), 256, uintptr(dev))
	b.dev.Name = goString(&name[0])
	attr := func(a int) int {
		var v int32
		d.call(d.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a), uintptr(dev))
		return int(v)
	}
	b.dev.Major, b.dev.Minor, b.dev.SMs = attr(attrCCMajor), attr(attrCCMinor), attr(attrMultiprocessors)
	var mem uint64
	d.call(d.cuDeviceTotalMem, uintptr(unsafe.Pointer(&mem)), uintptr(dev))
	b.dev.Memory = int64(mem)
	var ver int32
	d.call(d.cuDriverGetVersion, uintptr(unsafe.Pointer(&ver)))
	b.dev.Driver = int(ver)
	maj, mnr := d.version()
	b.dev.NVRTC = fmt.Sprintf("%s (%d.%d)", d.nvrtcPath, maj, mnr)
	b.arch = b.dev.Major*10 + b.dev.Minor
	b.pdl = !opt.NoPDL && d.cuLaunchKernelEx != 0 && b.arch >= 90
	b.attr.id = attrProgrammaticSerialization
	b.attr.value[0] = 1
	b.cfg.attrs, b.cfg.nattrs = &b.attr, 1
	if r := d.call(d.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&b.ctx)), uintptr(dev)); r != 0 {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, d.err("cuDevicePrimaryCtxRetain", r))
	}
	if r := d.call(d.cuCtxSetCurrent, b.ctx); r != 0 {
		return nil, d.err("cuCtxSetCurrent", r)
	}
	if r := d.call(d.cuStreamCreate, uintptr(unsafe.Pointer(&b.strm)), 0); r != 0 {
		return nil, d.err("cuStreamCreate", r)
	}
	switch opt.CacheDir {
	case "":
		b.cache.dir = defaultCacheDir()
	case "off":
	default:
		b.cache.dir = opt.CacheDir
	}
	return b, nil
}

// enter makes the backend's context current on this goroutine's thread,
// locked until the returned function runs.
// (Through the backend's argument array: driver.call's variadic list
// would be one allocation per call, and enter runs on every Encode,
// Commit and Wait.)
func (b *Backend) enter() func() {
	goruntime.LockOSThread()
	b.args[0] = b.ctx
	b.callArgs(b.d.cuCtxSetCurrent, 1)
	return goruntime.UnlockOSThread
}

// Name is "cuda".
func (b *Backend) Name() string { return "cuda" }

// DecodeRows is how many sequences' next tokens the runtime replays as
// decode steps, one a row (Options.DecodeRows where set): for a plan whose
// batch programs' small GEMMs read most of their weight bytes in the
// planar layout (simd_gemm_small_*_planar: the decode GEMV's body over
// each row, the weights read once for all), 1: on an H100 two sequences
// through them ran at 1751–1802 tok/s in all on the 0.6B Q4_0 shape and
// 543–545 on the 8B, against 1898–1900 and 511–524 as decode steps, and
// from 4 they are faster by far. Otherwise DefaultDecodeRows.
func (b *Backend) DecodeRows(p *plans.Plan) int {
	if b.opt.DecodeRows != 0 {
		return b.opt.DecodeRows
	}
	if planarShare(p) >= 0.5 {
		return 1
	}
	return DefaultDecodeRows
}

// SplitRows is the rows a replay of more rows, and at most twice as many,
// is cut into (Options.SplitRows where set): for a plan whose batch
// programs' small GEMMs are mostly planar (as DecodeRows has it), 8, their
// largest. A replay of 9 to 16 rows otherwise takes batch.16's tiled
// GEMM, whose replay costs about the same whatever its rows (on an H100
// the 8B Q4_0 shape at 9 sequences 469–472 tok/s in all, at 16 835–838:
// 19 ms a step either way) where 8 planar rows take half of it (861–872
// tok/s: 9.3 ms). Otherwise 0: the small GEMMs over the file's layout are
// no faster a row than the tiled one.
func (b *Backend) SplitRows(p *plans.Plan) int {
	switch {
	case b.opt.SplitRows < 0:
		return 0
	case b.opt.SplitRows > 0:
		return b.opt.SplitRows
	case planarShare(p) >= 0.5:
		return 8
	}
	return 0
}

// planarShare is the share of the weight bytes that the small GEMMs of
// p's batch programs read in the planar layout.
func planarShare(p *plans.Plan) float64 {
	var planar, all uint64
	for i := range p.Programs {
		pr := &p.Programs[i]
		if pr.Kind != plans.KindBatch {
			continue
		}
		for j := range pr.Commands {
			c := &pr.Commands[j]
			if int(c.Pipeline) >= len(p.Pipelines) {
				continue
			}
			k := p.Pipelines[c.Pipeline].Kernel
			if !strings.HasPrefix(k, "simd_gemm_small_") {
				continue
			}
			n := uint64(0)
			for _, b := range c.Bindings {
				if b.Slot == 0 && int(b.Buffer) < len(p.Buffers) { // w
					n = p.Buffers[b.Buffer].Size
				}
			}
			all += n
			if strings.Contains(k, "_planar") {
				planar += n
			}
		}
	}
	if all == 0 {
		return 0
	}
	return float64(planar) / float64(all)
}

// Device describes the GPU.
func (b *Backend) Device() Device { return b.dev }

// CopyBandwidth measures the GPU memory's bandwidth as a device-to-device
// copy of 256 MiB sees it, counting the bytes read and the bytes written
// (the best of 5 copies, timed with events): the roofline a decode's
// weight reads are held to. It uses 512 MiB of device memory for the
// moment it runs.
func (b *Backend) CopyBandwidth() (float64, error) {
	const n = 256 << 20
	defer b.enter()()
	var src, dst uint64
	if r := b.d.call(b.d.cuMemAlloc, uintptr(unsafe.Pointer(&src)), n); r != 0 {
		return 0, b.d.err("cuMemAlloc", r)
	}
	defer b.d.call(b.d.cuMemFree, uintptr(src))
	if r := b.d.call(b.d.cuMemAlloc, uintptr(unsafe.Pointer(&dst)), n); r != 0 {
		return 0, b.d.err("cuMemAlloc", r)
	}
	defer b.d.call(b.d.cuMemFree, uintptr(dst))
	var e0, e1 uintptr
	b.d.call(b.d.cuEventCreate, uintptr(unsafe.Pointer(&e0)), 0)
	b.d.call(b.d.cuEventCreate, uintptr(unsafe.Pointer(&e1)), 0)
	defer b.d.call(b.d.cuEventDestroy, e0)
	defer b.d.call(b.d.cuEventDestroy, e1)
	best := 0.0
	for range 6 { // the first warms up
		b.d.call(b.d.cuEventRecord, e0, b.strm)
		if r := b.d.call(b.d.cuMemcpyDtoDAsync, uintptr(dst), uintptr(src), n, b.strm); r != 0 {
			return 0, b.d.err("cuMemcpyDtoDAsync", r)
		}
		b.d.call(b.d.cuEventRecord, e1, b.strm)
		if r := b.d.call(b.d.cuEventSynchronize, e1); r != 0 {
			return 0, b.d.err("cuEventSynchronize", r)
		}
		var ms float32
		b.d.call(b.d.cuEventElapsedTime, uintptr(unsafe.Pointer(&ms)), e0, e1)
		if ms > 0 {
			best = max(best, 2*n/(float64(ms)/1e3))
		}
	}
	return best, nil
}

// Uploaded is the weight bytes Map copied to the GPU and the time it took.
func (b *Backend) Uploaded() (int64, time.Duration) { return b.uploaded, b.uploadTime }

func (b *Backend) add(p uint64, size int) device.Buffer {
	e := dbuf{ptr: p, size: size}
	if n := len(b.free); n > 0 {
		i := b.free[n-1]
		b.free = b.free[:n-1]
		b.bufs[i] = e
		return device.NewBuffer(i+1, size)
	}
	b.bufs = append(b.bufs, e)
	return device.NewBuffer(len(b.bufs), size)
}

func (b *Backend) ref(h device.Buffer) (dbuf, bool) {
	if i := h.ID() - 1; i >= 0 && i < len(b.bufs) && b.bufs[i].ptr != 0 {
		return b.bufs[i], true
	}
	return dbuf{}, false
}

func (b *Backend) alloc(size int) (uint64, error) {
	n := size
	if n < 256 {
		n = 256
	}
	var p uint64
	if r := b.d.call(b.d.cuMemAlloc, uintptr(unsafe.Pointer(&p)), uintptr(n)); r != 0 {
		return 0, fmt.Errorf("cuda: allocating %d bytes: %w", size, b.d.err("cuMemAlloc", r))
	}
	return p, nil
}

// Alloc returns size zeroed bytes of device memory.
func (b *Backend) Alloc(size int) (device.Buffer, error) {
	defer b.enter()()
	p, err := b.alloc(size)
	if err != nil {
		return device.Buffer{}, err
	}
	if r := b.d.call(b.d.cuMemsetD8, uintptr(p), 0, uintptr(size)); r != 0 {
		b.d.call(b.d.cuMemFree, uintptr(p))
		return device.Buffer{}, b.d.err("cuMemsetD8", r)
	}
	return b.add(p, size), nil
}

// Map uploads a weight to device memory.
func (b *Backend) Map(data []byte) (device.Buffer, error) {
	defer b.enter()()
	p, err := b.alloc(len(data))
	if err != nil {
		return device.Buffer{}, err
	}
	if len(data) > 0 {
		t := time.Now()
		if r := b.d.call(b.d.cuMemcpyHtoD, uintptr(p), uintptr(unsafe.Pointer(&data[0])), uintptr(len(data))); r != 0 {
			b.d.call(b.d.cuMemFree, uintptr(p))
			return device.Buffer{}, fmt.Errorf("cuda: uploading a weight of %d bytes: %w", len(data), b.d.err("cuMemcpyHtoD", r))
		}
		b.uploadTime += time.Since(t)
		b.uploaded += int64(len(data))
	}
	return b.add(p, len(data)), nil
}

// Derive builds a derived weight on the device: concat_rows, and
// repack:q4_0_planar and q6_k_planar (the sources stacked and split into the planar
// layout the planar GEMVs read: kernels.ToPlanar, a source at a time
// through host memory); the CPU backend's x16 layouts are its own.
func (b *Backend) Derive(recipe string, srcs []device.Buffer, size, rowElems int) (device.Buffer, error) {
	for _, dt := range []dtype.Type{dtype.Q4_0, dtype.Q6_K} {
		if recipe == kernels.PlanarRecipe(dt) {
			return b.derivePlanar(dt, srcs, size)
		}
	}
	if recipe == kernels.PlanarPairsRecipe(dtype.Q4_0) {
		return b.derivePairs(dtype.Q4_0, srcs, size, rowElems)
	}
	if recipe != plans.RecipeConcatRows {
		return device.Buffer{}, fmt.Errorf("cuda: recipe %q (a weight layout of another backend; compile the plan for an NVIDIA or Apple chip): %w", recipe, ErrUnsupported)
	}
	total := 0
	for _, s := range srcs {
		e, ok := b.ref(s)
		if !ok {
			return device.Buffer{}, fmt.Errorf("cuda: concat_rows: source buffer %d was not made by this backend", s.ID())
		}
		total += e.size
	}
	if total != size {
		return device.Buffer{}, fmt.Errorf("cuda: concat_rows: sources give %d of %d bytes", total, size)
	}
	defer b.enter()()
	p, err := b.alloc(size)
	if err != nil {
		return device.Buffer{}, err
	}
	off := uint64(0)
	for _, s := range srcs {
		e, _ := b.ref(s)
		if r := b.d.call(b.d.cuMemcpyDtoD, uintptr(p+off), uintptr(e.ptr), uintptr(e.size)); r != 0 {
			b.d.call(b.d.cuMemFree, uintptr(p))
			return device.Buffer{}, fmt.Errorf("cuda: concat_rows: %w", b.d.err("cuMemcpyDtoD", r))
		}
		off += uint64(e.size)
	}
	return b.add(p, size), nil
}

// derivePlanar builds repack:<dt>_planar: each source read back to the
// host, split into its quants and scales there (kernels.ToPlanar) and
// written into the two planes of the stacked matrix.
func (b *Backend) derivePlanar(dt dtype.Type, srcs []device.Buffer, size int) (device.Buffer, error) {
	recipe := kernels.PlanarRecipe(dt)
	total, largest := 0, 0
	for _, s := range srcs {
		e, ok := b.ref(s)
		if !ok {
			return device.Buffer{}, fmt.Errorf("cuda: %s: source buffer %d was not made by this backend", recipe, s.ID())
		}
		total, largest = total+e.size, max(largest, e.size)
	}
	quants, err := kernels.PlanarQuantBytes(dt, size) // where the scale plane starts
	if err == nil && total != size {
		err = fmt.Errorf("sources give %d of %d bytes", total, size)
	}
	if err != nil {
		return device.Buffer{}, fmt.Errorf("cuda: %s: %w", recipe, err)
	}
	dst, err := b.Alloc(size)
	if err != nil {
		return device.Buffer{}, err
	}
	host, p := make([]byte, largest), make([]byte, largest)
	atQ, atS := 0, quants // where this source's quants and scales go
	for _, s := range srcs {
		e, _ := b.ref(s)
		h, q := host[:e.size], p[:e.size]
		var n int // this source's quant bytes
		if err = b.Read(h, s, 0); err == nil {
			err = kernels.ToPlanar(dt, q, h)
		}
		if err == nil {
			n, err = kernels.PlanarQuantBytes(dt, e.size)
		}
		if err == nil {
			err = b.Write(dst, atQ, q[:n])
		}
		if err == nil {
			err = b.Write(dst, atS, q[n:])
		}
		if err != nil {
			b.Free(dst)
			return device.Buffer{}, fmt.Errorf("cuda: %s: %w", recipe, err)
		}
		atQ, atS = atQ+n, atS+e.size-n
	}
	return dst, nil
}

// derivePairs builds repack:<dt>_planar_pairs: a gate and an up weight
// read back to the host, their rows interleaved and taken to the planar
// layout there (kernels.InterleaveRows, kernels.ToPlanar), written once.
func (b *Backend) derivePairs(dt dtype.Type, srcs []device.Buffer, size, rowElems int) (device.Buffer, error) {
	recipe := kernels.PlanarPairsRecipe(dt)
	if len(srcs) != 2 || rowElems <= 0 || rowElems%int(dt.BlockSize()) != 0 {
		return device.Buffer{}, fmt.Errorf("cuda: %s: %d sources of %d-element rows: want a gate and an up weight: %w", recipe, len(srcs), rowElems, ErrUnsupported)
	}
	var halves [2][]byte
	for i, s := range srcs {
		e, ok := b.ref(s)
		if !ok || 2*e.size != size {
			return device.Buffer{}, fmt.Errorf("cuda: %s: source %d is not half of %d bytes: %w", recipe, i, size, ErrUnsupported)
		}
		halves[i] = make([]byte, e.size)
		if err := b.Read(halves[i], s, 0); err != nil {
			return device.Buffer{}, fmt.Errorf("cuda: %s: %w", recipe, err)
		}
	}
	rows, p := make([]byte, size), make([]byte, size)
	err := kernels.InterleaveRows(rows, halves[0], halves[1], rowElems/int(dt.BlockSize())*int(dt.BlockBytes()))
	if err == nil {
		err = kernels.ToPlanar(dt, p, rows)
	}
	if err != nil {
		return device.Buffer{}, fmt.Errorf("cuda: %s: %w", recipe, err)
	}
	dst, err := b.Alloc(size)
	if err != nil {
		return device.Buffer{}, err
	}
	if err := b.Write(dst, 0, p); err != nil {
		b.Free(dst)
		return device.Buffer{}, fmt.Errorf("cuda: %s: %w", recipe, err)
	}
	return dst, nil
}

// Free releases a buffer.
func (b *Backend) Free(h device.Buffer) {
	e, ok := b.ref(h)
	if !ok {
		return
	}
	defer b.enter()()
	// Work still in flight may read it (a derive's device copies, which do
	// not wait for themselves): wait for everything first. Frees come at
	// load and close, not per token.
	b.d.call(b.d.cuCtxSynchronize)
	b.d.call(b.d.cuMemFree, uintptr(e.ptr))
	b.bufs[h.ID()-1] = dbuf{}
	b.free = append(b.free, h.ID()-1)
}

// Write copies src into dst at off. The copy is ordered after the work
// already submitted (the stream is a blocking one), which the engine
// never needs: it writes only while nothing in flight uses the buffer.
func (b *Backend) Write(dst device.Buffer, off int, src []byte) error {
	e, ok := b.ref(dst)
	if !ok || off < 0 || off > e.size-len(src) {
		return fmt.Errorf("cuda: write of %d bytes at %d: out of range", len(src), off)
	}
	if len(src) == 0 {
		return nil
	}
	defer b.enter()()
	b.args[0], b.args[1], b.args[2] = uintptr(e.ptr)+uintptr(off), uintptr(unsafe.Pointer(&src[0])), uintptr(len(src))
	if r := b.callArgs(b.d.cuMemcpyHtoD, 3); r != 0 {
		return b.d.err("cuMemcpyHtoD", r)
	}
	goruntime.KeepAlive(src)
	return nil
}

// Read copies src's bytes from off into dst.
func (b *Backend) Read(dst []byte, src device.Buffer, off int) error {
	e, ok := b.ref(src)
	if !ok || off < 0 || off > e.size-len(dst) {
		return fmt.Errorf("cuda: read of %d bytes at %d: out of range", len(dst), off)
	}
	if len(dst) == 0 {
		return nil
	}
	defer b.enter()()
	b.args[0], b.args[1], b.args[2] = uintptr(unsafe.Pointer(&dst[0])), uintptr(e.ptr)+uintptr(off), uintptr(len(dst))
	if r := b.callArgs(b.d.cuMemcpyDtoH, 3); r != 0 {
		return b.d.err("cuMemcpyDtoH", r)
	}
	goruntime.KeepAlive(dst)
	return nil
}

// Copy records a device-side copy on the stream.
func (b *Backend) Copy(dst device.Buffer, dstOff int, src device.Buffer, srcOff int, n int) {
	s, ok1 := b.ref(src)
	d, ok2 := b.ref(dst)
	if !ok1 || !ok2 || n <= 0 || srcOff < 0 || dstOff < 0 || srcOff > s.size-n || dstOff > d.size-n {
		b.fail(fmt.Errorf("cuda: copy of %d bytes from [%d:] of %d to [%d:] of %d: out of range", n, srcOff, s.size, dstOff, d.size))
		return
	}
	defer b.enter()()
	b.args[0], b.args[1], b.args[2], b.args[3] = uintptr(d.ptr)+uintptr(dstOff), uintptr(s.ptr)+uintptr(srcOff), uintptr(n), b.strm
	if r := b.callArgs(b.d.cuMemcpyDtoDAsync, 4); r != 0 {
		b.fail(b.d.err("cuMemcpyDtoDAsync", r))
	}
}

func (b *Backend) callArgs(fn uintptr, n int) int {
	r, _, _ := purego.SyscallN(fn, b.args[:n]...)
	return int(int32(r))
}

func (b *Backend) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

func (b *Backend) event() uintptr {
	if n := len(b.events); n > 0 {
		e := b.events[n-1]
		b.events = b.events[:n-1]
		return e
	}
	var e uintptr
	const disableTiming = 2
	if r := b.d.call(b.d.cuEventCreate, uintptr(unsafe.Pointer(&e)), disableTiming); r != 0 {
		b.fail(b.d.err("cuEventCreate", r))
		return 0
	}
	return e
}

// Commit submits what was encoded: the stream already runs it; an event
// marks where this submission ends.
func (b *Backend) Commit() {
	defer b.enter()()
	e := b.event()
	if e == 0 {
		return
	}
	b.args[0], b.args[1] = e, b.strm
	if r := b.callArgs(b.d.cuEventRecord, 2); r != 0 {
		b.fail(b.d.err("cuEventRecord", r))
	}
	b.inflight = append(b.inflight, e)
}

// Wait blocks until everything submitted has run.
func (b *Backend) Wait() error {
	defer b.enter()()
	b.args[0] = b.strm
	if r := b.callArgs(b.d.cuStreamSynchronize, 1); r != 0 {
		b.fail(b.d.err("cuStreamSynchronize", r))
	}
	b.events = append(b.events, b.inflight...)
	b.inflight = b.inflight[:0]
	err := b.err
	b.err = nil
	return err
}

// WaitOldest blocks until the oldest submission not yet waited for has run.
func (b *Backend) WaitOldest() error {
	if len(b.inflight) == 0 {
		return b.Wait()
	}
	defer b.enter()()
	e := b.inflight[0]
	copy(b.inflight, b.inflight[1:])
	b.inflight = b.inflight[:len(b.inflight)-1]
	b.args[0] = e
	if r := b.callArgs(b.d.cuEventSynchronize, 1); r != 0 {
		b.fail(b.d.err("cuEventSynchronize", r))
	}
	b.events = append(b.events, e)
	err := b.err
	b.err = nil
	return err
}

// Close releases the backend's memory, modules and stream.
func (b *Backend) Close() {
	if b.d == nil {
		return
	}
	_ = b.Wait()
	if b.prof != nil {
		b.prof.report(os.Stderr)
	}
	defer b.enter()()
	for i := range b.progs {
		if b.progs[i] != nil {
			b.progs[i].release(b)
		}
	}
	for i, e := range b.bufs {
		if e.ptr != 0 {
			b.d.call(b.d.cuMemFree, uintptr(e.ptr))
			b.bufs[i] = dbuf{}
		}
	}
	for _, m := range b.modules {
		b.d.call(b.d.cuModuleUnload, m)
	}
	for _, e := range b.events {
		b.d.call(b.d.cuEventDestroy, e)
	}
	b.d.call(b.d.cuStreamDestroy, b.strm)
	b.d = nil
}

// ---- pipelines

var (
	entriesOnce sync.Once
	entries     map[string]*gpu.Entry
	entriesErr  error
)

func gpuEntries() (map[string]*gpu.Entry, error) {
	entriesOnce.Do(func() { entries, entriesErr = gpu.Entries() })
	return entries, entriesErr
}

// compileAll compiles the pipelines cmds need that are not loaded yet:
// the CUDA source of each from kernels/gpu, from the disk cache or NVRTC
// (in parallel), then loaded into the context.
func (b *Backend) compileAll(cmds []device.Command) error {
	es, err := gpuEntries()
	if err != nil {
		return err
	}
	type job struct {
		key, name, src, ckey string
		entry                *gpu.Entry
		cubin                []byte
		err                  error
	}
	var jobs []*job
	seen := map[string]bool{}
	maj, mnr := b.d.version()
	for i := range cmds {
		dc := &cmds[i]
		key := pipelineKey(dc.Pipeline)
		if b.pipelines[key] != nil || seen[key] {
			continue
		}
		seen[key] = true
		e, ok := es[dc.Kernel.Name]
		if !ok {
			return fmt.Errorf("cuda: [%d] %s: kernel %s has no GPU body (kernels/gpu): the plan was compiled for a CPU; compile it for an NVIDIA or Apple chip (--chip h100-sxm): %w", i, dc.Label, dc.Kernel.Name, ErrUnsupported)
		}
		values := map[string]uint32{}
		for _, c := range dc.Pipeline.Constants {
			for _, kc := range dc.Kernel.Constants {
				if uint32(kc.Index) == c.Index {
					values[kc.Name] = c.Value
				}
			}
		}
		src, err := gpu.CUDA([]string{e.Name}, values, es)
		if err != nil {
			return fmt.Errorf("cuda: pipeline %s: %w", key, err)
		}
		jobs = append(jobs, &job{key: key, name: e.Name, src: src, ckey: cacheKey(src, b.arch, maj, mnr), entry: e})
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, goruntime.NumCPU())
	for _, j := range jobs {
		if j.cubin = b.cache.get(j.ckey); j.cubin != nil || b.modules[j.ckey] != 0 {
			continue
		}
		wg.Add(1)
		go func(j *job) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			j.cubin, j.err = b.d.compile(j.name+".cu", j.src, b.arch)
			if j.err == nil {
				b.cache.put(j.ckey, j.cubin)
			}
		}(j)
	}
	wg.Wait()
	defer b.enter()()
	for _, j := range jobs {
		if j.err != nil {
			return fmt.Errorf("cuda: pipeline %s: %w", j.key, j.err)
		}
		mod := b.modules[j.ckey]
		if mod == 0 {
			if r := b.d.call(b.d.cuModuleLoadData, uintptr(unsafe.Pointer(&mod)), uintptr(unsafe.Pointer(&j.cubin[0]))); r != 0 {
				return fmt.Errorf("cuda: pipeline %s: %w", j.key, b.d.err("cuModuleLoadData", r))
			}
			b.modules[j.ckey] = mod
		}
		var fn uintptr
		cname := cstr(j.name)
		if r := b.d.call(b.d.cuModuleGetFunction, uintptr(unsafe.Pointer(&fn)), mod, uintptr(unsafe.Pointer(&cname[0]))); r != 0 {
			return fmt.Errorf("cuda: pipeline %s: %w", j.key, b.d.err("cuModuleGetFunction", r))
		}
		var mt int32
		b.d.call(b.d.cuFuncGetAttribute, uintptr(unsafe.Pointer(&mt)), funcMaxThreads, fn)
		b.pipelines[j.key] = &pipeline{key: j.key, fn: fn, maxThreads: int(mt), entry: j.entry}
		if b.prof != nil {
			b.prof.note(b, j.name, fn)
		}
	}
	return nil
}

// ---- programs

// program is a bound list of commands and its parameter memory: for each
// of generations × reps step slots, every command's parameter bytes (and
// bounds tail), 16-byte aligned, in device memory and in a pinned host
// mirror that Encode fills and uploads with one copy.
type program struct {
	cmds   []*command
	graphs map[graphKey]*graph
	stride int // bytes of one step's parameters
	reps   int // step slots per generation
	gen    int // the generation the next Encode uses
	genEv  [generations]uintptr
	dev    uint64
	host   []byte // the pinned mirror (cuMemAllocHost)
	hostP  unsafe.Pointer
	vals   []uint64 // a step's binding patches' values (bindingValues), reused
}

// graphKey names a captured step: its index in the chain, the parameter
// generation its launches point into, and the hash of its binding
// patches' values (sigHash of bindingValues: the KV sequence slot), so
// that sequences that take turns (a server's batched decode, a step each)
// keep a graph each rather than capturing one again at every turn (about
// 2 ms).
type graphKey struct {
	step, gen int
	sig       uint64
}

// graph is a captured step: every launch of one step, one graph launch.
// Its kernels' arguments are fixed at capture; the parameters they point
// to are uploaded before each chain. sig holds the binding patches'
// values it was captured with: a step whose values differ (a hash
// collision) is captured again.
type graph struct {
	exec uintptr
	sig  []uint64
}

type slot struct {
	ptr, off uint64
	size     uint64
	bound    bool
}

// command is one bound command: its function, launch, buffers by kernel
// slot, parameter bytes and the kernel arguments in the entry's order.
type command struct {
	label     string
	kernel    string
	fn        uintptr
	grid, blk [3]uint32
	shmem     uint32
	slots     []slot
	order     []int // kernel slot of each buffer argument, in the entry's order
	params    []byte
	psize     int
	bounds    bool
	patches   []device.Patch
	off       int  // offset of its parameters in a step slot
	early     bool // launched to start before the command before it ends (Options.NoPDL)
	skip      bool // left out (Options.Skip)
	vals      [maxArgs]uint64
	ptrs      [maxArgs]uintptr // kernelParams: the addresses of vals
	nargs     int
}

// Bind compiles (or finds) the commands' pipelines and prepares them.
func (b *Backend) Bind(cmds []device.Command) (device.Program, error) {
	if err := b.compileAll(cmds); err != nil {
		return device.Program{}, err
	}
	p := &program{}
	skipped := 0
	for i := range cmds {
		c, err := b.bindCommand(&cmds[i])
		if err != nil {
			return device.Program{}, fmt.Errorf("cuda: [%d] %s: %w", i, cmds[i].Label, err)
		}
		c.off = p.stride
		p.stride += (len(c.params) + 15) &^ 15
		p.cmds = append(p.cmds, c)
		if c.skip {
			skipped++
		}
	}
	if skipped > 0 {
		fmt.Fprintf(os.Stderr, "akunu: AKUNU_CUDA_SKIP leaves %d of a program's %d commands out: its output is wrong\n", skipped, len(cmds))
	}
	if p.stride == 0 {
		p.stride = 16
	}
	defer b.enter()()
	if err := b.grow(p, 1); err != nil {
		return device.Program{}, err
	}
	if n := len(b.pfree); n > 0 {
		i := b.pfree[n-1]
		b.pfree = b.pfree[:n-1]
		b.progs[i] = p
		return device.NewProgram(i + 1), nil
	}
	b.progs = append(b.progs, p)
	return device.NewProgram(len(b.progs)), nil
}

func (b *Backend) bindCommand(dc *device.Command) (*command, error) {
	if dc.DispatchThreads {
		return nil, fmt.Errorf("a grid counted in threads (Metal's dispatchThreads), which the compiler does not emit: %w", ErrUnsupported)
	}
	pl := b.pipelines[pipelineKey(dc.Pipeline)]
	c := &command{label: dc.Label, kernel: dc.Kernel.Name, fn: pl.fn, shmem: dc.TGMem, grid: dc.Grid, blk: dc.Threadgroup,
		slots: make([]slot, len(dc.Slots)), psize: len(dc.Params), bounds: device.BoundsTail(dc.Kernel)}
	if b.opt.Skip != nil && b.opt.Skip.MatchString(dc.Label+" "+dc.Kernel.Name) {
		c.skip = true
	}
	if t := int(dc.Threadgroup[0] * dc.Threadgroup[1] * dc.Threadgroup[2]); pl.maxThreads > 0 && t > pl.maxThreads {
		return nil, fmt.Errorf("%d threads per block; %s allows %d: %w", t, pl.key, pl.maxThreads, ErrUnsupported)
	}
	if dc.TGMem > 48<<10 {
		if r := b.d.call(b.d.cuFuncSetAttribute, pl.fn, funcMaxDynamicShared, uintptr(dc.TGMem)); r != 0 {
			return nil, fmt.Errorf("%d bytes of shared memory: %w", dc.TGMem, b.d.err("cuFuncSetAttribute", r))
		}
	}
	for i, s := range dc.Slots {
		if !s.Buf.Valid() {
			continue
		}
		e, ok := b.ref(s.Buf)
		if !ok {
			return nil, fmt.Errorf("slot %d: buffer %d was not made by this backend: %w", i, s.Buf.ID(), ErrUnsupported)
		}
		c.slots[i] = slot{ptr: e.ptr, off: s.Offset, size: uint64(e.size), bound: true}
	}
	n := len(dc.Params)
	if c.bounds {
		n += 8 * len(c.slots)
	}
	c.params = make([]byte, n)
	copy(c.params, dc.Params)
	if c.bounds {
		for i := range c.slots {
			c.setBound(i)
		}
	}
	for _, p := range pl.entry.Params {
		if p.Kind == gpu.Buffer {
			c.order = append(c.order, p.Slot)
		}
	}
	c.nargs = len(c.order) + 1
	if c.nargs > maxArgs {
		return nil, fmt.Errorf("%d kernel arguments (at most %d): %w", c.nargs, maxArgs, ErrUnsupported)
	}
	for i := range c.nargs {
		c.ptrs[i] = uintptr(unsafe.Pointer(&c.vals[i]))
	}
	c.patches = append([]device.Patch(nil), dc.Patches...)
	c.early = b.pdl && !lateFamilies[pl.entry.File]
	return c, nil
}

// lateFamilies are the kernel families launched only once the command
// before has ended, with programmatic dependent launch on: the prefill
// GEMMs and attention: started early, they made a 512-token prefill
// 4–17% slower on an H100; launched late, prefill is as fast as without
// programmatic launch, and decode keeps its gain (docs/cuda.md).
var lateFamilies = map[string]bool{"gemm.h": true, "gemm_id.h": true, "attention_prefill.h": true}

// grow makes room for reps step slots per generation (only a longer
// chain than any before allocates).
func (b *Backend) grow(p *program, reps int) error {
	if reps <= p.reps {
		return nil
	}
	for g := range p.genEv {
		if p.genEv[g] != 0 {
			b.d.call(b.d.cuEventSynchronize, p.genEv[g])
		}
	}
	p.release(b)
	size := generations * reps * p.stride
	var dev uint64
	if r := b.d.call(b.d.cuMemAlloc, uintptr(unsafe.Pointer(&dev)), uintptr(size)); r != 0 {
		return fmt.Errorf("cuda: parameter memory of %d bytes: %w", size, b.d.err("cuMemAlloc", r))
	}
	var host unsafe.Pointer
	if r := b.d.call(b.d.cuMemAllocHost, uintptr(unsafe.Pointer(&host)), uintptr(size)); r != 0 {
		b.d.call(b.d.cuMemFree, uintptr(dev))
		return fmt.Errorf("cuda: pinned parameter memory of %d bytes: %w", size, b.d.err("cuMemAllocHost", r))
	}
	p.dev, p.hostP, p.host, p.reps = dev, host, unsafe.Slice((*byte)(host), size), reps
	for g := range p.genEv {
		if p.genEv[g] == 0 {
			var e uintptr
			b.d.call(b.d.cuEventCreate, uintptr(unsafe.Pointer(&e)), 2)
			p.genEv[g] = e
		}
	}
	return nil
}

func (p *program) release(b *Backend) {
	for k, gr := range p.graphs {
		if gr.exec != 0 {
			b.d.call(b.d.cuGraphExecDestroy, gr.exec)
		}
		delete(p.graphs, k)
	}
	if p.dev != 0 {
		b.d.call(b.d.cuMemFree, uintptr(p.dev))
		p.dev = 0
	}
	if p.hostP != nil {
		b.d.call(b.d.cuMemFreeHost, uintptr(p.hostP))
		p.hostP, p.host = nil, nil
	}
}

// Unbind releases a program.
func (b *Backend) Unbind(h device.Program) {
	i := h.ID() - 1
	if i < 0 || i >= len(b.progs) || b.progs[i] == nil {
		return
	}
	defer b.enter()()
	p := b.progs[i]
	for _, e := range p.genEv {
		if e != 0 {
			b.d.call(b.d.cuEventSynchronize, e)
			b.d.call(b.d.cuEventDestroy, e)
		}
	}
	p.release(b)
	b.progs[i] = nil
	b.pfree = append(b.pfree, i)
}

// SetParam writes v at byte at of command cmd's parameter struct.
func (b *Backend) SetParam(h device.Program, cmd, at, width int, v uint64) {
	i := h.ID() - 1
	if i < 0 || i >= len(b.progs) || b.progs[i] == nil || cmd < 0 || cmd >= len(b.progs[i].cmds) {
		return
	}
	b.progs[i].cmds[cmd].setParam(at, width, v)
}

func (c *command) setParam(at, width int, v uint64) { device.PutParam(c.params, c.psize, at, width, v) }

// SetParam and SetOffset make a command device.Patchable.
func (c *command) SetParam(at, width int, v uint64) { c.setParam(at, width, v) }

// SetOffset moves binding slot's offset (and its bound length).
func (c *command) SetOffset(slot int, off uint64) {
	c.slots[slot].off = off
	if c.bounds {
		c.setBound(slot)
	}
}

func (c *command) setBound(i int) {
	sl := &c.slots[i]
	var n uint64
	if sl.bound && sl.off <= sl.size {
		n = sl.size - sl.off
	}
	binary.LittleEndian.PutUint64(c.params[c.psize+8*i:], n)
}

// patch writes step s's values into the parameter bytes and the binding
// offsets (device.Patch semantics).
func (c *command) patch(s plans.Step) { device.ApplyPatches(c.patches, s, c) }

// Encode launches program h once per step, in order, on the stream: the
// steps' parameters are patched into the pinned mirror and uploaded with
// one copy, then each step runs as its captured CUDA graph (captured the
// first time a chain reaches that step slot) or, with SyncEachCommand or
// NoGraphs, command by command from the host, each kernel reading its
// step's parameters from device memory. It allocates nothing once the
// steps' graphs and the parameter memory exist.
func (b *Backend) Encode(h device.Program, steps []plans.Step) {
	i := h.ID() - 1
	if i < 0 || i >= len(b.progs) || b.progs[i] == nil || len(steps) == 0 {
		return
	}
	p := b.progs[i]
	defer b.enter()()
	if err := b.grow(p, len(steps)); err != nil {
		b.fail(err)
		return
	}
	g := p.gen
	p.gen = (p.gen + 1) % generations
	b.args[0] = p.genEv[g]
	if r := b.callArgs(b.d.cuEventSynchronize, 1); r != 0 {
		b.fail(b.d.err("cuEventSynchronize", r))
		return
	}
	base := g * p.reps * p.stride
	for s := range steps {
		at := base + s*p.stride
		for _, c := range p.cmds {
			c.patch(steps[s])
			copy(p.host[at+c.off:], c.params)
		}
	}
	b.args[0], b.args[1], b.args[2], b.args[3] = uintptr(p.dev)+uintptr(base), uintptr(p.hostP)+uintptr(base), uintptr(len(steps)*p.stride), b.strm
	if r := b.callArgs(b.d.cuMemcpyHtoDAsync, 4); r != 0 {
		b.fail(b.d.err("cuMemcpyHtoDAsync", r))
		return
	}
	if b.opt.SyncEachCommand || b.opt.NoGraphs {
		if err := b.launchAll(p, steps, base); err != nil {
			b.fail(err)
			return
		}
	} else {
		b.launchGraph(p, g, steps, base)
	}
	b.args[0], b.args[1] = p.genEv[g], b.strm
	if r := b.callArgs(b.d.cuEventRecord, 2); r != 0 {
		b.fail(b.d.err("cuEventRecord", r))
	}
	if b.prof != nil {
		b.collect()
	}
}

// launchAll launches every command of every step on the stream.
func (b *Backend) launchAll(p *program, steps []plans.Step, base int) error {
	for s := range steps {
		if err := b.launchStep(p, steps[s], s, base+s*p.stride); err != nil {
			return err
		}
	}
	return nil
}

// launchStep launches every command of one step (the s-th of its chain,
// its parameters at byte at of the parameter memory) on the stream, or
// into the graph being captured from it.
func (b *Backend) launchStep(p *program, step plans.Step, s, at int) error {
	for _, c := range p.cmds {
		if c.skip {
			continue
		}
		c.patch(step)
		for k, sl := range c.order {
			x := &c.slots[sl]
			c.vals[k] = 0
			if x.bound {
				c.vals[k] = x.ptr + x.off
			}
		}
		c.vals[len(c.order)] = p.dev + uint64(at) + uint64(c.off)
		fn, n, name := b.d.cuLaunchKernel, 11, "cuLaunchKernel"
		if c.early {
			b.cfg.grid, b.cfg.block, b.cfg.shmem, b.cfg.stream = c.grid, c.blk, c.shmem, b.strm
			b.args[0], b.args[1], b.args[2], b.args[3] = uintptr(unsafe.Pointer(&b.cfg)), c.fn, uintptr(unsafe.Pointer(&c.ptrs[0])), 0
			fn, n, name = b.d.cuLaunchKernelEx, 4, "cuLaunchKernelEx"
		} else {
			b.args[0] = c.fn
			b.args[1], b.args[2], b.args[3] = uintptr(c.grid[0]), uintptr(c.grid[1]), uintptr(c.grid[2])
			b.args[4], b.args[5], b.args[6] = uintptr(c.blk[0]), uintptr(c.blk[1]), uintptr(c.blk[2])
			b.args[7], b.args[8], b.args[9], b.args[10] = uintptr(c.shmem), b.strm, uintptr(unsafe.Pointer(&c.ptrs[0])), 0
		}
		var r int
		if b.prof != nil {
			r = b.around(c.kernel, func() int { return b.callArgs(fn, n) })
		} else {
			r = b.callArgs(fn, n)
		}
		if r != 0 {
			return fmt.Errorf("cuda: %s (step %d): %w", c.label, s, b.d.err(name, r))
		}
		if b.opt.SyncEachCommand {
			b.args[0] = b.strm
			if r := b.callArgs(b.d.cuStreamSynchronize, 1); r != 0 {
				return fmt.Errorf("cuda: %s (step %d): %w", c.label, s, b.d.err("cuStreamSynchronize", r))
			}
		}
	}
	return nil
}

// launchGraph launches the chain as one graph per step: step s of
// generation gen's graph launches every command with its parameters in
// step slot s. A step without a graph for its binding patches' values
// (graphKey) is captured first, for every generation at once, so that the
// first chain of a length pays the captures and later chains of any
// length up to it none. Past the graphs a program keeps, those of other
// binding values go first, then the remaining steps launch from the host.
func (b *Backend) launchGraph(p *program, gen int, steps []plans.Step, base int) {
	if p.graphs == nil {
		p.graphs = map[graphKey]*graph{}
	}
	for s := range steps {
		vals := p.bindingValues(steps[s])
		h := sigHash(vals)
		gr := p.graphs[graphKey{step: s, gen: gen, sig: h}]
		if gr == nil || !slices.Equal(gr.sig, vals) {
			if gr == nil && len(p.graphs)+generations > maxGraphs {
				p.dropGraphs(b, h)
			}
			if gr == nil && len(p.graphs)+generations > maxGraphs {
				// as many graphs as a program keeps: the rest from the host
				for t := s; t < len(steps); t++ {
					if err := b.launchStep(p, steps[t], t, base+t*p.stride); err != nil {
						b.fail(err)
						break
					}
				}
				return
			}
			for g := range generations {
				k := graphKey{step: s, gen: g, sig: h}
				og := p.graphs[k]
				if og == nil {
					og = &graph{}
					p.graphs[k] = og
				}
				if og.exec == 0 || !slices.Equal(og.sig, vals) {
					if err := b.capture(p, og, steps[s], vals, s, g*p.reps*p.stride+s*p.stride); err != nil {
						delete(p.graphs, k)
						b.fail(err)
						return
					}
				}
			}
			gr = p.graphs[graphKey{step: s, gen: gen, sig: h}]
		}
		b.args[0], b.args[1] = gr.exec, b.strm
		if r := b.callArgs(b.d.cuGraphLaunch, 2); r != 0 {
			b.fail(b.d.err("cuGraphLaunch", r))
			return
		}
	}
}

// bindingValues are step's binding patches' values, in command order, in
// the program's reused slice (one pass over the patches a step).
func (p *program) bindingValues(step plans.Step) []uint64 {
	p.vals = p.vals[:0]
	for _, c := range p.cmds {
		for k := range c.patches {
			if pt := &c.patches[k]; pt.Binding {
				p.vals = append(p.vals, pt.Value(step))
			}
		}
	}
	return p.vals
}

// sigHash is the FNV-1a hash of binding values.
func sigHash(vals []uint64) uint64 {
	h := uint64(14695981039346656037)
	for _, v := range vals {
		for i := 0; i < 64; i += 8 {
			h = (h ^ (v >> i & 0xff)) * 1099511628211
		}
	}
	return h
}

// dropGraphs destroys the graphs captured for binding values other than
// those hashing to keep (other sequence slots').
func (p *program) dropGraphs(b *Backend, keep uint64) {
	for k, gr := range p.graphs {
		if k.sig != keep {
			if gr.exec != 0 {
				b.d.call(b.d.cuGraphExecDestroy, gr.exec)
			}
			delete(p.graphs, k)
		}
	}
}

// capture records one step's launches into a graph and instantiates it.
func (b *Backend) capture(p *program, gr *graph, step plans.Step, vals []uint64, s, at int) error {
	if gr.exec != 0 {
		b.d.call(b.d.cuGraphExecDestroy, gr.exec)
		gr.exec = 0
	}
	if r := b.d.call(b.d.cuStreamBeginCapture, b.strm, captureRelaxed); r != 0 {
		return b.d.err("cuStreamBeginCapture", r)
	}
	lerr := b.launchStep(p, step, s, at)
	var cg uintptr
	r := b.d.call(b.d.cuStreamEndCapture, b.strm, uintptr(unsafe.Pointer(&cg)))
	if lerr != nil {
		return lerr
	}
	if r != 0 {
		return b.d.err("cuStreamEndCapture", r)
	}
	defer b.d.call(b.d.cuGraphDestroy, cg)
	if r := b.d.call(b.d.cuGraphInstantiate, uintptr(unsafe.Pointer(&gr.exec)), cg, 0); r != 0 {
		gr.exec = 0
		return b.d.err("cuGraphInstantiate", r)
	}
	gr.sig = append(gr.sig[:0], vals...)
	return nil
}

// pipelineKey is the pipeline's key in the plan, else the one derived.
func pipelineKey(p plans.Pipeline) string {
	if p.Key != "" {
		return p.Key
	}
	return plans.CacheKey(p.Kernel, p.Constants)
}
