package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	goruntime "runtime"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/runtime/cuda"
	"github.com/akunu-dev/akunu/runtime/metal"
)

func init() {
	app.Register(cli.Command{
		Name:    "verify",
		Summary: "run a plan on a backend and on the CPU side by side, command by command, and name the first command whose outputs differ",
		Usage:   "PLAN [--backend cuda|metal|cpu] [-n N] [-p PROMPT] [--model PATH] [--threads N] [--metallib DIR] [--verify-weights]",
		Run:     runVerify,
	})
}

func runVerify(ctx *cli.Context, args []string) error {
	fs := ctx.Flags("verify")
	def := "cuda"
	if goruntime.GOOS == "darwin" {
		def = "metal"
	}
	backend := fs.String("backend", def, "the backend held to the CPU: cuda, metal, or cpu (the CPU against itself, a sanity check)")
	n := fs.Int("n", 8, "decode steps after the prompt")
	prompt := fs.String("p", "Once upon a time", "the prompt prefilled first")
	model := fs.String("model", "", "the GGUF file (default: the plan's recorded file name next to the plan)")
	threads := fs.Int("threads", 0, "CPU threads (0: every core)")
	metallib := fs.String("metallib", "", "a directory of precompiled .metallib files (docs/metal-runtime.md)")
	verifyWeights := fs.Bool("verify-weights", false, "read every byte of the model and check it against the plan's sums (every load checks sampled blocks)")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if err := firstError(atLeast("n", *n, 0, " (0: the prompt only)"), checkThreads(*threads)); err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: want one PLAN", cli.ErrUsage)
	}
	var be runtime.Backend
	switch *backend {
	case "cpu":
		be = runtime.NewCPU(*threads)
	case "metal":
		if be, err = runtime.NewMetal(metal.Options{MetallibDir: *metallib, EncoderPerCommand: true}); err != nil {
			return err
		}
	case "cuda":
		// every command waited for, so a fault names its command
		if be, err = runtime.NewCUDA(cuda.Options{SyncEachCommand: true}); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: --backend %q: cuda, metal or cpu", cli.ErrUsage, *backend)
	}
	a, err := runtime.Load(pos[0], runtime.Options{Model: *model, Backend: be, VerifyWeights: *verifyWeights})
	if err != nil {
		be.Close()
		return err
	}
	defer closeModel(a)
	ref, err := runtime.Load(pos[0], runtime.Options{Model: *model, Threads: *threads})
	if err != nil {
		return err
	}
	defer ref.Close()
	ids := a.Tokenizer.Tokenize(*prompt, true, false)
	rep, err := verifyModels(a, ref, ids, *n)
	if err != nil {
		return err
	}
	rep.print(ctx.Stdout, *backend)
	if rep.Mismatch != nil {
		return cli.Exit{Code: 1}
	}
	return nil
}

// tolerance is how closely a command's outputs must agree with the CPU's.
type tolerance struct {
	kind tolKind
	// rel bounds |got - want| by rel × the largest |want| of the output.
	rel float64
	why string
}

type tolKind uint8

const (
	tolValues   tolKind = iota // floats within rel of the largest magnitude
	tolIDs                     // token ids equal, or a near tie of their logits
	tolExactIDs                // token ids equal
)

// relF16 is the activations' tolerance: F16 keeps 11 significant bits
// (4.9e-4 relative); kernels that sum in another order or through f16
// intermediates drift a few units of that, measured against the output's
// largest magnitude so that values near zero do not dominate.
const relF16 = 2e-3

// tolerances is the one table of what "agrees" means, per kernel family.
// Families not listed are activations.
var tolerances = []struct {
	ops []kernels.Op
	tol tolerance
}{
	{[]kernels.Op{kernels.OpArgmax}, tolerance{tolIDs, relF16,
		"argmax: the same id, unless the two ids' logits are within 2e-3 of the largest logit magnitude"}},
	{[]kernels.Op{kernels.OpGumbelTopK}, tolerance{tolValues, relF16,
		"sampling: noised logits within 2e-3, the same positions masked; the id after it exact"}},
}

var activationTolerance = tolerance{tolValues, relF16, "f16 activations: within 2e-3 of the output's largest magnitude"}

// relQuantized is the tolerance of a matrix product over quantized weights:
// the CPU meets them with its activations quantized to 8 bits (ggml's
// vec_dot_type: Q8_0, or Q8_K for the K-quants), a GPU with f16
// activations. Each activation moves by up to half a step of its 8-bit
// block (1/254 of the block's largest magnitude), so the two products part
// by a share of the output's largest magnitude that grows with the rows'
// spread: measured on an H100 2.3e-2 (Q8_0 weights) and 1.8e-2 (Q4_K) with
// synthetic weights; a wrong kernel parts them by its whole magnitude.
const relQuantized = 5e-2

