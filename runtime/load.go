package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/device"
	"github.com/akunu-dev/akunu/runtime/grammar"
	"github.com/akunu-dev/akunu/runtime/sampling"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
)

// Errors callers can test with errors.Is. A model file that is not the
// plan's wraps plans.ErrPlanMismatch.
var (
	// ErrModelFile: the GGUF file is missing or unreadable.
	ErrModelFile = errors.New("model file")
	// ErrUnsupportedPlan: the plan needs something this runtime does not
	// do (a repack recipe, logits that are not f32, no decode program,
	// batches of several sequences from a format-1 plan).
	ErrUnsupportedPlan = errors.New("unsupported plan")
	// ErrContextFull: the tokens do not fit in the plan's context.
	ErrContextFull = errors.New("context full")
	// ErrNoSeq: every sequence slot of the KV cache is taken.
	ErrNoSeq = errors.New("no free sequence slot")
)

// Options configure Load.
type Options struct {
	// Model is the GGUF file; "" means FindModel's: the plan's recorded
	// file name next to the plan, its recorded path, the working directory.
	Model string
	// VerifyWeights reads every byte of the model and holds it to the
	// plan's full weight sums, instead of the sampled sums every load
	// checks (ADR 0013).
	VerifyWeights bool
	// Backend runs the commands, shared with other models; nil means a CPU
	// backend with Threads that the model owns and closes.
	Backend Backend
	// NewBackend, where Backend is nil, makes the backend from the plan's
	// target once Load has read the plan (the CLI's --backend auto), so
	// the plan is read once; the caller owns what it makes, as a Backend
	// it passed (Load closes it only when the load fails).
	NewBackend func(plans.Target) (Backend, error)
	Threads    int
	// Seqs is the number of sequence slots of the KV cache: the sessions
	// the model serves at once (0: 1). At most the plan's max_seqs; each
	// costs the KV cache of a whole context.
	Seqs int
	// SeqsFor, when set, decides Seqs from the plan once Load has read it
	// (a command whose slots depend on what the plan holds reads it once).
	SeqsFor func(*plans.Plan) int
	// Progress, when set, is told what loading is doing (a stage name,
	// bytes done and total); it is called only for stages that take long.
	Progress func(stage string, done, total int64)
}

// Model is a plan bound to a backend over its mapped model file: every
// buffer made and every command of every program bound, ready to replay.
// Its KV cache has Seqs sequence slots; each Session holds one.
type Model struct {
	Plan      *plans.Plan
	Tokenizer *tokenizer.Tokenizer
	// ModelPath is the GGUF file mapped.
	ModelPath string
	// LoadTime is how long Load took.
	LoadTime time.Duration
	// WeightCheck says what the load checked of the weights, or why it
	// checked nothing (a plan older than weight sums): one line.
	WeightCheck string
	// FreedWeights is the bytes of weights freed once loaded because no
	// command reads them, only the buffers derived from them.
	FreedWeights int64

	be       Backend
	ownsBE   bool
	mapping  *gguf.Mapping
	bufs     []device.Buffer // the plan's buffers by index
	progs    []device.Program
	vocab    int
	maxBatch int // the largest batch program's rows
	// decodeRows is the most rows of distinct sequences a Forward replays
	// as decode steps (the backend's DecodeRows; 1: a lone row only).
	decodeRows int
	// splitRows: a replay of more rows than this, and at most twice as
	// many, runs as two (the backend's SplitRows; 0: none).
	splitRows int
	// logitRows is the LM heads' restriction to a shortlist of the
	// vocabulary (a draft model's; shortlist.go): its commands, whether it
	// is on, and the list's owner and version.
	logitRows struct {
		heads []lmHead
		on    bool
		owner any
		ver   uint64
	}

	// grammarVocab is the tokens' bytes as a grammar matches them, built
	// on the first constrained generation (constrain.go).
	grammarOnce  sync.Once
	grammarVocab *grammar.Vocab

	// The io buffers the engine writes and reads (positions, seqs, out
	// rows and argmax: zero in a format-1 plan).
	io struct {
		tokens, pos, seqs, outRows, argmax, logits device.Buffer
		// embedding programs (embed.go)
		seqLast, poolRanges, embeddings device.Buffer
	}
	tokenSlots int
	// readback are two buffers of ChainChunk token ids: chain k's tokens
	// are copied on the device into readback[k%2], where the host reads
	// them while chain k+1 runs (Session.decodeOverlapped).
	readback [2]device.Buffer

	decode, sampled *program
	batch           []*program // ascending rows
	embed           []*program // ascending rows: an embedding model's programs (embed.go)
	prefill         []*program // format 1: ascending rows
	// sampleCmd is the sampled program's gumbel_topk command, whose knobs a
	// generation rewrites; samplingParams its parameter bytes as compiled.
	sampleCmd      int
	samplingParams []byte
	// sampling is what the gumbel_topk command holds, once written.
	sampling    sampling.Params
	samplingSet bool

	kv kvSlots
	// out are the outputs of the last Forward (forward.go).
	out outputs
	// stage is host memory for io writes and reads: a u32 per row; step
	// the one step of a replay that is not a chain.
	stage []byte
	step  [1]plans.Step
	// pre is the batch a session's prompt is fed as.
	pre Batch
	// single are commands bound alone, for RunCommand.
	single map[string]device.Program
}

