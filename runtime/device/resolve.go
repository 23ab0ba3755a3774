package device

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/specs/chips"
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
//   - the parameters fit the bindings (kernels.CheckExtents): every element
//     the kernel reads or writes, with each patched parameter at its
//     largest and each patched binding at its largest offset, lies inside
//     what is bound, and no count it divides by is zero;
//   - the launch is not empty and has at most 1024 threads a threadgroup;
//   - the launch is the kernel's geometry rule's for the shape the
//     parameters give (kernels.CheckLaunch): the same threadgroup and
//     threadgroup memory, and a grid no larger (equal unless a patch
//     writes the parameters), so a GPU backend's threadgroups index
//     nothing past their buffers.
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
		if !roleTakes(kb.Role, pb.Kind) {
			return fail("slot %d (%s) takes a %s buffer; buffer %q is a %s buffer", bd.Slot, kb.Name, kb.Role, pb.Name, pb.Kind)
		}
		end, carry := bits.Add64(bd.Offset, bd.Length, 0)
		if bd.Offset >= uint64(buf.Size()) || carry != 0 || end > uint64(buf.Size()) {
			return fail("slot %d (%s): offset %d + %d bytes exceeds buffer %q (%d bytes)", bd.Slot, kb.Name, bd.Offset, bd.Length, pb.Name, buf.Size())
		}
		r.Slots[bd.Slot] = Slot{Buf: buf, Offset: bd.Offset, Kind: pb.Kind}
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
			if err := patchRoles(k, c.Params, pt, top); err != nil {
				return fail("patch %d (%s): %v", i, pt.Kind, err)
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
	x := extents(p, pr, c, pl, bufs, b, k)
	if err := k.CheckExtents(x); err != nil {
		return fail("%v", err)
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
	if c.DispatchThreads {
		return fail("the grid counts threads; %s's geometry rule counts threadgroups", k.Name)
	}
	if err := k.CheckLaunch(x, ChipTuning(p.Header.Target.Tuning), c.Grid, c.Threadgroup, c.ThreadgroupMemory); err != nil {
		return fail("%v (if the plan came from another version of akunuc, compile it again with this one)", err)
	}
	return r, nil
}

// ChipTuning is the plan's recorded tuning as the geometry rules take it
// (the fields a rule or the kernel choice reads).
func ChipTuning(t plans.Tuning) chips.Tuning {
	return chips.Tuning{
		FuseWeights: t.FuseWeights, Q4LargeKThreshold: int(t.Q4LargeKThreshold),
		WideGEMVThreshold: int(t.WideGEMVThreshold), ChainChunk: int(t.ChainChunk),
		PrefillChunk: int(t.PrefillChunk), NormTG: int(t.NormTG), GEMVMinGroups: int(t.GEMVMinGroups),
		GEMVMinRows: int(t.GEMVMinRows), Int8GEMV: t.Int8GEMV, GEMVPreloadMaxK: int(t.GEMVPreloadMaxK),
	}
}

// roleTakes reports whether a binding of role r may be bound to a buffer of
// kind k: model data (weights, derived weights, constants) where the
// kernel reads a weight, a KV buffer where it reads a cache, the engine's
// scratch and io buffers for the rest. The compiler binds by these roles;
// a plan that binds otherwise was damaged.
func roleTakes(r kernels.Role, k plans.BufferKind) bool {
	switch r {
	case kernels.RoleWeight:
		return k == plans.BufWeight || k == plans.BufDerived || k == plans.BufConstant
	case kernels.RoleKV:
		return k == plans.BufKV
	case kernels.RoleActivation, kernels.RoleScratch, kernels.RoleIO:
		return k == plans.BufScratch || k == plans.BufIO
	}
	return false
}

// Writable reports whether commands may write buffers of kind k: scratch,
// KV and io buffers. Weights (mapped read-only from the model file), derived
// weights, constants and parameter buffers are read-only.
func Writable(k plans.BufferKind) bool {
	return k == plans.BufScratch || k == plans.BufKV || k == plans.BufIO
}

// extents are command c's worst case for its kernel's extent rule: each
// patched parameter at the larger of its compiled value and the largest its
// patch writes over steps within b, and each binding's bytes from its
// largest offset, no more than the Length the plan says it touches (when
// it says: a command then stays inside its own tensor of a shared buffer).
// A KV binding's Length is one sequence slot's, and a Rows kernel reads
// every slot, so its whole buffer counts.
func extents(p *plans.Plan, pr *plans.Program, c *plans.Command, pl plans.Pipeline, bufs []Buffer, b plans.StepBounds, k *kernels.Kernel) *kernels.Extents {
	x := &kernels.Extents{
		Params:    append([]byte(nil), c.Params...),
		Avail:     make([]uint64, len(k.Bindings)),
		Constants: make([]uint32, len(k.Constants)),
		Set:       make([]bool, len(k.Constants)),
		Ctx:       uint64(p.Model.HParams.Ctx),
		Seqs:      uint64(b.Seqs),
		Batch:     uint64(pr.Batch),
		Vocab:     uint64(p.Model.HParams.Vocab),
	}
	for _, pc := range pl.Constants {
		if int(pc.Index) < len(k.Constants) {
			x.Constants[pc.Index], x.Set[pc.Index] = pc.Value, true
		}
	}
	off := make([]uint64, len(c.Bindings))
	for i, bd := range c.Bindings {
		off[i] = bd.Offset
	}
	var patched []int
	for _, pt := range c.Patches {
		top := pt.Base + pt.Stride*b.Max(pt.Kind) // Resolve refused overflows
		switch pt.Target {
		case plans.PatchBinding:
			off[pt.At] = max(off[pt.At], top)
		case plans.PatchParam:
			w := int(pt.Width)
			raise(x.Params, int(pt.At), w, top)
			patched = append(patched, int(pt.At))
			if pt.Kind == plans.PatchPositionKV {
				raise(x.Params, int(pt.At)+w, w, pt.Base+pt.Stride*b.Max(plans.PatchKVLength))
				patched = append(patched, int(pt.At)+w)
			}
		}
	}
	x.Patched = func(o int) bool { return slices.Contains(patched, o) }
	for i, bd := range c.Bindings {
		if size := uint64(bufs[bd.Buffer].Size()); off[i] < size {
			x.Avail[bd.Slot] = size - off[i]
			if bd.Length > 0 && k.Bindings[bd.Slot].Role != kernels.RoleKV {
				x.Avail[bd.Slot] = min(x.Avail[bd.Slot], bd.Length)
			}
		}
	}
	return x
}

// raise sets the w-byte little-endian field at off of params to v when v
// is larger.
func raise(params []byte, off, w int, v uint64) {
	if w == 8 {
		binary.LittleEndian.PutUint64(params[off:], max(binary.LittleEndian.Uint64(params[off:]), v))
		return
	}
	binary.LittleEndian.PutUint32(params[off:], uint32(max(uint64(binary.LittleEndian.Uint32(params[off:])), v)))
}

// patchRoles are the parameter roles (kernels' `patch:"ROLE"` tags) each
// patch kind may write; PatchPositionKV writes a position, then a kv_len.
var patchRoles_ = map[plans.PatchKind][]string{
	plans.PatchToken:         {"token"},
	plans.PatchPosition:      {"position"},
	plans.PatchStartPosition: {"position"},
	plans.PatchPositionKV:    {"position", "kv_len"},
	plans.PatchKVLength:      {"kv_len"},
	plans.PatchArgmaxSlot:    {"out_slot"},
	plans.PatchBatchLength:   {"batch"},
	plans.PatchOutCount:      {"batch"},
}

// patchRoles checks that parameter patch pt writes fields the kernel
// declares patchable with a role its kind may write (a token slot into a
// row count, or into a dimension, would break the kernel's sizes), and that
// a row count never exceeds the value the command was compiled, and its
// launch and the backend's scratch sized, for.
func patchRoles(k *kernels.Kernel, params []byte, pt plans.Patch, top uint64) error {
	roles := patchRoles_[pt.Kind]
	if len(roles) == 0 {
		return fmt.Errorf("a %s patch cannot write parameters", pt.Kind)
	}
	for j, role := range roles {
		at, ok := k.Patchable[role]
		want := int(pt.At) + j*int(pt.Width)
		if !ok || at != want || pt.Width != 4 {
			return fmt.Errorf("%s writes 4 bytes at %d; %s has no %q field there", pt.Kind, want, k.Name, role)
		}
	}
	if roles[0] == "batch" {
		if v := uint64(binary.LittleEndian.Uint32(params[pt.At:])); top > v {
			return fmt.Errorf("writes up to %d rows, more than the %d the command was compiled for", top, v)
		}
	}
	return nil
}
