package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
)

// Errors callers can test with errors.Is. A model file that is not the
// plan's wraps plans.ErrPlanMismatch.
var (
	// ErrModelFile: the GGUF file is missing or unreadable.
	ErrModelFile = errors.New("model file")
	// ErrUnsupportedPlan: the plan needs something this runtime does not
	// do (a repack recipe, logits that are not f32, no decode program).
	ErrUnsupportedPlan = errors.New("unsupported plan")
	// ErrContextFull: the tokens do not fit in the plan's context.
	ErrContextFull = errors.New("context full")
)

// Options configure Load.
type Options struct {
	// Model is the GGUF file; "" means the plan's recorded file name next
	// to the plan, then in the working directory.
	Model string
	// Backend runs the commands; nil means the CPU backend with Threads.
	Backend Backend
	Threads int
	// Progress, when set, is told what loading is doing (a stage name,
	// bytes done and total); it is called only for stages that take long.
	Progress func(stage string, done, total int64)
}

// Model is a plan bound to a backend over its mapped model file: every
// buffer allocated and every command of every program bound, ready to
// replay. It holds one KV cache, so one Session uses it at a time.
type Model struct {
	Plan      *plans.Plan
	Tokenizer *tokenizer.Tokenizer
	// ModelPath is the GGUF file mapped.
	ModelPath string
	// LoadTime is how long Load took.
	LoadTime time.Duration

	be      Backend
	mapping *gguf.Mapping
	bufs    [][]byte

	tokens     []uint32  // io "tokens"
	tokenBytes []byte    // the same buffer, as the backend's copies take it
	logits     []float32 // io "logits"
	// readback are two device buffers of ChainChunk token ids: chain k's
	// tokens are copied on the device into readback[k%2], where the host
	// reads them while chain k+1 runs (Session.decodeOverlapped).
	readback      [2][]uint32
	readbackBytes [2][]byte

	decode  *bound
	sampled *bound
	prefill []*bound // ascending batch
	// sample is the sampled program's gumbel_topk command, whose knobs a
	// generation rewrites; nil without a sampled program.
	sample Command
	// samplingParams are its parameter bytes as compiled.
	samplingParams []byte
}

// bound is one program with every command bound.
type bound struct {
	prog *plans.Program
	cmds []Command
}

// ModelPathFor is where Load looks for the plan's GGUF file when Options
// names none: the recorded base name next to the plan, else in the
// working directory.
func ModelPathFor(planPath string, p *plans.Plan) string {
	name := p.Header.Model.File
	next := filepath.Join(filepath.Dir(planPath), filepath.Base(name))
	if _, err := os.Stat(next); err == nil {
		return next
	}
	if _, err := os.Stat(name); err == nil {
		return name
	}
	return next
}

// Load reads the plan at planPath and binds it over its model file.
func Load(planPath string, o Options) (*Model, error) {
	start := time.Now()
	p, err := plans.ReadFile(planPath)
	if err != nil {
		return nil, err
	}
	if o.Model == "" {
		o.Model = ModelPathFor(planPath, p)
	}
	m, err := New(p, o)
	if err != nil {
		return nil, err
	}
	m.LoadTime = time.Since(start)
	return m, nil
}

// New binds a plan over the model file o.Model.
func New(p *plans.Plan, o Options) (m *Model, err error) {
	start := time.Now()
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
	be := o.Backend
	if be == nil {
		be = NewCPU(o.Threads)
	}
	m = &Model{Plan: p, ModelPath: o.Model, be: be, mapping: mp}
	defer func() {
		if err != nil {
			m.Close()
			m = nil
		}
	}()
	if m.Tokenizer, err = Tokenizer(&p.Model.Tokenizer); err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	if err := m.allocate(o.Progress); err != nil {
		return nil, err
	}
	if err := m.bindAll(); err != nil {
		return nil, err
	}
	m.LoadTime = time.Since(start)
	return m, nil
}

// Backend is the backend the model runs on.
func (m *Model) Backend() Backend { return m.be }