// program is one program of the plan, bound.
type program struct {
	p *plans.Program
	h device.Program
}

// ModelPathFor is the GGUF file Load maps for the plan when Options names
// none (FindModel), or where it looked first when it found none.
func ModelPathFor(planPath string, p *plans.Plan) string {
	if path, err := FindModel(planPath, p); err == nil {
		return path
	}
	return filepath.Join(filepath.Dir(planPath), filepath.Base(p.Header.Model.File))
}

// Load reads the plan at planPath and binds it over its model file.
func Load(planPath string, o Options) (*Model, error) {
	start := time.Now()
	p, err := plans.ReadFile(planPath)
	if err != nil {
		return nil, err
	}
	if o.Model == "" {
		if o.Model, err = FindModel(planPath, p); err != nil {
			return nil, err
		}
	}
	if o.SeqsFor != nil {
		o.Seqs = o.SeqsFor(p)
	}
	made := false
	if o.Backend == nil && o.NewBackend != nil {
		if o.Backend, err = o.NewBackend(p.Header.Target); err != nil {
			return nil, err
		}
		made = true
	}
	m, err := New(p, o)
	if err != nil {
		if made {
			o.Backend.Close()
		}
		return nil, err
	}
	m.LoadTime = time.Since(start)
	return m, nil
}

// New binds a plan over the model file o.Model.
func New(p *plans.Plan, o Options) (*Model, error) {
	start := time.Now()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	seqs := max(o.Seqs, 1)
	if limit := int(p.Header.Target.Tuning.Seqs()); seqs > limit {
		return nil, fmt.Errorf("runtime: %d sequence slots asked for; the plan allows %d (akunuc compile sets max_seqs by chip): %w", seqs, limit, ErrUnsupportedPlan)
	}
	st, err := os.Stat(o.Model)
	if err != nil {
		return nil, fmt.Errorf("runtime: the plan needs its model file %s (compiled from %s of %d bytes); pass it with --model or put it next to the plan: %w",
			o.Model, p.Header.Model.File, p.Header.Model.Size, ErrModelFile)
	}
	if uint64(st.Size()) != p.Header.Model.Size {
		// Refuse before mapping: a different size cannot be the same file.
		return nil, fmt.Errorf("runtime: %s: %w", o.Model, p.CheckModel(st.Size(), [32]byte{}))
	}
	mp, err := gguf.Map(o.Model)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w: %w", ErrModelFile, err)
	}
	if err := p.CheckModel(mp.FileSize, mp.HeaderHash); err != nil {
		mp.Close()
		return nil, fmt.Errorf("runtime: %s: %w", o.Model, err)
	}
	if err := checkTensors(p, mp.File); err != nil {
		mp.Close()
		return nil, fmt.Errorf("runtime: %s: %w", o.Model, err)
	}
	note, err := checkWeights(p, mp, o.VerifyWeights)
	if err != nil {
		mp.Close()
		return nil, fmt.Errorf("runtime: %s: %w", o.Model, err)
	}
	m := &Model{Plan: p, ModelPath: o.Model, WeightCheck: note, be: o.Backend, mapping: mp, vocab: int(p.Model.HParams.Vocab), decodeRows: 1}
	if d, ok := o.Backend.(decodeRows); ok {
		m.decodeRows = max(1, d.DecodeRows(p))
	}
	if sr, ok := o.Backend.(splitRows); ok {
		m.splitRows = max(0, sr.SplitRows(p))
	}
	if m.be == nil {
		m.be, m.ownsBE = NewCPU(o.Threads), true
	}
	if err := m.init(seqs, o.Progress); err != nil {
		m.Close() // m, not a nil result: what was made is released
		return nil, err
	}
	m.LoadTime = time.Since(start)
	return m, nil
}

