package plans

import (
	"strconv"
	"strings"
)

// Program names. A plan has a decode program; sampled and batch (or, in
// format 1, prefill) buckets are optional. Batch programs are named
// BatchPrefix + their bucket size, format 1's prefill programs
// PrefillPrefix + theirs.
const (
	ProgDecode    = "decode"  // one token; replayed up to ChainChunk times per submission
	ProgSampled   = "sampled" // decode with the Gumbel-max sampling kernel before argmax
	PrefillPrefix = "prefill."
	BatchPrefix   = "batch."
	EmbedPrefix   = "embed."
)

// PrefillName is the name of the prefill program for batch-size bucket n.
func PrefillName(n uint32) string { return PrefillPrefix + strconv.FormatUint(uint64(n), 10) }

// BatchName is the name of the batch program for bucket n.
func BatchName(n uint32) string { return BatchPrefix + strconv.FormatUint(uint64(n), 10) }

// EmbedName is the name of the embedding program for bucket n.
func EmbedName(n uint32) string { return EmbedPrefix + strconv.FormatUint(uint64(n), 10) }

// ProgramKind says what a program computes and how a runtime replays it.
// The set is closed: a runtime picks its programs by kind, and a kind added
// later raises the plan's minimum runtime version.
type ProgramKind uint8

const (
	// KindDecode: one token of one sequence, replayed up to ChainChunk
	// times per submission (chain decode), its argmax feeding the next
	// replay's embedding.
	KindDecode ProgramKind = 1 + iota
	// KindSampled: KindDecode with Gumbel-max sampling before the argmax.
	KindSampled
	// KindPrefill (format 1): Batch tokens of one sequence at consecutive
	// positions from the step's position; the last row's logits only.
	KindPrefill
	// KindBatch (format 2): up to Batch rows, each with its own token
	// (io "tokens"), position (io "positions") and sequence slot (io
	// "seqs"); logits and argmax for the up to OutRows rows listed in io
	// "out_rows". One program shape serves a prefill chunk, a decode step
	// of many sequences and a speculative verify pass.
	KindBatch
	// KindEmbed (format 4): up to Batch rows as in KindBatch, holding up to
	// OutRows inputs packed back to back, each in a sequence slot of its
	// own (io "seqs"), its rows at positions 0, 1, ...; attention of a
	// non-causal model reads each row's sequence up to io "seq_last"
	// instead of its position. No logits: the last hidden states of each
	// input are pooled over the rows io "pool_ranges" gives (a start and
	// an end row per input), L2-normalized, into io "embeddings" (F32,
	// OutRows × dim).
	KindEmbed

	programKindEnd
)

var programKindNames = [...]string{"", "decode", "sampled", "prefill", "batch", "embed"}

