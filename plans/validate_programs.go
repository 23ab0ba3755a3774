package plans

import (
	"fmt"
	"math"
	"math/bits"
)

func (v *validator) programs() {
	p := v.p
	if len(p.Programs) > MaxPrograms {
		v.add("programs: %d, more than %d", len(p.Programs), MaxPrograms)
		return
	}
	seen := map[string]bool{}
	decodes, embeds := 0, 0
	for i := range p.Programs {
		pr := &p.Programs[i]
		where := fmt.Sprintf("program %d %q", i, pr.Name)
		v.name(where+": name", pr.Name)
		if seen[pr.Name] {
			v.add("%s: a second program of that name", where)
		}
		seen[pr.Name] = true
		v.inRange(where+": batch", uint64(pr.Batch), 1, MaxBatch)
		kind := pr.KindOf()
		if pr.Kind >= programKindEnd {
			v.add("%s: unknown program kind %d; this runtime knows %d", where, pr.Kind, programKindEnd-1)
		}
		switch kind {
		case 0:
			v.add("%s: no kind, and the name says none (decode, sampled, prefill.N)", where)
		case KindDecode, KindSampled:
			if pr.Batch != 1 {
				v.add("%s: batch %d; a decode program takes one token", where, pr.Batch)
			}
			if pr.OutRows > 1 {
				v.add("%s: %d output rows; a decode program has one", where, pr.OutRows)
			}
			if kind == KindDecode {
				decodes++
			}
		case KindPrefill:
			if pr.Name != PrefillName(pr.Batch) {
				v.add("%s: a prefill program of batch %d is named %q", where, pr.Batch, PrefillName(pr.Batch))
			}
		case KindBatch:
			if pr.Name != BatchName(pr.Batch) {
				v.add("%s: a batch program of %d rows is named %q", where, pr.Batch, BatchName(pr.Batch))
			}
			if pr.OutRows < 1 || pr.OutRows > pr.Batch {
				v.add("%s: %d output rows; a batch program of %d rows has 1 to %d", where, pr.OutRows, pr.Batch, pr.Batch)
			}
		case KindEmbed:
			if pr.Name != EmbedName(pr.Batch) {
				v.add("%s: an embedding program of %d rows is named %q", where, pr.Batch, EmbedName(pr.Batch))
			}
			if pr.OutRows < 1 || pr.OutRows > pr.Batch {
				v.add("%s: %d inputs; an embedding program of %d rows takes 1 to %d", where, pr.OutRows, pr.Batch, pr.Batch)
			}
			embeds++
		}
		if len(pr.Commands) == 0 || len(pr.Commands) > MaxCommands {
			v.add("%s: %d commands; a program has 1 to %d", where, len(pr.Commands), MaxCommands)
			continue
		}
		for j := range pr.Commands {
			v.command(pr, j)
		}
	}
	// A language model has one decode program; an encoder (embedding
	// programs only) has none.
	if decodes > 1 || decodes == 0 && embeds == 0 {
		v.add("programs: %d decode programs; a plan has one (or embedding programs only)", decodes)
	}
}

// stepMax is the largest value each patch kind takes over the replays a
// program allows (StepBounds.Max), with the plan's own bounds: decode
// tokens take slots 0..ChainChunk-1, positions stay below the context, a
// decode step's sequence slot below MaxSeqs.
func (v *validator) stepMax(pr *Program, k PatchKind) uint64 {
	return v.p.Bounds(pr, v.p.Header.Target.Tuning.Seqs()).Max(k)
}

// cmdAt locates a command in messages: "decode[57] L6.attn.flash". It is
// formatted only when a problem is reported, so validating a large plan
// formats nothing.
type cmdAt struct {
	prog  string
	i     int
	label string
}

func (c *cmdAt) String() string { return fmt.Sprintf("%s[%d] %s", c.prog, c.i, c.label) }