var quantizedTolerance = tolerance{tolValues, relQuantized,
	"quantized weights: the CPU's activations are 8-bit (ggml's vec_dot_type), a GPU's f16: within 5e-2 of the output's largest magnitude"}

// toleranceFor is the tolerance of kernel k in program prog: the argmax
// after the sampling kernel must pick the same id, since the same seed
// gives the same noise; a matrix product over quantized weights allows the
// CPU's 8-bit activations.
func toleranceFor(k *kernels.Kernel, prog string) tolerance {
	op := k.Op
	switch op {
	case kernels.OpGEMV, kernels.OpGEMM, kernels.OpGEMVID, kernels.OpGEMMID:
		if k.DType.Quantized() {
			return quantizedTolerance
		}
	}
	for _, t := range tolerances {
		for _, o := range t.ops {
			if o == op {
				if op == kernels.OpArgmax && prog == plans.ProgSampled {
					return tolerance{tolExactIDs, 0, "sampling: the same id for the same seed"}
				}
				return t.tol
			}
		}
	}
	return activationTolerance
}

// verifyReport is what verify found.
type verifyReport struct {
	Commands      int // commands compared
	PromptTokens  int
	DecodeSteps   int
	Embedding     bool // an embedding model's plan: the prompt was one input of an embedding program
	Mismatch      *mismatch
	Backend, Base string
}

// mismatch is the first command whose outputs differ beyond tolerance.
type mismatch struct {
	Program string
	Index   int
	Label   string
	Kernel  string
	Step    plans.Step
	Detail  string
}

func (r *verifyReport) print(w io.Writer, backend string) {
	if m := r.Mismatch; m != nil {
		fmt.Fprintf(w, "verify: %s and cpu differ at %s[%d] %s (%s, step %d at position %d): %s\n",
			backend, m.Program, m.Index, m.Label, m.Kernel, m.Step.Index, m.Step.Pos, m.Detail)
		fmt.Fprintf(w, "verify: %d commands agreed before it\n", r.Commands)
		return
	}
	if r.Embedding {
		fmt.Fprintf(w, "verify: %s and cpu agree on all %d commands: the embedding of %d tokens\n", backend, r.Commands, r.PromptTokens)
		return
	}
	fmt.Fprintf(w, "verify: %s and cpu agree on all %d commands: prefill of %d tokens, %d decode steps\n",
		backend, r.Commands, r.PromptTokens, r.DecodeSteps)
}