func (k ProgramKind) String() string {
	if k > 0 && k < programKindEnd {
		return programKindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Program is an ordered list of commands that the runtime replays as a unit.
type Program struct {
	Name string
	// Batch is the number of tokens one replay processes: 1 for decode and
	// sampled, the bucket size for prefill and batch programs (the most
	// rows they take; the actual count is patched in with
	// PatchBatchLength).
	Batch    uint32
	Commands []Command
	// Kind is what the program computes (format 2). A format-1 plan has
	// none: KindOf derives it from the name.
	Kind ProgramKind
	// OutRows is, for a batch program, the most rows of one replay that
	// produce logits and an argmax (the actual count is patched in with
	// PatchOutCount); 1 for decode and sampled programs.
	OutRows uint32
}

// KindOf is the program's kind: Kind, or for a format-1 plan the kind its
// name gives ("decode", "sampled", "prefill.N"); 0 when neither says.
func (p *Program) KindOf() ProgramKind {
	if p.Kind != 0 {
		return p.Kind
	}
	switch {
	case p.Name == ProgDecode:
		return KindDecode
	case p.Name == ProgSampled:
		return KindSampled
	case strings.HasPrefix(p.Name, PrefillPrefix):
		return KindPrefill
	}
	return 0
}

// Outputs is the most rows of one replay that produce outputs: OutRows, or
// 1 for a program that predates the field.
func (p *Program) Outputs() uint32 { return max(p.OutRows, 1) }

// Command is one GPU dispatch.
type Command struct {
	// Label names the graph node(s) the command computes ("L12.ffn.down").
	// Diff aligns the commands of two plans by label, and every runtime
	// error about the command quotes it.
	Label string
	// Rule is the fusion or lowering rule that produced the command
	// ("rules/fusion.rules:41 rmsnorm+gemv"), for debug renderings; empty
	// for a command lowered one to one.
	Rule     string
	Pipeline uint32 // index into Plan.Pipelines
	Bindings []Binding
	// Params are the kernel's parameter struct, bound inline at ParamsSlot
	// (Metal setBytes); empty when the kernel takes none or reads them from
	// a BufParams buffer through a binding.
	Params     []byte
	ParamsSlot uint32
	// ThreadgroupMemory is the dynamic threadgroup (shared) memory in bytes.
	ThreadgroupMemory uint32
	Grid              [3]uint32
	Threadgroup       [3]uint32
	// DispatchThreads: Grid counts threads (Metal dispatchThreads) rather
	// than threadgroups (dispatchThreadgroups).
	DispatchThreads bool
	Patches         []Patch
	// BytesRead is what the command reads from memory, for the roofline.
	BytesRead uint64
}

// Binding attaches a buffer (from Offset on) to a kernel's buffer slot.
type Binding struct {
	Slot   uint32
	Buffer uint32 // index into Plan.Buffers
	Offset uint64
	// Length is the number of bytes the command touches from Offset, when
	// the compiler knows it (Validate then checks the whole range); 0 means
	// unknown, and only Offset < Size is checked.
	Length uint64
}

// PatchKind says which per-token value a patch writes. The set is closed:
// the runtime's replay loop is a switch over it, and a kind added later
// raises the plan's minimum runtime version (RequiredRuntime).
type PatchKind uint8

const (
	// PatchToken: the token slot i (embedding reads token i of the chain).
	PatchToken PatchKind = 1 + iota
	// PatchPosition: the absolute position of the token.
	PatchPosition
	// PatchKVLength: the number of cached positions attention reads,
	// position + batch (position + 1 in decode).
	PatchKVLength
	// PatchPositionKV writes two values: the position at At and the KV
	// length at At + Width.
	PatchPositionKV
	// PatchArgmaxSlot: the token slot argmax writes, i + 1, which the next
	// token's embedding reads (chain decode without a round trip).
	PatchArgmaxSlot
	// PatchBatchLength: the number of tokens of this prefill batch.
	PatchBatchLength
	// PatchStartPosition: the position of the batch's first token (prefill).
	PatchStartPosition
	// PatchSeq (format 2): the sequence slot of a decode step. A binding
	// patch with it moves a KV binding to the slot's part of the cache
	// (Stride: the bytes of one slot).
	PatchSeq
	// PatchOutCount (format 2): the number of rows of a batch replay that
	// produce outputs (logits and argmax).
	PatchOutCount

	patchKindEnd
)

var patchKindNames = [...]string{"", "token", "position", "kv_length", "position_kv", "argmax_slot", "batch_length", "start_position", "seq", "out_count"}

func (k PatchKind) String() string {
	if k > 0 && k < patchKindEnd {
		return patchKindNames[k]
	}
	return "patch(" + strconv.Itoa(int(k)) + ")"
}

// PatchTarget says what a patch rewrites.
type PatchTarget uint8

const (
	// PatchParam writes Width bytes (little-endian) at byte At of Params.
	PatchParam PatchTarget = 1 + iota
	// PatchBinding sets the offset of binding At (an index into Bindings),
	// e.g. to make the embedding read token slot i.
	PatchBinding

	patchTargetEnd
)

func (t PatchTarget) String() string {
	switch t {
	case PatchParam:
		return "param"
	case PatchBinding:
		return "binding"
	}
	return "target(" + strconv.Itoa(int(t)) + ")"
}

// Patch is a value the runtime writes into a command before each replay:
// Base + Stride*x, where x is the kind's per-token value (Step.X). With
// Base 0 and Stride 1 it is x itself; a binding patch uses Stride for the
// element size (4 bytes per token id) and Base for the binding's offset.
type Patch struct {
	Kind   PatchKind
	Target PatchTarget
	// At is the byte offset in Params (PatchParam) or the index into
	// Bindings (PatchBinding).
	At uint32
	// Width is the size of each value written, 4 (u32) or 8 (u64), for
	// PatchParam; 0 for PatchBinding.
	Width  uint8
	Base   uint64
	Stride uint64
}

// Step is what changes between replays of a program.
type Step struct {
	// Index is the token's slot within the chain (decode: 0..ChainChunk-1);
	// 0 in prefill.
	Index uint32
	// Pos is the token's position (decode) or the batch's first position
	// (prefill).
	Pos uint32
	// Batch is the number of tokens of the replay: 1 in decode.
	Batch uint32
	// Seq is the sequence slot of a decode step (format 2).
	Seq uint32
	// Out is the number of rows of a batch replay that produce outputs
	// (format 2).
	Out uint32
}

// X is the kind's value at step s, before Base and Stride. For
// PatchPositionKV it is the first of the two values (the position).
func (k PatchKind) X(s Step) uint64 {
	switch k {
	case PatchToken:
		return uint64(s.Index)
	case PatchPosition, PatchPositionKV, PatchStartPosition:
		return uint64(s.Pos)
	case PatchKVLength:
		return uint64(s.Pos) + uint64(s.Batch)
	case PatchArgmaxSlot:
		return uint64(s.Index) + 1
	case PatchBatchLength:
		return uint64(s.Batch)
	case PatchSeq:
		return uint64(s.Seq)
	case PatchOutCount:
		return uint64(s.Out)
	}
	return 0
}

// StepBounds are the limits of the steps a program is replayed with: what
// every patch's largest value follows from.
type StepBounds struct {
	// Slots is the number of token slots a chain uses: ChainChunk for a
	// decode program, 1 (slot 0) for the others.
	Slots uint32
	// Ctx is the plan's context: positions stay below it.
	Ctx uint32
	// Seqs is the number of sequence slots of the KV cache.
	Seqs uint32
	// Batch and Out are the program's most rows and output rows.
	Batch, Out uint32
}

// Bounds are program pr's step bounds in this plan, with seqs sequence
// slots (a runtime's allocation, or the plan's MaxSeqs).
func (p *Plan) Bounds(pr *Program, seqs uint32) StepBounds {
	b := StepBounds{Slots: 1, Ctx: p.Model.HParams.Ctx, Seqs: seqs, Batch: pr.Batch, Out: pr.Outputs()}
	if k := pr.KindOf(); k == KindDecode || k == KindSampled {
		b.Slots = max(p.Header.Target.Tuning.ChainChunk, 1)
	}
	return b
}

// Max is the largest x kind k takes over steps within b: the reference the
// validator and the runtime's binding checks share.
func (b StepBounds) Max(k PatchKind) uint64 {
	switch k {
	case PatchToken:
		return uint64(max(b.Slots, 1)) - 1
	case PatchArgmaxSlot:
		return uint64(max(b.Slots, 1))
	case PatchPosition, PatchStartPosition:
		return uint64(max(b.Ctx, 1)) - 1
	case PatchKVLength, PatchPositionKV: // PositionKV's larger value is the KV length
		return uint64(b.Ctx)
	case PatchBatchLength:
		return uint64(b.Batch)
	case PatchSeq:
		return uint64(max(b.Seqs, 1)) - 1
	case PatchOutCount:
		return uint64(b.Out)
	}
	return 0
}

// Values returns the values p writes at step s: one, or two for
// PatchPositionKV (position, then KV length). This is the reference the
// runtimes' replay loops are tested against.
func (p Patch) Values(s Step) []uint64 {
	v := p.Base + p.Stride*p.Kind.X(s)
	if p.Kind == PatchPositionKV {
		return []uint64{v, p.Base + p.Stride*PatchKVLength.X(s)}
	}
	return []uint64{v}
}

// count is the number of values the patch writes.
func (p Patch) count() uint64 {
	if p.Kind == PatchPositionKV {
		return 2
	}
	return 1
}

// Program returns the program named name, or nil.
func (p *Plan) Program(name string) *Program {
	for i := range p.Programs {
		if p.Programs[i].Name == name {
			return &p.Programs[i]
		}
	}
	return nil
}

// Bucket returns the program of kind k (KindBatch, or a format-1 plan's
// KindPrefill) for n rows: the smallest bucket that holds them, else the
// largest (the runtime then splits the rows); nil if the plan has none.
func (p *Plan) Bucket(k ProgramKind, n uint32) *Program {
	var best, largest *Program
	for i := range p.Programs {
		q := &p.Programs[i]
		if q.KindOf() != k {
			continue
		}
		if largest == nil || q.Batch > largest.Batch {
			largest = q
		}
		if q.Batch >= n && (best == nil || q.Batch < best.Batch) {
			best = q
		}
	}
	if best != nil {
		return best
	}
	return largest
}