func (v *validator) command(pr *Program, j int) {
	p := v.p
	c := &pr.Commands[j]
	at := &cmdAt{pr.Name, j, c.Label}
	if c.Label == "" || len(c.Label) > MaxNameBytes {
		v.add("%s: label: %d bytes; a label has 1 to %d", at, len(c.Label), MaxNameBytes)
	}
	if len(c.Rule) > MaxNameBytes {
		v.add("%s: rule of %d bytes", at, len(c.Rule))
	}
	if int(c.Pipeline) >= len(p.Pipelines) {
		v.add("%s: pipeline %d of %d", at, c.Pipeline, len(p.Pipelines))
	}
	if c.Grid[0] == 0 || c.Grid[1] == 0 || c.Grid[2] == 0 {
		v.add("%s: grid %v has a zero dimension", at, c.Grid)
	}
	threads := uint64(1)
	for _, t := range c.Threadgroup {
		threads *= uint64(t) // ≤ 1024 × 2^32: the loop stops once it passes 1024
		if t == 0 || threads > MaxThreadsPerGroup {
			v.add("%s: threadgroup %v: each dimension ≥ 1, at most %d threads in all", at, c.Threadgroup, MaxThreadsPerGroup)
			break
		}
	}
	if c.ThreadgroupMemory > MaxThreadgroupMemory {
		v.add("%s: %d bytes of threadgroup memory, more than %d", at, c.ThreadgroupMemory, MaxThreadgroupMemory)
	}
	if len(c.Params) > MaxParamBytes {
		v.add("%s: %d parameter bytes, more than %d", at, len(c.Params), MaxParamBytes)
	}
	if len(c.Params) > 0 && c.ParamsSlot > MaxSlot {
		v.add("%s: parameter slot %d, the highest is %d", at, c.ParamsSlot, MaxSlot)
	}
	if len(c.Params) == 0 && c.ParamsSlot != 0 {
		v.add("%s: parameter slot %d but no parameters", at, c.ParamsSlot)
	}
	if len(c.Bindings) > MaxBindings {
		v.add("%s: %d bindings, more than %d", at, len(c.Bindings), MaxBindings)
		return
	}
	var slots [MaxSlot + 1]bool
	if len(c.Params) > 0 && c.ParamsSlot <= MaxSlot {
		slots[c.ParamsSlot] = true
	}
	for _, b := range c.Bindings {
		if b.Slot > MaxSlot {
			v.add("%s: binding slot %d: the highest slot is %d", at, b.Slot, MaxSlot)
		} else if slots[b.Slot] {
			v.add("%s: binding slot %d: slot bound twice", at, b.Slot)
		} else {
			slots[b.Slot] = true
		}
		if int(b.Buffer) >= len(p.Buffers) {
			v.add("%s: binding slot %d: buffer %d of %d", at, b.Slot, b.Buffer, len(p.Buffers))
			continue
		}
		buf := &p.Buffers[b.Buffer]
		end, carry := bits.Add64(b.Offset, b.Length, 0)
		switch {
		case b.Offset >= buf.Size:
			v.add("%s: binding slot %d: offset %d is past the end of buffer %q (%d bytes)", at, b.Slot, b.Offset, buf.Name, buf.Size)
		case carry != 0 || end > buf.Size:
			v.add("%s: binding slot %d: offset %d + %d bytes exceeds buffer %q (%d bytes)", at, b.Slot, b.Offset, b.Length, buf.Name, buf.Size)
		}
	}
	if len(c.Patches) > MaxPatches {
		v.add("%s: %d patches, more than %d", at, len(c.Patches), MaxPatches)
		return
	}
	for k, pt := range c.Patches {
		v.patch(pr, c, patchAt{at, k, pt.Kind}, pt)
	}
}

// patchAt locates a patch: "decode[4] L0.attn.flash: patch 0 (kv_length)".
type patchAt struct {
	cmd  *cmdAt
	k    int
	kind PatchKind
}

func (p patchAt) String() string { return fmt.Sprintf("%s: patch %d (%s)", p.cmd, p.k, p.kind) }

func (v *validator) patch(pr *Program, c *Command, where patchAt, pt Patch) {
	if pt.Kind == 0 || pt.Kind >= patchKindEnd {
		v.add("%s: unknown patch kind; this runtime knows %d", where, patchKindEnd-1)
		return
	}
	// The largest value the patch writes; Base and Stride are unsigned, so
	// the values grow with x and the largest is the one to check.
	hi, prod := bits.Mul64(pt.Stride, v.stepMax(pr, pt.Kind))
	top, carry := bits.Add64(prod, pt.Base, 0)
	overflow := hi != 0 || carry != 0
	switch pt.Target {
	case PatchParam:
		if pt.Width != 4 && pt.Width != 8 {
			v.add("%s: width %d; a parameter patch writes 4 or 8 bytes", where, pt.Width)
			return
		}
		if end := uint64(pt.At) + pt.count()*uint64(pt.Width); end > uint64(len(c.Params)) {
			v.add("%s: bytes [%d, %d) exceed the %d parameter bytes", where, pt.At, end, len(c.Params))
		}
		if overflow || pt.Width == 4 && top > math.MaxUint32 {
			v.add("%s: %d + %d×x overflows %d bytes over the program's steps", where, pt.Base, pt.Stride, pt.Width)
		}
	case PatchBinding:
		if pt.Width != 0 {
			v.add("%s: width %d; a binding patch has none", where, pt.Width)
		}
		if pt.count() != 1 {
			v.add("%s: writes two values and cannot target a binding", where)
			return
		}
		if int(pt.At) >= len(c.Bindings) {
			v.add("%s: binding %d of %d", where, pt.At, len(c.Bindings))
			return
		}
		b := c.Bindings[pt.At]
		if int(b.Buffer) >= len(v.p.Buffers) {
			return // reported with the binding
		}
		buf := &v.p.Buffers[b.Buffer]
		size := buf.Size
		if pt.Kind == PatchSeq && buf.Kind == BufKV {
			// A KV buffer's size is one sequence slot's; the runtime
			// allocates up to MaxSeqs of them back to back.
			var hi uint64
			hi, size = bits.Mul64(size, uint64(v.p.Header.Target.Tuning.Seqs()))
			overflow = overflow || hi != 0
		}
		end, carry2 := bits.Add64(top, max(b.Length, 1), 0)
		if overflow || carry2 != 0 || end > size {
			v.add("%s: offset %d + %d×%d (+%d bytes) exceeds buffer %q (%d bytes)",
				where, pt.Base, pt.Stride, v.stepMax(pr, pt.Kind), max(b.Length, 1), buf.Name, size)
		}
	default:
		v.add("%s: unknown target %d", where, pt.Target)
	}
}
