package device

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
)

// ErrCommand is wrapped by Resolve's errors: a command a backend must not
// bind.
var ErrCommand = errors.New("command cannot run")

// Resolve checks command ci of program pr against the catalog and the
// buffers bufs (the plan's buffers by index, as the backend made them) and
// returns it resolved. It checks:
//
//   - the pipeline names a catalog kernel, and the parameter bytes are
//     exactly that kernel's struct;
//   - every binding names a buffer slot of the kernel (not the parameter
//     struct's), a buffer the backend made, and lies inside it: offset
//     plus the bytes the plan says it touches, or the offset alone when it
//     does not say;
//   - no command writes a weight, derived weight, constant or parameter
//     buffer: only scratch, KV and io buffers are writable;
//   - every binding the kernel needs is bound (a conditional one when its
//     constant is on);
//   - every parameter patch lies inside the parameter bytes and writes 4
//     or 8 bytes; every binding patch moves a binding of the command, and
//     its largest value over steps within b keeps the binding inside its
//     buffer;
//   - the launch is not empty and has at most 1024 threads a threadgroup.
//
// Errors name the program, the command index and its label, and wrap
// ErrCommand.
func Resolve(p *plans.Plan, pr *plans.Program, ci int, bufs []Buffer, b plans.StepBounds) (Command, error) {
	c := &pr.Commands[ci]
	fail := func(format string, args ...any) (Command, error) {
		return Command{}, fmt.Errorf("%s[%d] %s: %s: %w", pr.Name, ci, c.Label, fmt.Sprintf(format, args...), ErrCommand)
	}
	if int(c.Pipeline) >= len(p.Pipelines) {
		return fail("pipeline %d of %d", c.Pipeline, len(p.Pipelines))
	}
	pl := p.Pipelines[c.Pipeline]
	k, ok := kernels.Lookup(pl.Kernel)
	if !ok {
		return fail("kernel %q is not in the catalog (%v)", pl.Kernel, kernels.ErrNoKernel)
	}
	if len(c.Params) != k.Params.Size {
		return fail("%s takes %d parameter bytes, the command has %d", k.Name, k.Params.Size, len(c.Params))
	}
	on := map[string]bool{}
	for _, pc := range pl.Constants {
		if int(pc.Index) < len(k.Constants) {
			on[k.Constants[pc.Index].Name] = pc.Value != 0
		}
	}
	r := Command{Label: c.Label, Kernel: k, Pipeline: pl, Slots: make([]Slot, len(k.Bindings)),
		Params: append([]byte(nil), c.Params...), ParamSlot: k.ParamSlot, Grid: c.Grid, Threadgroup: c.Threadgroup,
		TGMem: c.ThreadgroupMemory, DispatchThreads: c.DispatchThreads}
	for _, bd := range c.Bindings {
		if int(bd.Slot) >= len(k.Bindings) || int(bd.Slot) == k.ParamSlot {
			return fail("%s has no buffer slot %d", k.Name, bd.Slot)
		}
		kb := k.Bindings[bd.Slot]
		if int(bd.Buffer) >= len(bufs) || !bufs[bd.Buffer].Valid() {
			return fail("slot %d (%s): buffer %d was not made", bd.Slot, kb.Name, bd.Buffer)
		}
		if r.Slots[bd.Slot].Buf.Valid() {
			return fail("slot %d (%s) bound twice", bd.Slot, kb.Name)
		}
		buf, pb := bufs[bd.Buffer], &p.Buffers[bd.Buffer]
		if kb.Access != kernels.Read && !Writable(pb.Kind) {
			return fail("slot %d (%s) writes buffer %q, a %s buffer, which commands may only read", bd.Slot, kb.Name, pb.Name, pb.Kind)
		}
		end, carry := bits.Add64(bd.Offset, bd.Length, 0)
		if bd.Offset >= uint64(buf.Size()) || carry != 0 || end > uint64(buf.Size()) {
			return fail("slot %d (%s): offset %d + %d bytes exceeds buffer %q (%d bytes)", bd.Slot, kb.Name, bd.Offset, bd.Length, pb.Name, buf.Size())
		}
		r.Slots[bd.Slot] = Slot{Buf: buf, Offset: bd.Offset}
	}
	for _, kb := range k.Bindings {
		if kb.Role == kernels.RoleParam || r.Slots[kb.Slot].Buf.Valid() {
			continue
		}
		if kb.When == "" || on[kb.When] {
			return fail("%s: binding %s (slot %d) is not bound", k.Name, kb.Name, kb.Slot)
		}
	}
	for i, pt := range c.Patches {
		rp := Patch{Kind: pt.Kind, At: pt.At, Width: pt.Width, Base: pt.Base, Stride: pt.Stride}
		hi, prod := bits.Mul64(pt.Stride, b.Max(pt.Kind))
		top, carry := bits.Add64(prod, pt.Base, 0)
		switch pt.Target {
		case plans.PatchParam:
			n := uint64(pt.Width)
			if rp.Two() {
				n *= 2
			}
			if pt.Width != 4 && pt.Width != 8 || uint64(pt.At)+n > uint64(len(c.Params)) {
				return fail("patch %d (%s) of %d bytes at %d lies outside the %d parameter bytes", i, pt.Kind, pt.Width, pt.At, len(c.Params))
			}
			if hi != 0 || carry != 0 || pt.Width == 4 && top > 1<<32-1 {
				return fail("patch %d (%s): %d + %d×x overflows %d bytes", i, pt.Kind, pt.Base, pt.Stride, pt.Width)
			}
		case plans.PatchBinding:
			if int(pt.At) >= len(c.Bindings) || rp.Two() {
				return fail("patch %d (%s) of binding %d: the command has %d", i, pt.Kind, pt.At, len(c.Bindings))
			}
			bd := c.Bindings[pt.At]
			size := uint64(bufs[bd.Buffer].Size())
			end, carry2 := bits.Add64(top, max(bd.Length, 1), 0)
			if hi != 0 || carry != 0 || carry2 != 0 || end > size {
				return fail("patch %d (%s) moves binding %d to %d + %d×%d, past buffer %q (%d bytes)",
					i, pt.Kind, pt.At, pt.Base, pt.Stride, b.Max(pt.Kind), p.Buffers[bd.Buffer].Name, size)
			}
			rp.Binding, rp.At = true, bd.Slot
		default:
			return fail("patch %d (%s): target %v", i, pt.Kind, pt.Target)
		}
		r.Patches = append(r.Patches, rp)
	}
	threads := uint64(1)
	for d := range 3 {
		if c.Grid[d] == 0 || c.Threadgroup[d] == 0 {
			return fail("empty launch: grid %v, threadgroup %v", c.Grid, c.Threadgroup)
		}
		threads *= uint64(c.Threadgroup[d])
	}
	if threads > plans.MaxThreadsPerGroup {
		return fail("%d threads a threadgroup, more than %d", threads, plans.MaxThreadsPerGroup)
	}
	return r, nil
}

// Writable reports whether commands may write buffers of kind k: scratch,
// KV and io buffers. Weights (mapped read-only from the model file), derived
// weights, constants and parameter buffers are read-only.
func Writable(k plans.BufferKind) bool {
	return k == plans.BufScratch || k == plans.BufKV || k == plans.BufIO
}