// verifyModels replays a prompt's prefill and n decode steps on a and ref
// (the same plan on two backends) one command at a time, comparing every
// output after each command and then copying a's outputs into ref, so
// that each command is held to the CPU on the same inputs and errors do
// not compound. It stops at the first command that differs. The prompt
// goes through the batch programs as sequence 0 (a format-1 plan's
// prefill programs, or one decode step a token), its last row's outputs
// asked for; decode runs the chain as the engine does.
func verifyModels(a, ref *runtime.Model, prompt []int32, n int) (*verifyReport, error) {
	p := a.Plan
	rep := &verifyReport{PromptTokens: len(prompt)}
	pos := 0
	run := func(prog *plans.Program, s plans.Step) error {
		for ci := range prog.Commands {
			if err := a.RunCommand(prog.Name, ci, s); err != nil {
				return err
			}
			if err := ref.RunCommand(prog.Name, ci, s); err != nil {
				return err
			}
			m, err := compareCommand(p, prog, ci, s, a, ref)
			if err != nil {
				return err
			}
			if m != nil {
				m.Step = s
				rep.Mismatch = m
				return nil
			}
			if err := syncOutputs(p, &prog.Commands[ci], a, ref); err != nil {
				return err
			}
			rep.Commands++
		}
		return nil
	}
	// write puts u32 values into the io buffer of a role on both models.
	write := func(role string, off int, vals ...uint32) error {
		i := ioBuffer(p, role)
		if i < 0 {
			return fmt.Errorf("verify: the plan has no io %q buffer", role)
		}
		b := make([]byte, 4*len(vals))
		for k, v := range vals {
			binary.LittleEndian.PutUint32(b[4*k:], v)
		}
		if err := a.WriteBuffer(i, 4*off, b); err != nil {
			return err
		}
		return ref.WriteBuffer(i, 4*off, b)
	}
	// read is a u32 of the io buffer of a role, on the reference.
	read := func(role string, k int) (uint32, error) {
		b, err := ref.ReadBuffer(ioBuffer(p, role))
		if err != nil {
			return 0, err
		}
		return binary.LittleEndian.Uint32(b[4*k:]), nil
	}
	if pos+len(prompt)+n > int(p.Model.HParams.Ctx) {
		return nil, fmt.Errorf("verify: %d prompt tokens and %d steps exceed the plan's context of %d", len(prompt), n, p.Model.HParams.Ctx)
	}
	dec := p.Program(plans.ProgDecode)
	if dec == nil { // an embedding model: the prompt as one input of an embedding program
		rep.Embedding = true
		return rep, verifyEmbed(p, prompt, write, run)
	}
	var next uint32 // the token after the prompt
	for toks := prompt; len(toks) > 0 && rep.Mismatch == nil; {
		if pr := p.Bucket(plans.KindBatch, uint32(len(toks))); pr != nil {
			k := min(len(toks), int(pr.Batch))
			ts, ps, ss := make([]uint32, k), make([]uint32, k), make([]uint32, k)
			for i := range k {
				ts[i], ps[i] = uint32(toks[i]), uint32(pos+i)
			}
			last := k == len(toks)
			outs := uint32(0)
			for _, err := range []error{write("tokens", 0, ts...), write("positions", 0, ps...), write("seqs", 0, ss...)} {
				if err != nil {
					return nil, err
				}
			}
			if last {
				outs = 1
				if err := write("out_rows", 0, uint32(k-1)); err != nil {
					return nil, err
				}
			}
			if err := run(pr, plans.Step{Batch: uint32(k), Out: outs}); err != nil {
				return nil, err
			}
			pos, toks = pos+k, toks[k:]
			if last && rep.Mismatch == nil {
				var err error
				if next, err = read("argmax", 0); err != nil {
					return nil, err
				}
			}
			continue
		}
		if pr := p.Bucket(plans.KindPrefill, uint32(len(toks))); pr != nil { // format 1
			k := min(len(toks), int(pr.Batch))
			ts := make([]uint32, k)
			for i := range k {
				ts[i] = uint32(toks[i])
			}
			if err := write("tokens", 0, ts...); err != nil {
				return nil, err
			}
			if err := run(pr, plans.Step{Pos: uint32(pos), Batch: uint32(k)}); err != nil {
				return nil, err
			}
			pos, toks = pos+k, toks[k:]
			var err error
			if next, err = read("tokens", 0); err != nil {
				return nil, err
			}
			continue
		}
		if err := write("tokens", 0, uint32(toks[0])); err != nil { // one decode step
			return nil, err
		}
		if err := run(dec, plans.Step{Pos: uint32(pos), Batch: 1}); err != nil {
			return nil, err
		}
		pos, toks = pos+1, toks[1:]
		var err error
		if next, err = read("tokens", 1); err != nil {
			return nil, err
		}
	}
	if rep.Mismatch != nil {
		return rep, nil
	}
	if err := write("tokens", 0, next); err != nil {
		return nil, err
	}
	chain := a.ChainSteps()
	for k := 0; k < n && rep.Mismatch == nil; k++ {
		i := k % chain
		if i == 0 && k > 0 {
			t, err := read("tokens", chain)
			if err != nil {
				return nil, err
			}
			if err := write("tokens", 0, t); err != nil {
				return nil, err
			}
		}
		if err := run(dec, plans.Step{Index: uint32(i), Pos: uint32(pos), Batch: 1}); err != nil {
			return nil, err
		}
		pos++
		rep.DecodeSteps++
	}
	return rep, nil
}

// verifyEmbed replays the prompt as one input of the smallest embedding
// program that holds it (sequence slot 0, positions 0.., pooled over all
// its rows), through run, which compares every command.
func verifyEmbed(p *plans.Plan, prompt []int32, write func(string, int, ...uint32) error, run func(*plans.Program, plans.Step) error) error {
	n := len(prompt)
	pr := p.Bucket(plans.KindEmbed, uint32(n))
	if pr == nil {
		return fmt.Errorf("verify: the plan has neither a decode nor an embedding program")
	}
	if n > int(pr.Batch) {
		return fmt.Errorf("verify: %d prompt tokens; the plan embeds at most %d in one input", n, pr.Batch)
	}
	ts, ps, ss, last := make([]uint32, n), make([]uint32, n), make([]uint32, n), make([]uint32, n)
	for i, t := range prompt {
		ts[i], ps[i], last[i] = uint32(t), uint32(i), uint32(n-1)
	}
	for _, err := range []error{write("tokens", 0, ts...), write("positions", 0, ps...), write("seqs", 0, ss...),
		write("pool_ranges", 0, 0, uint32(n))} {
		if err != nil {
			return err
		}
	}
	if ioBuffer(p, "seq_last") >= 0 {
		if err := write("seq_last", 0, last...); err != nil {
			return err
		}
	}
	return run(pr, plans.Step{Batch: uint32(n), Out: 1})
}