// init does what New does after mapping: tokenizer, buffers, programs.
func (m *Model) init(seqs int, progress func(string, int64, int64)) error {
	var err error
	if m.Tokenizer, err = Tokenizer(&m.Plan.Model.Tokenizer); err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	m.kv.init(seqs)
	if err := m.allocate(progress); err != nil {
		return err
	}
	m.freeSourceOnly()
	return m.bindAll()
}

// freeSourceOnly frees the weights no command binds: read only to build
// the buffers derived from them (a GPU plan's concatenated q|k|v and
// gate|up rows and planar layouts), they would hold a GPU's memory for
// nothing (on CUDA the 8B shape's q, k, v, gate and up weights, 2.6 GB
// of its 4.7). On the CPU, whose weights are the mapped file's pages,
// it frees only the wrappers.
func (m *Model) freeSourceOnly() {
	bound := make([]bool, len(m.Plan.Buffers))
	for _, pr := range m.Plan.Programs {
		for _, c := range pr.Commands {
			for _, b := range c.Bindings {
				if int(b.Buffer) < len(bound) {
					bound[b.Buffer] = true
				}
			}
		}
	}
	for i := range m.Plan.Buffers {
		b := &m.Plan.Buffers[i]
		if b.Kind == plans.BufWeight && !bound[i] && m.bufs[i].Valid() {
			m.be.Free(m.bufs[i])
			m.bufs[i] = device.Buffer{}
			m.FreedWeights += int64(b.Size)
		}
	}
}

// Backend is the backend the model runs on.
func (m *Model) Backend() Backend { return m.be }

// Close releases what the model made on its backend (and the backend, if
// the model owns it) and the mapping. Sessions must not be used afterwards.
// Closing a nil Model does nothing.
func (m *Model) Close() error {
	if m == nil {
		return nil // a failed Load's result: nothing to release
	}
	if m.be != nil {
		if m.ownsBE {
			m.be.Close()
		} else {
			for _, h := range m.progs {
				m.be.Unbind(h)
			}
			for _, b := range m.bufs {
				if b.Valid() {
					m.be.Free(b)
				}
			}
			for _, b := range m.readback {
				if b.Valid() {
					m.be.Free(b)
				}
			}
		}
		m.be, m.progs, m.bufs = nil, nil, nil
	}
	if m.mapping != nil {
		err := m.mapping.Close()
		m.mapping = nil
		return err
	}
	return nil
}

