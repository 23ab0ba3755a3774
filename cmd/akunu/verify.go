package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/runtime/metal"
)

func init() {
	app.Register(cli.Command{
		Name:    "verify",
		Summary: "run a plan on a backend and on the CPU side by side, command by command, and name the first command whose outputs differ",
		Usage:   "PLAN [--backend metal|cpu] [-n N] [-p PROMPT] [--model PATH] [--threads N] [--metallib DIR]",
		Run:     runVerify,
	})
}

func runVerify(ctx *cli.Context, args []string) error {
	fs := ctx.Flags("verify")
	backend := fs.String("backend", "metal", "the backend held to the CPU: metal, or cpu (the CPU against itself, a sanity check)")
	n := fs.Int("n", 8, "decode steps after the prompt")
	prompt := fs.String("p", "Once upon a time", "the prompt prefilled first")
	model := fs.String("model", "", "the GGUF file (default: the plan's recorded file name next to the plan)")
	threads := fs.Int("threads", 0, "CPU threads (0: every core)")
	metallib := fs.String("metallib", "", "a directory of precompiled .metallib files (docs/metal-runtime.md)")
	pos, err := cli.Parse(fs, args)
	if err != nil {
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
	default:
		return fmt.Errorf("%w: --backend %q: metal or cpu", cli.ErrUsage, *backend)
	}
	a, err := runtime.Load(pos[0], runtime.Options{Model: *model, Backend: be})
	if err != nil {
		be.Close()
		return err
	}
	defer a.Close()
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

// toleranceFor is the tolerance of a kernel in program prog: the argmax
// after the sampling kernel must pick the same id, since the same seed
// gives the same noise.
func toleranceFor(op kernels.Op, prog string) tolerance {
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
	fmt.Fprintf(w, "verify: %s and cpu agree on all %d commands: prefill of %d tokens, %d decode steps\n",
		backend, r.Commands, r.PromptTokens, r.DecodeSteps)
}

// verifyModels replays a prompt's prefill and n decode steps on a and ref
// (the same plan on two backends) one command at a time, comparing every
// output after each command and then copying a's outputs into ref, so
// that each command is held to the CPU on the same inputs and errors do
// not compound. It stops at the first command that differs.
func verifyModels(a, ref *runtime.Model, prompt []int32, n int) (*verifyReport, error) {
	p := a.Plan
	rep := &verifyReport{PromptTokens: len(prompt)}
	sa, sr := a.TokenSlots(), ref.TokenSlots()
	pos := 0
	run := func(prog *plans.Program, s plans.Step) error {
		for ci := range prog.Commands {
			if err := a.RunCommand(prog.Name, ci, s); err != nil {
				return err
			}
			if err := ref.RunCommand(prog.Name, ci, s); err != nil {
				return err
			}
			if m := compareCommand(p, prog, ci, a.Buffers(), ref.Buffers()); m != nil {
				m.Step = s
				rep.Mismatch = m
				return nil
			}
			syncOutputs(p, &prog.Commands[ci], a.Buffers(), ref.Buffers())
			rep.Commands++
		}
		return nil
	}
	if pos+len(prompt)+n > int(p.Model.HParams.Ctx) {
		return nil, fmt.Errorf("verify: %d prompt tokens and %d steps exceed the plan's context of %d", len(prompt), n, p.Model.HParams.Ctx)
	}
	dec := p.Program(plans.ProgDecode)
	for toks := prompt; len(toks) > 0 && rep.Mismatch == nil; {
		pr := p.Bucket(plans.KindPrefill, uint32(len(toks)))
		if pr == nil || int(pr.Batch) > len(sa) { // one decode step per token
			sa[0], sr[0] = uint32(toks[0]), uint32(toks[0])
			if err := run(dec, plans.Step{Index: 0, Pos: uint32(pos), Batch: 1}); err != nil {
				return nil, err
			}
			sa[0], sr[0] = sa[1], sr[1]
			pos++
			toks = toks[1:]
			continue
		}
		k := min(len(toks), int(pr.Batch))
		for i, t := range toks[:k] {
			sa[i], sr[i] = uint32(t), uint32(t)
		}
		if err := run(pr, plans.Step{Index: 0, Pos: uint32(pos), Batch: uint32(k)}); err != nil {
			return nil, err
		}
		pos += k
		toks = toks[k:]
	}
	chain := a.ChainSteps()
	for k := 0; k < n && rep.Mismatch == nil; k++ {
		i := k % chain
		if i == 0 && k > 0 {
			sa[0], sr[0] = sa[chain], sr[chain]
		}
		if err := run(dec, plans.Step{Index: uint32(i), Pos: uint32(pos), Batch: 1}); err != nil {
			return nil, err
		}
		pos++
		rep.DecodeSteps++
	}
	return rep, nil
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
func compareCommand(p *plans.Plan, prog *plans.Program, ci int, a, ref [][]byte) *mismatch {
	cmd := &prog.Commands[ci]
	outs, k := outputs(p, cmd)
	if k == nil {
		return &mismatch{Program: prog.Name, Index: ci, Label: cmd.Label, Kernel: p.Pipelines[cmd.Pipeline].Kernel, Detail: "kernel not in the catalog"}
	}
	tol := toleranceFor(k.Op, prog.Name)
	for _, o := range outs {
		got := a[o.binding.Buffer][o.start:o.end]
		want := ref[o.binding.Buffer][o.start:o.end]
		var detail string
		switch {
		case tol.kind != tolValues && o.elem == "u32":
			detail = compareIDs(got, want, tol, p, cmd, ref)
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
				Detail: fmt.Sprintf("binding %d (%s, %s): %s [tolerance: %s]", o.binding.Slot, p.Buffers[o.binding.Buffer].Name, o.elem, detail, tol.why)}
		}
	}
	return nil
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
// the logits the command read (its first binding, on the reference) are a
// near tie.
func compareIDs(got, want []byte, tol tolerance, p *plans.Plan, cmd *plans.Command, ref [][]byte) string {
	for i := 0; i+4 <= len(got); i += 4 {
		g, w := binary.LittleEndian.Uint32(got[i:]), binary.LittleEndian.Uint32(want[i:])
		if g == w {
			continue
		}
		if tol.kind == tolIDs && len(cmd.Bindings) > 0 {
			lb := cmd.Bindings[0]
			logits := ref[lb.Buffer][lb.Offset:]
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
func syncOutputs(p *plans.Plan, cmd *plans.Command, a, ref [][]byte) {
	outs, _ := outputs(p, cmd)
	for _, o := range outs {
		copy(ref[o.binding.Buffer][o.start:o.end], a[o.binding.Buffer][o.start:o.end])
	}
}