// Close releases the backend and the mapping.
func (m *Model) Close() error {
	if m.be != nil {
		m.be.Close()
		m.be = nil
	}
	if m.mapping != nil {
		err := m.mapping.Close()
		m.mapping = nil
		return err
	}
	return nil
}

// allocate makes every buffer of the plan: weights are the mapped file's
// bytes, derived weights are built from them, the rest is device memory.
func (m *Model) allocate(progress func(string, int64, int64)) error {
	p := m.Plan
	file := m.mapping.Bytes()
	m.bufs = make([][]byte, len(p.Buffers))
	var derivedTotal, derivedDone int64
	for _, b := range p.Buffers {
		if b.Kind == plans.BufDerived {
			derivedTotal += int64(b.Size)
		}
	}
	start, last := time.Now(), time.Now()
	for i := range p.Buffers {
		b := &p.Buffers[i]
		var err error
		switch b.Kind {
		case plans.BufWeight:
			if b.Offset > uint64(len(file)) || b.Size > uint64(len(file))-b.Offset {
				return fmt.Errorf("runtime: buffer %q: tensor %q at [%d, %d) lies outside %s (%d bytes): %w",
					b.Name, b.Tensor, b.Offset, b.Offset+b.Size, m.ModelPath, len(file), plans.ErrPlanMismatch)
			}
			m.bufs[i], err = m.be.Wrap(file[b.Offset : b.Offset+b.Size : b.Offset+b.Size])
		case plans.BufDerived:
			if b.Recipe != plans.RecipeConcatRows {
				return fmt.Errorf("runtime: buffer %q: recipe %q: %w", b.Name, b.Recipe, ErrUnsupportedPlan)
			}
			data, err := m.be.Alloc(int(b.Size))
			if err != nil {
				return fmt.Errorf("runtime: buffer %q: %w", b.Name, err)
			}
			off := uint64(0)
			for _, s := range b.Sources {
				if int(s) >= i || p.Buffers[s].Kind != plans.BufWeight {
					return fmt.Errorf("runtime: buffer %q: source %d is not a weight before it: %w", b.Name, s, plans.ErrInvalid)
				}
				src := m.bufs[s]
				if off+uint64(len(src)) > b.Size {
					return fmt.Errorf("runtime: buffer %q: sources exceed its %d bytes: %w", b.Name, b.Size, plans.ErrInvalid)
				}
				copy(data[off:], src)
				off += uint64(len(src))
				derivedDone += int64(len(src))
				if progress != nil && time.Since(last) > 500*time.Millisecond && time.Since(start) > time.Second {
					last = time.Now()
					progress("derived weights", derivedDone, derivedTotal)
				}
			}
			if off != b.Size {
				return fmt.Errorf("runtime: buffer %q: sources give %d of its %d bytes: %w", b.Name, off, b.Size, plans.ErrInvalid)
			}
			m.bufs[i] = data
		case plans.BufConstant, plans.BufParams:
			if m.bufs[i], err = m.be.Alloc(int(b.Size)); err == nil {
				copy(m.bufs[i], b.Data)
			}
		case plans.BufScratch, plans.BufKV, plans.BufIO:
			m.bufs[i], err = m.be.Alloc(int(b.Size))
		default:
			return fmt.Errorf("runtime: buffer %q: kind %v: %w", b.Name, b.Kind, ErrUnsupportedPlan)
		}
		if err != nil {
			return fmt.Errorf("runtime: buffer %q: %w", b.Name, err)
		}
		if b.Kind == plans.BufIO {
			switch b.Role {
			case "tokens":
				m.tokenBytes = m.bufs[i]
				m.tokens = u32s(m.bufs[i])
			case "logits":
				if b.DType != "" && b.DType != "f32" {
					return fmt.Errorf("runtime: buffer %q: logits of dtype %s: %w", b.Name, b.DType, ErrUnsupportedPlan)
				}
				m.logits = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(m.bufs[i]))), len(m.bufs[i])/4)
			}
		}
	}
	if progress != nil && time.Since(start) > time.Second {
		progress("derived weights", derivedTotal, derivedTotal)
	}
	switch {
	case m.tokens == nil:
		return fmt.Errorf("runtime: the plan has no io \"tokens\" buffer: %w", ErrUnsupportedPlan)
	case len(m.logits) < int(p.Model.HParams.Vocab):
		return fmt.Errorf("runtime: the plan has no io \"logits\" buffer of %d values: %w", p.Model.HParams.Vocab, ErrUnsupportedPlan)
	}
	m.logits = m.logits[:p.Model.HParams.Vocab]
	for i := range m.readback {
		b, err := m.be.Alloc(4 * m.chainChunk())
		if err != nil {
			return fmt.Errorf("runtime: the chain readback buffer: %w", err)
		}
		m.readbackBytes[i], m.readback[i] = b, u32s(b)
	}
	return nil
}