// allocate makes every buffer of the plan on the backend: weights are the
// mapped file's bytes, mapped (or uploaded) by the backend; derived weights
// are built by the backend from them by their recipe; constants are
// written; scratch and io are allocated; the KV cache has a slot per
// sequence, back to back.
func (m *Model) allocate(progress func(string, int64, int64)) error {
	p := m.Plan
	file := m.mapping.Bytes()
	m.bufs = make([]device.Buffer, len(p.Buffers))
	var total, done int64
	for _, b := range p.Buffers {
		if b.Kind == plans.BufWeight || b.Kind == plans.BufDerived {
			total += int64(b.Size)
		}
	}
	start, last := time.Now(), time.Now()
	report := func(n uint64) {
		done += int64(n)
		if progress != nil && time.Since(last) > 500*time.Millisecond && time.Since(start) > time.Second {
			last = time.Now()
			progress("weights", done, total)
		}
	}
	for i := range p.Buffers {
		b := &p.Buffers[i]
		var err error
		switch b.Kind {
		case plans.BufWeight:
			if b.Offset > uint64(len(file)) || b.Size > uint64(len(file))-b.Offset {
				return fmt.Errorf("runtime: buffer %q: tensor %q at [%d, %d) lies outside %s (%d bytes): %w",
					b.Name, b.Tensor, b.Offset, b.Offset+b.Size, m.ModelPath, len(file), plans.ErrPlanMismatch)
			}
			m.bufs[i], err = m.be.Map(file[b.Offset : b.Offset+b.Size : b.Offset+b.Size])
			report(b.Size)
		case plans.BufDerived:
			srcs := make([]device.Buffer, len(b.Sources))
			for j, s := range b.Sources {
				if int(s) >= i || p.Buffers[s].Kind != plans.BufWeight {
					return fmt.Errorf("runtime: buffer %q: source %d is not a weight before it: %w", b.Name, s, plans.ErrInvalid)
				}
				srcs[j] = m.bufs[s]
			}
			if b.Recipe != plans.RecipeConcatRows && !strings.HasPrefix(b.Recipe, plans.RecipeRepackPrefix) {
				return fmt.Errorf("runtime: buffer %q: recipe %q: %w", b.Name, b.Recipe, ErrUnsupportedPlan)
			}
			rowElems := 0
			if len(b.Shape) > 0 {
				rowElems = int(b.Shape[0])
			}
			m.bufs[i], err = m.be.Derive(b.Recipe, srcs, int(b.Size), rowElems)
			report(b.Size)
		case plans.BufConstant, plans.BufParams:
			if m.bufs[i], err = m.be.Alloc(int(b.Size)); err == nil {
				err = m.be.Write(m.bufs[i], 0, b.Data)
			}
		case plans.BufKV:
			m.bufs[i], err = m.be.Alloc(int(b.Size) * m.kv.seqs)
		case plans.BufScratch, plans.BufIO:
			m.bufs[i], err = m.be.Alloc(int(b.Size))
		default:
			return fmt.Errorf("runtime: buffer %q: kind %v: %w", b.Name, b.Kind, ErrUnsupportedPlan)
		}
		if err != nil {
			return fmt.Errorf("runtime: buffer %q: %w", b.Name, err)
		}
		if b.Kind == plans.BufIO {
			if err := m.ioBuffer(b, m.bufs[i]); err != nil {
				return err
			}
		}
	}
	if progress != nil && time.Since(start) > time.Second {
		progress("weights", total, total)
	}
	switch {
	case !m.io.tokens.Valid():
		return fmt.Errorf("runtime: the plan has no io \"tokens\" buffer: %w", ErrUnsupportedPlan)
	case m.Plan.Program(plans.ProgDecode) != nil && (!m.io.logits.Valid() || m.io.logits.Size() < 4*m.vocab):
		return fmt.Errorf("runtime: the plan has no io \"logits\" buffer of %d values: %w", m.vocab, ErrUnsupportedPlan)
	}
	m.tokenSlots = m.io.tokens.Size() / 4
	for i := range m.readback {
		b, err := m.be.Alloc(4 * m.chainChunk())
		if err != nil {
			return fmt.Errorf("runtime: the chain readback buffer: %w", err)
		}
		m.readback[i] = b
	}
	return nil
}

// ioBuffer records an io buffer the engine writes or reads, by its role.
func (m *Model) ioBuffer(b *plans.Buffer, h device.Buffer) error {
	switch b.Role {
	case "tokens":
		m.io.tokens = h
	case "positions":
		m.io.pos = h
	case "seqs":
		m.io.seqs = h
	case "out_rows":
		m.io.outRows = h
	case "argmax":
		m.io.argmax = h
	case "zeros": // ids of row 0 for every row (an encoder's token types)
		if err := m.be.Write(h, 0, make([]byte, b.Size)); err != nil {
			return fmt.Errorf("runtime: buffer %q: %w", b.Name, err)
		}
	case "seq_last":
		m.io.seqLast = h
	case "pool_ranges":
		m.io.poolRanges = h
	case "embeddings":
		m.io.embeddings = h
	case "logits":
		if b.DType != "" && b.DType != "f32" {
			return fmt.Errorf("runtime: buffer %q: logits of dtype %s: %w", b.Name, b.DType, ErrUnsupportedPlan)
		}
		m.io.logits = h
	}
	return nil
}

