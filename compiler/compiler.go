package compiler

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/specs"
	"github.com/akunu-dev/akunu/specs/chips"
)

// Version is the compiler's version, recorded in every plan's header. Bump
// it when the compiler emits different commands for the same inputs.
const Version = "0.1.0"

// DefaultCtx caps the plan's context when Options.Ctx is 0: the model's
// training context, but no more than this.
const DefaultCtx = 4096

// Options say how to compile.
type Options struct {
	// Chip is the target: chips.Resolve("m4-pro", 0), chips.Detect().
	Chip chips.Profile
	// Ctx is the plan's maximum context (KV cache positions); 0 means
	// min(ctx_train, DefaultCtx).
	Ctx int
	// SampledSumsOnly records only the sampled weight sums, not the sums
	// of every byte: compiling then reads ~32 KiB a tensor instead of the
	// whole model, and `akunu verify-model` cannot check the plan.
	SampledSumsOnly bool
	// NoTemplate leaves the GGUF's chat template out of the plan: a
	// template the chat engine cannot parse would refuse the compile;
	// without one, akunu chat uses --template or plain turns.
	NoTemplate bool
	// Pooling overrides the model's pooling_type for the embedding
	// program: PoolMean, PoolCLS or PoolLast; PoolNone leaves a decoder's
	// embedding program out; 0 takes the file's (a decoder whose file names
	// none gets no embedding program).
	Pooling int
	// KVType is the KV cache's element type: "f16" (the default, also for
	// ""), "q8_0" (ggml's 8-bit blocks: half the bytes a position, for
	// long contexts) or "f32" (twice the bytes; the reference the others
	// are held to). Only CPU plans take q8_0 and f32: the GPU kernels read
	// an F16 cache (ADR 0021).
	KVType string
	// Verbose, when set, receives one line per pass: its name, its time and
	// a one-line summary.
	Verbose io.Writer
}

// Pooling types, as llama.cpp's llama_pooling_type numbers them (PoolNone
// is -1 here, so that 0 can mean "the file's").
const (
	PoolNone = -1
	PoolMean = 1
	PoolCLS  = 2
	PoolLast = 3
)

// PoolingName names a pooling type: "mean", "cls", "last", or "none".
func PoolingName(p int) string {
	switch p {
	case PoolMean:
		return "mean"
	case PoolCLS:
		return "cls"
	case PoolLast:
		return "last"
	}
	return "none"
}

// Errors callers can test with errors.Is. Spec errors (specs.ErrUnknownArch,
// specs.ErrMissingTensor, ...) and kernels.ErrNoKernel are wrapped as they
// come.
var (
	// ErrUnsupported: the model needs something no kernel or rule provides.
	ErrUnsupported = errors.New("unsupported")
	// ErrOptions: the options cannot make a plan (a context of 0 positions).
	ErrOptions = errors.New("bad options")
)

// Compile maps the GGUF file at modelPath and compiles it. The passes read
// its header; the weights pass also reads its tensor data, to record the
// sums a load checks (ADR 0013), and records the file's absolute path.
func Compile(modelPath string, o Options) (*plans.Plan, error) {
	mp, err := gguf.Map(modelPath)
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	defer mp.Close()
	s := &state{file: mp.File, fileName: filepath.Base(modelPath), opts: o, mapping: mp}
	if s.modelPath, err = filepath.Abs(modelPath); err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	if err := run(s, o.Verbose); err != nil {
		return nil, err
	}
	return s.plan, nil
}

// CompileFile compiles a parsed GGUF header; fileName is recorded in the
// plan (its base name, for messages). With no tensor data at hand, the plan
// records no weight sums and no path.
func CompileFile(f *gguf.File, fileName string, o Options) (*plans.Plan, error) {
	s := &state{file: f, fileName: filepath.Base(fileName), opts: o}
	if err := run(s, o.Verbose); err != nil {
		return nil, err
	}
	return s.plan, nil
}

