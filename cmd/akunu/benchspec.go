package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/runtime"
)

// benchSpecFlags are akunu bench --spec's: the speculation and the text
// to decode after (speculation's speed depends on the text).
type benchSpecFlags struct {
	spec             specFlags
	prompt, promptIn *string
	temp             *float64
	seed             *int
}

func addBenchSpecFlags(fs interface {
	String(string, string, string) *string
	Int(string, int, string) *int
	Float64(string, float64, string) *float64
}) benchSpecFlags {
	return benchSpecFlags{spec: addSpecFlags(fs),
		prompt:   fs.String("prompt", "", "with --spec: the prompt to decode after (default: a passage and the request to repeat it)"),
		promptIn: fs.String("prompt-file", "", "with --spec: a file holding the prompt (a copy-heavy task: a passage the output repeats)"),
		temp:     fs.Float64("temp", 0, "with --spec: the temperature, at least 0 (0: greedy; sampled runs draw from the whole vocabulary)"),
		seed:     fs.Int("seed", 1, "with --spec and --temp: the sampling seed, 0 to 4294967295"),
	}
}

func (b benchSpecFlags) check() error {
	if err := b.spec.check(); err != nil {
		return err
	}
	if err := firstError(floatIn("temp", *b.temp, 0, 100, false, false), intIn("seed", *b.seed, 0, math.MaxUint32)); err != nil {
		return err
	}
	switch {
	case *b.spec.mode == "" && *b.temp != 0:
		return cli.FlagError{Flag: "temp", Msg: "a temperature is for --spec's comparison"}
	case *b.prompt != "" && *b.promptIn != "":
		return cli.FlagError{Flag: "prompt-file", Msg: "give --prompt or --prompt-file, not both"}
	case *b.spec.mode == "" && (*b.prompt != "" || *b.promptIn != ""):
		return cli.FlagError{Flag: "prompt", Msg: "a prompt is for --spec's comparison"}
	}
	return nil
}

// defaultSpecPrompt is a copy-heavy prompt: a passage, then its start
// again, which a story model goes on retelling.
const defaultSpecPrompt = "Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. " +
	"One day, she saw a big, red ball in the park. She ran to the ball and kicked it high into the sky.\n\n" +
	"Once upon a time, there was a little girl named Lily. She loved to play"

// benchSpec times plain and speculative greedy decode of the same text in
// this process, alternating them.
func benchSpec(ctx *cli.Context, m *runtime.Model, b benchSpecFlags, tg, reps int, asJSON bool) error {
	text := *b.prompt
	switch {
	case *b.promptIn != "":
		raw, err := os.ReadFile(*b.promptIn)
		if err != nil {
			return fmt.Errorf("--prompt-file: %w", err)
		}
		text = string(raw)
	case text == "":
		text = defaultSpecPrompt
	}
	prompt := m.Tokenizer.Tokenize(text, true, false)
	if len(prompt)+tg+1 > m.Ctx() {
		return cli.FlagError{Flag: "n", Msg: fmt.Sprintf("%d after a prompt of %d tokens: more than the plan's context of %d", tg, len(prompt), m.Ctx())}
	}
	spc, err := b.spec.newSpeculator(m, 1)
	if err != nil {
		return err
	}
	defer spc.close()
	prog := newProgress(ctx.Stderr, reps)
	prog.phase(fmt.Sprintf("plain and --spec %s decode of %d tokens after %d, %d runs after a warm-up", *b.spec.mode, tg, len(prompt), reps))
	smp := runtime.Sampling{Temperature: float32(*b.temp), Seed: uint32(*b.seed)}
	shortlisted := false // the draft model's LM head over its shortlist (--draft-vocab)
	r, err := m.BenchSpec(prompt, tg, reps, smp, func() (*runtime.Speculation, func(), error) {
		o, done, err := spc.speculation(m)
		if err != nil {
			return o, done, err
		}
		return o, func() {
			if d, ok := o.Drafter.(*runtime.ModelDrafter); ok {
				shortlisted = d.Shortlisted()
			}
			done()
		}, nil
	},
		func(rep int, plain, spec float64) {
			prog.rep(rep, fmt.Sprintf("plain %.2f t/s, speculative %.2f t/s", plain, spec))
		})
	prog.done()
	if err != nil {
		return err
	}
	plain, spec := runtime.Median(r.Plain), runtime.Median(r.Spec)
	speedup := spec / plain
	if asJSON {
		out := map[string]any{"plan": m.Plan.Header.Model.File, "spec": *b.spec.mode, "draft": *b.spec.draft, "draft_max": *b.spec.max,
			"prompt_tokens": len(prompt), "tg": tg, "reps": reps,
			"plain_tok_s_median": plain, "spec_tok_s_median": spec, "speedup": speedup, "plain_runs": r.Plain, "spec_runs": r.Spec,
			"temp": *b.temp, "seed": *b.seed, "accept_rate": r.Stats.AcceptRate(), "tokens_per_pass": r.Stats.TokensPerPass(), "stats": r.Stats, "same_tokens": r.Same, "draft_shortlisted": shortlisted}
		enc := json.NewEncoder(ctx.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	w := tabwriter.NewWriter(ctx.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "model\tspec\ttest\tplain t/s\tspec t/s\tspeedup\taccepted\ttokens/pass\t\n")
	fmt.Fprintf(w, "%s\t%s\ttg%d\t%.2f [%.2f–%.2f]\t%.2f [%.2f–%.2f]\t%.2f×\t%.0f%%\t%.2f\t\n", m.Plan.Header.Model.File, *b.spec.mode, tg,
		plain, slices.Min(r.Plain), slices.Max(r.Plain), spec, slices.Min(r.Spec), slices.Max(r.Spec), speedup,
		100*r.Stats.AcceptRate(), r.Stats.TokensPerPass())
	w.Flush()
	same := "the same tokens as plain decode"
	switch {
	case !smp.Greedy():
		same = fmt.Sprintf("sampled at temperature %g, seed %d", *b.temp, *b.seed)
	case !r.Same:
		same = "TOKENS DIFFER from plain decode (a near tie between the batch and decode programs' logits, or a bug)"
	}
	fmt.Fprintf(ctx.Stdout, "\nmedians of %d runs [min–max]; last run: %d passes, %d of %d drafts accepted, %d steps without drafts; %s\n",
		reps, r.Stats.Passes, r.Stats.Accepted, r.Stats.Drafted, r.Stats.Plain, same)
	if st := r.Stats; st.Passes > 0 {
		list := ""
		if *b.spec.mode == "draft" {
			list = "; the draft's LM head over every token"
			if shortlisted {
				list = fmt.Sprintf("; the draft's LM head over its shortlist (--draft-vocab %d)", *b.spec.vocab)
			}
		}
		fmt.Fprintf(ctx.Stdout, "a pass of the last run: drafting %.2f ms, verifying %.2f ms; a plain token %.2f ms%s\n",
			msOf(st.Drafting)/float64(st.Passes), msOf(st.Verifying)/float64(st.Passes), 1000/plain, list)
	}
	return nil
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