// bindAll resolves and binds every program: decode, sampled, the batch
// programs (or a format-1 plan's prefill programs).
func (m *Model) bindAll() error {
	p := m.Plan
	for pi := range p.Programs {
		pr := &p.Programs[pi]
		cmds := make([]device.Command, len(pr.Commands))
		bounds := p.Bounds(pr, uint32(m.kv.seqs))
		for ci := range pr.Commands {
			c, err := device.Resolve(p, pr, ci, m.bufs, bounds)
			if err != nil {
				return fmt.Errorf("runtime: %w", err)
			}
			cmds[ci] = c
		}
		h, err := m.be.Bind(cmds)
		if err != nil {
			return fmt.Errorf("runtime: %s: %w", pr.Name, err)
		}
		m.progs = append(m.progs, h)
		b := &program{p: pr, h: h}
		switch pr.KindOf() {
		case plans.KindDecode:
			m.decode = b
		case plans.KindSampled:
			m.sampled = b
			for ci, c := range cmds {
				if strings.HasPrefix(c.Kernel.Name, "gumbel_topk") {
					m.sampleCmd, m.samplingParams = ci, slices.Clone(c.Params)
				}
			}
			if m.samplingParams == nil {
				return fmt.Errorf("runtime: the %s program has no gumbel_topk command: %w", pr.Name, ErrUnsupportedPlan)
			}
		case plans.KindBatch:
			m.batch = append(m.batch, b)
			m.maxBatch = max(m.maxBatch, int(pr.Batch))
		case plans.KindPrefill:
			m.prefill = append(m.prefill, b)
		case plans.KindEmbed:
			m.embed = append(m.embed, b)
		}
	}
	if m.decode == nil && len(m.embed) == 0 {
		return fmt.Errorf("runtime: the plan has no %s program: %w", plans.ProgDecode, ErrUnsupportedPlan)
	}
	if len(m.embed) > 0 && (!m.io.pos.Valid() || !m.io.seqs.Valid() || !m.io.poolRanges.Valid() || !m.io.embeddings.Valid()) {
		return fmt.Errorf("runtime: the plan's embedding programs lack their io buffers (positions, seqs, pool_ranges, embeddings): %w", ErrUnsupportedPlan)
	}
	if len(m.batch) > 0 && (!m.io.pos.Valid() || !m.io.seqs.Valid() || !m.io.outRows.Valid() || !m.io.argmax.Valid()) {
		return fmt.Errorf("runtime: the plan's batch programs lack their io buffers (positions, seqs, out_rows, argmax): %w", ErrUnsupportedPlan)
	}
	byRows := func(a, b *program) int { return int(a.p.Batch) - int(b.p.Batch) }
	slices.SortFunc(m.batch, byRows)
	slices.SortFunc(m.prefill, byRows)
	slices.SortFunc(m.embed, byRows)
	m.out.init(m)
	embedRows := 0
	if len(m.embed) > 0 {
		embedRows = int(m.embed[len(m.embed)-1].p.Batch)
	}
	m.stage = make([]byte, 4*max(m.tokenSlots, m.maxBatch, m.out.max, m.chainChunk(), embedRows, m.io.poolRanges.Size()/4))
	return nil
}

// chainChunk is the most decode steps one submission may hold: the plan's
// ChainChunk, bounded by the token slots (step i writes slot i+1).
func (m *Model) chainChunk() int {
	n := int(m.Plan.Header.Target.Tuning.ChainChunk)
	if n < 1 {
		n = 1
	}
	return min(n, m.io.tokens.Size()/4-1)
}

// Ctx is the plan's context: the most positions a session holds.
func (m *Model) Ctx() int { return int(m.Plan.Model.HParams.Ctx) }

// Vocab is the number of logits a step produces.
func (m *Model) Vocab() int { return m.vocab }

// DecodeBytes is what one decode step reads, by the plan's accounting:
// every decode attention command counted as reading a whole sequence's K
// and V, Ctx positions of them (akunuc inspect's "bytes per token").
func (m *Model) DecodeBytes() uint64 { return m.DecodeBytesAt(m.Ctx()) }

// DecodeBytesAt is what one decode step reads with kvLen positions cached:
// the plan's accounting, with each decode attention command's read (its
// query and the sequence's whole K and V, by the compiler's count) scaled
// by kvLen / Ctx. The query is a few kilobytes of the megabytes a full
// cache holds, so scaling it too moves the figure by a few parts in ten
// thousand; the K and V rows it reads are the ones that count. A decode
// from an empty context reads its weights and hardly any cache, and a
// roofline that counted the whole cache would credit it with reads it did
// not do (on the Qwen3-0.6B shape at a 2048 context, 224 of 546 MiB).
func (m *Model) DecodeBytesAt(kvLen int) uint64 {
	var n uint64
	if m.decode == nil {
		return 0
	}
	ctx := max(m.Ctx(), 1)
	kvLen = min(max(kvLen, 0), ctx)
	for _, c := range m.decode.p.Commands {
		if kernels.ReadsWholeCache(m.Plan.Pipelines[c.Pipeline].Kernel) {
			n += uint64(float64(c.BytesRead) * float64(kvLen) / float64(ctx))
			continue
		}
		n += c.BytesRead
	}
	return n
}