// state is what the passes share: their inputs, and what each leaves for
// the next. Every pass reads fields earlier passes set and sets its own.
type state struct {
	// inputs
	file     *gguf.File
	fileName string
	opts     Options
	// mapping and modelPath (absolute) are set when compiling from a file
	// (Compile): the weights pass sums its tensors.
	mapping   *gguf.Mapping
	modelPath string

	// lower
	arch    *specs.Arch
	hp      *specs.HParams
	prog    *specs.Program
	tuning  chips.Tuning
	act     dtype.Type // activation dtype: F16 (GPU) or F32 (CPU)
	kv      dtype.Type // the KV cache's element type (Options.KVType)
	kvVar   kernels.Variant
	ctx     int // the plan's maximum context
	tensors map[string]*gguf.TensorInfo
	graphs  []*Graph // one per program form, in Form order
	pooling int      // the embedding program's pooling type; 0 without one

	// layout, buffers, emit
	plan    *plans.Plan
	weights map[string]uint32 // weight buffer index by tensor name
	derived map[string]uint32 // derived buffer index by buffer name
	scratch *scratchPlan
	buckets []int
	progs   []*program
}

// pass is one entry of the pass table.
type pass struct {
	name     string
	fn       func(*state) (summary string, err error)
	required bool
	doc      string
}

// passes is THE pass table: the driver runs it top to bottom. A pass that
// is not required may be skipped (tests do, to look at an earlier form).
var passes = []pass{
	{"lower", lowerPass, true, "GGUF header + arch spec + chip → graph IR, one graph per program form"},
	{"fuse", fusePass, true, "apply fusion.rules, first match wins, to a fixpoint"},
	{"check", checkPass, false, "verify the IR: every value defined before use, no dead node left"},
	{"layout", layoutPass, true, "weight buffers into the file; derived (concat_rows) buffers of fused weights"},
	{"select", selectPass, true, "a catalog kernel per node and program, by dtype, shape and tuning"},
	{"buffers", bufferPass, true, "scratch (ping-pong by liveness), KV per layer, io buffers, exact sizes"},
	{"emit", emitPass, true, "commands, bindings, params, geometry, patches; header and model"},
	{"weights", weightsPass, true, "sums of every tensor's bytes (sampled; and full unless SampledSumsOnly) and the model's path"},
	{"validate", validatePass, true, "plans.Validate"},
}

// passOrder lists the ordering constraints the table must keep, as the Go
// compiler's passOrder does: a before b. Checked at start-up.
var passOrder = [...]struct{ a, b string }{
	{"lower", "fuse"},
	{"fuse", "check"},
	{"fuse", "layout"}, // derived buffers exist for fused weights only
	{"layout", "select"},
	{"select", "buffers"}, // the parallel attention's scratch depends on the kernel
	{"buffers", "emit"},
	{"emit", "validate"},
	{"emit", "weights"}, // it fills the header emit made
}

func init() {
	if err := checkPassOrder(passes); err != nil {
		panic(err)
	}
}

// checkPassOrder holds the table to passOrder: both passes present, in
// order, and no pass listed twice.
func checkPassOrder(ps []pass) error {
	at := map[string]int{}
	for i, p := range ps {
		if _, dup := at[p.name]; dup {
			return fmt.Errorf("compiler: pass %q listed twice", p.name)
		}
		at[p.name] = i
	}
	for _, o := range passOrder {
		a, okA := at[o.a]
		b, okB := at[o.b]
		if !okA || !okB {
			return fmt.Errorf("compiler: pass order %s before %s names a pass the table lacks", o.a, o.b)
		}
		if a >= b {
			return fmt.Errorf("compiler: pass %s must run before %s", o.a, o.b)
		}
	}
	return nil
}

// PassInfo describes one pass, for docs and `akunuc compile -v`.
type PassInfo struct {
	Name     string
	Required bool
	Doc      string
}

// Passes returns the pass table, in the order the passes run.
func Passes() []PassInfo {
	out := make([]PassInfo, len(passes))
	for i, p := range passes {
		out[i] = PassInfo{p.name, p.required, p.doc}
	}
	return out
}

// run is the driver: every pass in order, timed, each failure wrapped with
// "compile: ".
func run(s *state, verbose io.Writer) error {
	return runPasses(s, verbose, nil)
}

// runPasses runs the table, skipping the optional passes skip names.
func runPasses(s *state, verbose io.Writer, skip map[string]bool) error {
	for _, p := range passes {
		if skip[p.name] {
			if p.required {
				return fmt.Errorf("compile: pass %s is required", p.name)
			}
			continue
		}
		t0 := time.Now()
		summary, err := p.fn(s)
		if err != nil {
			return fmt.Errorf("compile: %w", err)
		}
		if verbose != nil {
			fmt.Fprintf(verbose, "%-9s %9s  %s\n", p.name, time.Since(t0).Round(time.Microsecond), summary)
		}
	}
	return nil
}
