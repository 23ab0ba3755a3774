package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/specs/chips"
)

func init() {
	app.Register(cli.Command{
		Name:    "verify-plan",
		Summary: "recompile a plan's model with the options the plan records and check that the plan is exactly what this compiler makes; name the first command that differs",
		Usage:   "PLAN [--model PATH]",
		Run:     runVerifyPlan,
	})
}

// errPlanDiffers: the plan is not what a fresh compile of its model makes
// (edited and resealed, damaged, or from a compiler of the same version
// built from other sources).
var errPlanDiffers = errors.New("the plan differs from a fresh compile")

// runVerifyPlan is the complete check of a plan (ADR 0013, "Plans"): load
// validation refuses every edit that would crash, but an edit that stays in
// bounds (an input rebound, an offset shifted, a parameter shrunk) computes
// something else; only a recompile tells it from the compiler's own plan.
func runVerifyPlan(ctx *cli.Context, args []string) error {
	plan, model, err := planAndModel(ctx, "verify-plan", args)
	if err != nil {
		return err
	}
	r, err := verifyPlan(plan, model)
	if err != nil {
		return err
	}
	fmt.Fprintln(ctx.Stdout, "akunu: "+r.String())
	return nil
}

// planReport is what verifyPlan checked.
type planReport struct {
	Model              string
	Programs, Commands int
	Elapsed            time.Duration
}

func (r *planReport) String() string {
	return fmt.Sprintf("plan ok: %d programs, %d commands match a fresh compile of %s (%.0f ms)",
		r.Programs, r.Commands, r.Model, float64(r.Elapsed.Microseconds())/1000)
}

// verifyPlan recompiles the model of the plan at planPath (found as a load
// finds it, or model when not "") with the options the plan records, and
// compares the two plans. Its errors are one line: another compiler
// version, another model file, or the first thing that differs and how
// many do (wrapping errPlanDiffers).
func verifyPlan(planPath, model string) (*planReport, error) {
	start := time.Now()
	p, err := plans.ReadFile(planPath)
	if err != nil {
		return nil, err
	}
	if mine := "akunuc " + compiler.Version; p.Header.Compiler != mine {
		return nil, fmt.Errorf("%s: %q compiled it; this akunu carries %s: recompile", planPath, p.Header.Compiler, mine)
	}
	if model == "" {
		if model, err = runtime.FindModel(planPath, p); err != nil {
			return nil, err
		}
	}
	if err := checkModelFile(p, model); err != nil {
		return nil, err
	}
	o, err := compileOptions(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", planPath, err)
	}
	fresh, err := compiler.Compile(model, o)
	if err != nil {
		return nil, fmt.Errorf("%s: recompiling %s: %w", planPath, model, err)
	}
	// The weights first, for a message naming the tensor: a file of the
	// same header with other data is another model, not an edited plan.
	if fw := fresh.Header.Model.Weights; p.WeightsCheckable(fw.Scheme, fw.Full) == nil && len(fw.Tensors) == len(p.Header.Model.Weights.Tensors) {
		sums := make([][32]byte, len(fw.Tensors))
		for i, t := range fw.Tensors {
			sums[i] = t.Sampled
			if fw.Full {
				sums[i] = t.Full
			}
		}
		if err := p.CheckWeights(fw.Scheme, sums, fw.Full); err != nil {
			return nil, fmt.Errorf("%s: %w", model, err)
		}
	}
	// What legitimately differs: where the model lies and what it is called.
	fresh.Header.Model.Path, fresh.Header.Model.File = p.Header.Model.Path, p.Header.Model.File
	got, want := plans.Encode(p), plans.Encode(fresh)
	if !bytes.Equal(got, want) {
		if fresh, err = plans.Decode(planPath, want); err != nil { // Format and MinRuntime, as on disk
			return nil, fmt.Errorf("%s: the fresh compile does not decode: %w", planPath, err)
		}
		return nil, fmt.Errorf("%s: %s: %w", planPath, firstDifference(p, fresh, got, want), errPlanDiffers)
	}
	r := &planReport{Model: model, Programs: len(p.Programs), Elapsed: time.Since(start)}
	for i := range p.Programs {
		r.Commands += len(p.Programs[i].Commands)
	}
	return r, nil
}