// u32s views device bytes as uint32s (Alloc's memory is 64-byte aligned
// on the CPU, page-aligned on Metal).
func u32s(b []byte) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// bindAll creates every pipeline and binds every command of every program.
func (m *Model) bindAll() error {
	p := m.Plan
	pipes := make([]Pipeline, len(p.Pipelines))
	for i, pl := range p.Pipelines {
		var err error
		if pipes[i], err = m.be.Pipeline(pl); err != nil {
			return fmt.Errorf("runtime: pipeline %s: %w", pl.Key, err)
		}
	}
	for pi := range p.Programs {
		prog := &p.Programs[pi]
		b := &bound{prog: prog, cmds: make([]Command, len(prog.Commands))}
		for ci := range prog.Commands {
			c := &prog.Commands[ci]
			if int(c.Pipeline) >= len(pipes) {
				return fmt.Errorf("runtime: %s[%d] %s: pipeline %d of %d: %w", prog.Name, ci, c.Label, c.Pipeline, len(pipes), plans.ErrInvalid)
			}
			cmd, err := m.be.Bind(pipes[c.Pipeline], c, m.bufs)
			if err != nil {
				return fmt.Errorf("runtime: %s[%d] %s: %w", prog.Name, ci, c.Label, err)
			}
			b.cmds[ci] = cmd
			if prog.Name == plans.ProgSampled && strings.HasPrefix(p.Pipelines[c.Pipeline].Kernel, "gumbel_topk") {
				m.sample, m.samplingParams = cmd, slices.Clone(c.Params)
			}
		}
		switch {
		case prog.Name == plans.ProgDecode:
			m.decode = b
		case prog.Name == plans.ProgSampled:
			m.sampled = b
		case strings.HasPrefix(prog.Name, plans.PrefillPrefix):
			m.prefill = append(m.prefill, b)
		}
	}
	if m.decode == nil {
		return fmt.Errorf("runtime: the plan has no %s program: %w", plans.ProgDecode, ErrUnsupportedPlan)
	}
	slices.SortFunc(m.prefill, func(a, b *bound) int { return int(a.prog.Batch) - int(b.prog.Batch) })
	return nil
}

// chainChunk is the most decode steps one submission may hold: the plan's
// ChainChunk, bounded by the token slots (step i writes slot i+1).
func (m *Model) chainChunk() int {
	n := int(m.Plan.Header.Target.Tuning.ChainChunk)
	if n < 1 {
		n = 1
	}
	return min(n, len(m.tokens)-1)
}

// prefillFor is the prefill program for n remaining tokens: the smallest
// bucket that holds them, else the largest (up to PrefillChunk); nil when
// the plan has none.
func (m *Model) prefillFor(n int) *bound {
	var largest *bound
	limit := int(m.Plan.Header.Target.Tuning.PrefillChunk)
	for _, b := range m.prefill {
		bb := int(b.prog.Batch)
		if bb > len(m.tokens) || (limit > 0 && bb > limit && largest != nil) {
			continue
		}
		if bb >= n {
			return b
		}
		largest = b
	}
	return largest
}

// Ctx is the plan's context: the most positions a session holds.
func (m *Model) Ctx() int { return int(m.Plan.Model.HParams.Ctx) }

// DecodeBytes is what one decode step reads, by the plan's accounting.
func (m *Model) DecodeBytes() uint64 {
	var n uint64
	for _, c := range m.decode.prog.Commands {
		n += c.BytesRead
	}
	return n
}