// bufferReader reads a model's buffers (runtime.Model; tests give bytes).
type bufferReader interface {
	ReadBuffer(i int) ([]byte, error)
}

// ioBuffer is the index of the io buffer of a role, -1 for none.
func ioBuffer(p *plans.Plan, role string) int {
	for i, b := range p.Buffers {
		if b.Kind == plans.BufIO && b.Role == role {
			return i
		}
	}
	return -1
}

// output is one written region of a command.
type output struct {
	binding    plans.Binding
	start, end int
	elem       string // "f16", "f32", "u32", or "" for bytes compared exactly
}

// outputs lists the regions command ci writes: its bindings whose catalog
// access is write or read-write, over the binding's length (the whole
// buffer from the offset when unknown, the whole buffer when a patch moves
// the binding).
func outputs(p *plans.Plan, cmd *plans.Command) ([]output, *kernels.Kernel) {
	k, ok := kernels.Lookup(p.Pipelines[cmd.Pipeline].Kernel)
	if !ok {
		return nil, nil
	}
	var out []output
	for bi, b := range cmd.Bindings {
		if int(b.Slot) >= len(k.Bindings) || k.Bindings[b.Slot].Access == kernels.Read {
			continue
		}
		buf := &p.Buffers[b.Buffer]
		o := output{binding: b, start: int(b.Offset), end: int(buf.Size)}
		if b.Length > 0 {
			o.end = int(min(b.Offset+b.Length, buf.Size))
		}
		for _, pt := range cmd.Patches {
			if pt.Target == plans.PatchBinding && int(pt.At) == bi {
				o.start, o.end = 0, int(buf.Size)
			}
		}
		switch {
		case k.Bindings[b.Slot].Elem == "u32": // ids: compared exactly
			o.elem = ""
		case k.Bindings[b.Slot].Elem != "":
			o.elem = k.Bindings[b.Slot].Elem
		case buf.DType == "f16" || buf.DType == "f32" || buf.DType == "u32":
			o.elem = buf.DType
		case buf.DType != "":
			o.elem = ""
		case buf.Role == "tokens":
			o.elem = "u32"
		case k.Bindings[b.Slot].Role == kernels.RoleActivation:
			o.elem = k.Act.String()
		case k.Bindings[b.Slot].Role == kernels.RoleKV:
			o.elem = "f16"
		default:
			o.elem = "f32"
		}
		out = append(out, o)
	}
	return out, k
}

// compareCommand holds command ci's outputs on a to ref's, within the
// kernel family's tolerance; nil when they agree.
func compareCommand(p *plans.Plan, prog *plans.Program, ci int, s plans.Step, am, rm bufferReader) (*mismatch, error) {
	cmd := &prog.Commands[ci]
	outs, k := outputs(p, cmd)
	if k == nil {
		return &mismatch{Program: prog.Name, Index: ci, Label: cmd.Label, Kernel: p.Pipelines[cmd.Pipeline].Kernel, Detail: "kernel not in the catalog"}, nil
	}
	tol := toleranceFor(k, prog.Name)
	for _, o := range outs {
		ab, err := am.ReadBuffer(int(o.binding.Buffer))
		if err != nil {
			return nil, err
		}
		rb, err := rm.ReadBuffer(int(o.binding.Buffer))
		if err != nil {
			return nil, err
		}
		end := min(o.end, len(ab))
		if p.Buffers[o.binding.Buffer].Kind == plans.BufKV {
			end = len(ab) // every sequence slot the model has
		}
		if k.Op == kernels.OpMoERoute {
			// A route's halves sit in activation scratch sized for the
			// bucket, k values a row: only the step's rows are the
			// command's; the bytes past them belong to other values.
			rows, slots := max(s.Batch, 1), binary.LittleEndian.Uint32(cmd.Params[4:])
			end = min(end, o.start+int(4*rows*slots))
		}
		got, want := ab[o.start:end], rb[o.start:end]
		var detail string
		switch {
		case tol.kind != tolValues && o.elem == "u32":
			lb := cmd.Bindings[0]
			logits, err := rm.ReadBuffer(int(lb.Buffer))
			if err != nil {
				return nil, err
			}
			detail = compareIDs(got, want, tol, p, cmd, logits[lb.Offset:])
		case o.elem == "f16" || o.elem == "f32":
			detail = compareValues(got, want, o.elem, tol.rel)
		default:
			for i := range got {
				if got[i] != want[i] {
					detail = fmt.Sprintf("byte %d: %#02x, cpu %#02x", o.start+i, got[i], want[i])
					break
				}
			}
		}
		if detail != "" {
			return &mismatch{Program: prog.Name, Index: ci, Label: cmd.Label, Kernel: k.Name,
				Detail: fmt.Sprintf("binding %d (%s, %s): %s [tolerance: %s]", o.binding.Slot, p.Buffers[o.binding.Buffer].Name, o.elem, detail, tol.why)}, nil
		}
	}
	return nil, nil
}