// checkModelFile holds the model to the plan's size and header hash, as a
// load does, before anything is compiled from it.
func checkModelFile(p *plans.Plan, model string) error {
	st, err := os.Stat(model)
	if err != nil {
		return fmt.Errorf("%w: %w", runtime.ErrModelFile, err)
	}
	if err := p.CheckModel(st.Size(), p.Header.Model.HeaderSHA256); err != nil {
		return fmt.Errorf("%s: %w", model, err)
	}
	mp, err := gguf.Map(model)
	if err != nil {
		return fmt.Errorf("%w: %w", runtime.ErrModelFile, err)
	}
	defer mp.Close()
	if err := p.CheckModel(mp.FileSize, mp.HeaderHash); err != nil {
		return fmt.Errorf("%s: %w", model, err)
	}
	return nil
}

// compileOptions are the compiler.Options the plan was compiled with, each
// read back from what the plan records: the chip profile by its name, the
// context, whether every byte was summed, whether the chat template was
// left out. Verbose changes nothing in a plan.
func compileOptions(p *plans.Plan) (compiler.Options, error) {
	prof, err := chips.Resolve(p.Header.Target.Chip, 0)
	if err != nil {
		return compiler.Options{}, fmt.Errorf("header.target.chip: %w", err)
	}
	return compiler.Options{
		Chip:            prof,
		Ctx:             int(p.Model.HParams.Ctx),
		SampledSumsOnly: !p.Header.Model.Weights.Full,
		// A plan without a template was compiled with --no-template or from
		// a GGUF without one; leaving it out is right either way.
		NoTemplate: p.Model.Tokenizer.ChatTemplate == "",
	}, nil
}

// firstDifference is one line naming the first thing that differs between
// plan p and the fresh compile q (pb and qb their encodings) and how many
// things do: "decode[17] L3.attn.qkv (gemv_q4_0): bind 2 x.L3+4096, a fresh
// compile has x.L3+0 (1 difference)".
func firstDifference(p, q *plans.Plan, pb, qb []byte) string {
	ds := plans.DiffWith(p, q, plans.RenderOptions{Params: kernels.ParamFields})
	n := len(ds)
	what := ""
	// The first command that differs, by index, when the programs line up.
	for pi := range p.Programs {
		pr, qr := &p.Programs[pi], q.Program(p.Programs[pi].Name)
		if qr == nil || len(qr.Commands) != len(pr.Commands) {
			continue
		}
		for ci := range pr.Commands {
			c := &pr.Commands[ci]
			if reflect.DeepEqual(c, &qr.Commands[ci]) {
				continue
			}
			kernel := "?"
			if int(c.Pipeline) < len(p.Pipelines) {
				kernel = p.Pipelines[c.Pipeline].Kernel
			}
			what = fmt.Sprintf("%s[%d] %s (%s)", pr.Name, ci, c.Label, kernel)
			for _, d := range ds {
				if rest, ok := strings.CutPrefix(d.Path, pr.Name+" "+c.Label); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "#")) {
					_, field, _ := strings.Cut(rest, " ")
					return fmt.Sprintf("%s: %s %s, a fresh compile has %s (%s)", what, field, d.Old, d.New, count(n))
				}
			}
			break
		}
		if what != "" {
			break
		}
	}
	if n > 0 {
		d := ds[0]
		if what != "" {
			return fmt.Sprintf("%s differs; first of all %s (%s)", what, d, count(n))
		}
		return fmt.Sprintf("%s (%s, the plan's → a fresh compile's)", d, count(n))
	}
	if what != "" {
		return what + " differs from a fresh compile's (1 difference)"
	}
	i := 0
	for i < len(pb) && i < len(qb) && pb[i] == qb[i] {
		i++
	}
	return fmt.Sprintf("the plan renders as a fresh compile does but its bytes differ from offset %d (%d bytes, a fresh compile %d)", i, len(pb), len(qb))
}

func count(n int) string {
	if n == 1 {
		return "1 difference"
	}
	return fmt.Sprintf("%d differences", n)
}
