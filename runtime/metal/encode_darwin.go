//go:build darwin

package metal

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"unsafe"

	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/device"
	"github.com/ebitengine/purego"
)

// Bind prepares commands that device.Resolve accepted as one program:
// each command's pipeline (created and cached by its key the first time),
// its MTLBuffers and inline bytes, and its label as an NSString (the name
// a failed command buffer reports).
func (b *Backend) Bind(cmds []device.Command) (device.Program, error) {
	prog, err := bindProgram(cmds, b.pipeline, &b.bufs)
	if err != nil {
		return device.Program{}, err
	}
	for _, c := range prog {
		c.label = nsString(c.Label)
	}
	return device.NewProgram(b.progs.add(prog)), nil
}

// Unbind forgets a program and releases its labels; its pipelines stay
// cached for the next model.
func (b *Backend) Unbind(p device.Program) {
	if prog, ok := b.progs.remove(p.ID()); ok {
		releaseLabels(prog)
	}
}

func releaseLabels(prog []*Command) {
	for _, c := range prog {
		release(c.label)
		c.label = 0
	}
}

// program is program p's commands; nil for a handle not bound here.
func (b *Backend) program(p device.Program) []*Command {
	if prog, ok := b.progs.get(p.ID()); ok {
		return *prog
	}
	return nil
}

// SetParam writes v (width 4 or 8) at byte at of command cmd of program p
// (the sampling knobs a generation rewrites); it reaches the GPU at the
// next Encode. A command p does not have is ignored.
func (b *Backend) SetParam(p device.Program, cmd, at, width int, v uint64) {
	if prog := b.program(p); cmd >= 0 && cmd < len(prog) {
		prog[cmd].SetParam(at, width, v)
	}
}

// Encode records program p once per step into the pending command buffer
// (one buffer per chain), each step's patches written before its
// commands, each step in a compute encoder of its own. It allocates
// nothing (but the labels of a step index seen for the first time, and
// every command's encoder label with Options.EncoderPerCommand). A
// program not bound here fails the next Wait.
func (b *Backend) Encode(p device.Program, steps []plans.Step) {
	prog := b.program(p)
	if prog == nil {
		b.fail(fmt.Errorf("metal: encode of program %d, which is not bound here", p.ID()))
		return
	}
	b.begin()
	for i, s := range steps {
		b.stepEncoder(i)
		for _, c := range prog {
			b.dispatch(c, s)
		}
	}
	b.end()
}

// begin starts (or continues) the pending command buffer. The calling
// goroutine keeps its OS thread and an autorelease pool until end: the
// buffer and encoders Metal returns are autoreleased objects.
func (b *Backend) begin() {
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

// stepEncoder opens the compute encoder of chain step i, labelled "step
// i" (the label a failed buffer reports). Its dispatches run in order:
// the encoder is serial and the buffers hazard-tracked, so each command
// sees the last one's writes.
func (b *Backend) stepEncoder(i int) {
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

// dispatch encodes one command for step s.
func (b *Backend) dispatch(c *Command, s plans.Step) {
	if b.pending == 0 {
		return
	}
	if b.step < 0 {
		b.stepEncoder(0)
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

// end closes the encoder and gives the thread back.
func (b *Backend) end() {
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
	}
	return b.stepLabels[i]
}

func (b *Backend) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Copy records a copy of n bytes from src at srcOff to dst at dstOff into
// the pending command buffer, in a blit encoder of its own after the
// compute encoders encoded so far: hazard tracking orders it after their
// writes and before the next encoder's reads, in this buffer and in the
// next ones of the queue. A copy that cannot be made fails the next Wait.
// It allocates nothing (resolveCopy's lookups are table indexes).
func (b *Backend) Copy(dst device.Buffer, dstOff int, src device.Buffer, srcOff int, n int) {
	op, err := resolveCopy(&b.bufs, dst, dstOff, src, srcOff, n)
	if err != nil {
		b.fail(err)
		return
	}
	b.begin()
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
	b.end()
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

// Close waits for the GPU, then releases every object the backend made:
// buffers, programs' labels, pipelines, libraries, the queue and the
// device. Handles are invalid afterwards.
func (b *Backend) Close() {
	if b.dev == 0 {
		return
	}
	if b.pending != 0 {
		release(b.pending)
		b.pending = 0
	}
	b.Wait()
	b.progs.each(func(prog *[]*Command) { releaseLabels(*prog) })
	b.bufs.each(func(e *bufEntry) { release(e.id) })
	for _, pl := range b.pipes {
		release(pl.pso)
	}
	for _, lib := range b.libs {
		release(lib)
	}
	for _, l := range b.stepLabels {
		release(l)
	}
	b.pipes, b.libs, b.stepLabels = nil, nil, nil
	b.bufs, b.progs = buffers{}, table[[]*Command]{}
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