func elemAt(b []byte, i int, elem string) float64 {
	if elem == "f16" {
		return float64(dtype.Float16frombits(binary.LittleEndian.Uint16(b[2*i:])))
	}
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
}

// compareValues: |got - want| ≤ rel × max|want| for every element; NaNs
// and infinities must match exactly.
func compareValues(got, want []byte, elem string, rel float64) string {
	size := 4
	if elem == "f16" {
		size = 2
	}
	n := len(got) / size
	maxAbs := 0.0
	for i := range n {
		if v := math.Abs(elemAt(want, i, elem)); !math.IsInf(v, 0) && !math.IsNaN(v) {
			maxAbs = max(maxAbs, v)
		}
	}
	bound := rel * maxAbs
	bad, worst, worstD := 0, -1, 0.0
	for i := range n {
		g, w := elemAt(got, i, elem), elemAt(want, i, elem)
		var d float64
		switch {
		case math.IsNaN(g) || math.IsNaN(w):
			if math.IsNaN(g) && math.IsNaN(w) {
				continue
			}
			d = math.Inf(1)
		case math.IsInf(g, 0) || math.IsInf(w, 0):
			if g == w {
				continue
			}
			d = math.Inf(1)
		default:
			d = math.Abs(g - w)
		}
		if d > bound {
			bad++
			if d > worstD || worst < 0 {
				worst, worstD = i, d
			}
		}
	}
	if bad == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d values beyond tolerance; worst at element %d: %g, cpu %g (|Δ| %.3g > %.1g × max %.4g)",
		bad, n, worst, elemAt(got, worst, elem), elemAt(want, worst, elem), worstD, rel, maxAbs)
}

// compareIDs compares token ids; under tolIDs two different ids pass when
// the logits the command read (its first binding, on the reference, from
// its offset) are a near tie.
func compareIDs(got, want []byte, tol tolerance, p *plans.Plan, cmd *plans.Command, logits []byte) string {
	for i := 0; i+4 <= len(got); i += 4 {
		g, w := binary.LittleEndian.Uint32(got[i:]), binary.LittleEndian.Uint32(want[i:])
		if g == w {
			continue
		}
		if tol.kind == tolIDs && len(cmd.Bindings) > 0 {
			lb := cmd.Bindings[0]
			elem := p.Buffers[lb.Buffer].DType
			if elem != "f16" && elem != "f32" {
				elem = "f32"
			}
			size := 2
			if elem == "f32" {
				size = 4
			}
			nv := len(logits) / size
			if lb.Length > 0 {
				nv = min(nv, int(lb.Length)/size)
			}
			if int(g) < nv && int(w) < nv {
				maxAbs := 0.0
				for j := range nv {
					maxAbs = max(maxAbs, math.Abs(elemAt(logits, j, elem)))
				}
				if math.Abs(elemAt(logits, int(g), elem)-elemAt(logits, int(w), elem)) <= tol.rel*maxAbs {
					continue // a near tie: either id is right
				}
			}
		}
		return fmt.Sprintf("slot %d: id %d, cpu %d", i/4, g, w)
	}
	return ""
}

// syncOutputs copies command cmd's outputs on a into ref, so the next
// command runs on the same inputs on both.
func syncOutputs(p *plans.Plan, cmd *plans.Command, a, ref *runtime.Model) error {
	outs, _ := outputs(p, cmd)
	for _, o := range outs {
		b, err := a.ReadBuffer(int(o.binding.Buffer))
		if err != nil {
			return err
		}
		end := min(o.end, len(b))
		if p.Buffers[o.binding.Buffer].Kind == plans.BufKV {
			end = len(b)
		}
		if err := ref.WriteBuffer(int(o.binding.Buffer), o.start, b[o.start:end]); err != nil {
			return err
		}
	}
	return nil
}
