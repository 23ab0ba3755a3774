package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/runtime/cuda"
	"github.com/akunu-dev/akunu/runtime/metal"
)

func init() {
	app.Register(cli.Command{
		Name:    "run",
		Summary: "generate text from a prompt with a compiled plan (streams; Ctrl-C ends the answer; --json for one object)",
		Usage: "PLAN -p PROMPT [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p M] [--repeat-penalty R] [--seed S] [--stop TEXT]... [--threads N] [--json] [--top-logits K] [--model PATH]\n" +
			"       [--grammar FILE.gbnf | --json-schema FILE.json | --json-object]\n" +
			"       [--spec ngram|draft [--draft PLAN] [--draft-max K] [--draft-min K] [--draft-vocab N]]",
		Run: runRun,
	})
}

// stringsFlag is a flag that may be given many times.
type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ", ") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// samplingFlags are the sampling knobs as parsed; check (flags.go)
// refuses the values that mean nothing.
type samplingFlags struct {
	temp, topP, minP, rep *float64
	topK                  *int
	seed                  *int64
}

// addSamplingFlags declares the sampling knobs (llama.cpp's names and, but
// for the temperature, its defaults).
// Without --seed a sampled run draws a fresh seed and reports it.
func addSamplingFlags(fs *flag.FlagSet, defaultTemp float64) samplingFlags {
	return samplingFlags{
		temp: fs.Float64("temp", defaultTemp, "temperature, at least 0 (0: greedy)"),
		topK: fs.Int("top-k", 40, "top-k, at least 0 (0: all)"),
		topP: fs.Float64("top-p", 0.95, "top-p, in (0, 1] (1: all)"),
		minP: fs.Float64("min-p", 0.05, "min-p, in [0, 1) (0: none)"),
		rep:  fs.Float64("repeat-penalty", 1, "repetition penalty over the last 64 tokens, above 0 (1: none)"),
		seed: fs.Int64("seed", -1, "sampling seed, 0 to 4294967295 (-1: a fresh one, reported)"),
	}
}

// sampling is what the flags ask for.
func (f samplingFlags) sampling() runtime.Sampling {
	return runtime.Sampling{Temperature: float32(*f.temp), TopK: *f.topK, TopP: float32(*f.topP), MinP: float32(*f.minP),
		RepeatPenalty: float32(*f.rep), Seed: uint32(max(*f.seed, 0)), Unseeded: *f.seed < 0}
}

// loadFlags are the flags every command that loads a plan takes.
type loadFlags struct {
	model         *string
	backend       *string
	threads       *int
	verifyWeights *bool
	verifyPlan    *bool
}

func addLoadFlags(fs interface {
	String(string, string, string) *string
	Int(string, int, string) *int
	Bool(string, bool, string) *bool
}) loadFlags {
	return loadFlags{
		model:         fs.String("model", "", "the GGUF file (default: next to the plan, at the path recorded at compile time, or in the working directory)"),
		backend:       fs.String("backend", "auto", "the backend: auto (the plan's: CUDA for an NVIDIA plan, Metal for an Apple plan on a Mac, else the CPU, saying so), cuda, metal or cpu"),
		threads:       fs.Int("threads", 0, "CPU threads (0: every core)"),
		verifyWeights: fs.Bool("verify-weights", false, "read every byte of the model and check it against the plan's sums (every load checks sampled blocks)"),
		verifyPlan:    fs.Bool("verify-plan", false, "before loading, recompile the model and check the plan is exactly what this compiler makes (akunu verify-plan)"),
	}
}

// checkPlan runs verify-plan's check when --verify-plan asks for it.
func (lf loadFlags) checkPlan(ctx *cli.Context, plan, model string) error {
	if !*lf.verifyPlan {
		return nil
	}
	r, err := verifyPlan(plan, model)
	if err != nil {
		return err
	}
	fmt.Fprintf(ctx.Stderr, "akunu: %s: %s\n", plan, r)
	return nil
}

// load loads plan on the chosen backend with seqs sequence slots; the
// backend is made from the plan's target, which Load reads once.
func (lf loadFlags) load(ctx *cli.Context, plan string, seqs int) (*runtime.Model, error) {
	return lf.loadFor(ctx, plan, func(*plans.Plan) int { return seqs })
}

// loadFor is load with the sequence slots decided from the plan as read.
func (lf loadFlags) loadFor(ctx *cli.Context, plan string, seqs func(*plans.Plan) int) (*runtime.Model, error) {
	if err := lf.checkPlan(ctx, plan, *lf.model); err != nil {
		return nil, err
	}
	m, err := runtime.Load(plan, runtime.Options{Model: *lf.model, Threads: *lf.threads, SeqsFor: seqs, VerifyWeights: *lf.verifyWeights,
		NewBackend: func(t plans.Target) (runtime.Backend, error) { return lf.newBackend(ctx, t) },
		Progress:   loadProgress(ctx.Stderr, cli.IsTerminal(ctx.Stderr))})
	if err != nil {
		return nil, err
	}
	if !m.WeightsChecked() {
		fmt.Fprintf(ctx.Stderr, "akunu: %s\n", m.WeightCheck) // said once, at load
	}
	if up, ok := m.Backend().(interface{ Uploaded() (int64, time.Duration) }); ok {
		if n, d := up.Uploaded(); n > 0 && d > 0 {
			fmt.Fprintf(ctx.Stderr, "akunu: weights uploaded to the GPU: %.2f GB in %s (%.1f GB/s)\n", float64(n)/1e9, d.Round(time.Millisecond), float64(n)/1e9/d.Seconds())
			if m.FreedWeights > 0 {
				fmt.Fprintf(ctx.Stderr, "akunu: %.2f GB of them freed again: read only to build their fused and planar layouts\n", float64(m.FreedWeights)/1e9)
			}
		}
	}
	return m, nil
}

// loadProgress reports a load's stages: a line rewritten in place on a
// terminal; into a log, one line per stage as it ends.
func loadProgress(w io.Writer, tty bool) func(stage string, done, total int64) {
	return func(stage string, done, total int64) {
		if tty {
			fmt.Fprintf(w, "\rakunu: %s %5.1f%%", stage, 100*float64(done)/float64(max(total, 1)))
			if done >= total {
				fmt.Fprintln(w)
			}
			return
		}
		if done >= total {
			fmt.Fprintf(w, "akunu: %s done\n", stage)
		}
	}
}

// newBackend makes the backend --backend names; auto picks the one for a
// plan compiled for t (runtime.BackendFor) and says which unless it is the
// CPU for a CPU plan.
func (lf loadFlags) newBackend(ctx *cli.Context, t plans.Target) (runtime.Backend, error) {
	switch *lf.backend {
	case "auto":
		be, why := runtime.BackendFor(t, *lf.threads)
		if why != "cpu" {
			fmt.Fprintf(ctx.Stderr, "akunu: backend %s\n", why)
		}
		return be, nil
	case "cpu":
		return runtime.NewCPU(*lf.threads), nil
	case "metal":
		return runtime.NewMetal(metal.Options{})
	case "cuda":
		return runtime.NewCUDA(cuda.Options{})
	}
	return nil, fmt.Errorf("%w: --backend %q: want auto, cuda, metal or cpu", cli.ErrUsage, *lf.backend)
}

// closeModel closes the model, then the backend load made for it.
func closeModel(m *runtime.Model) {
	be := m.Backend()
	m.Close()
	be.Close()
}

// interruptible is a context that the first Ctrl-C cancels (the answer
// ends, not the program), and its release.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

// clock records when each token arrives, for time to first token and the
// gaps between tokens while streaming.
type clock struct {
	start time.Time
	at    []time.Duration
}

func newClock(capacity int) *clock {
	return &clock{start: time.Now(), at: make([]time.Duration, 0, max(capacity, 0))}
}

func (c *clock) tick() { c.at = append(c.at, time.Since(c.start)) }

// latency is what the stream of tokens looked like: the first token's
// delay and the gaps between the tokens after it.
type latency struct {
	FirstMS  float64 `json:"ttft_ms"`
	GapP50MS float64 `json:"gap_p50_ms"`
	GapP99MS float64 `json:"gap_p99_ms"`
	GapMaxMS float64 `json:"gap_max_ms"`
}

func (c *clock) latency() latency {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	var l latency
	if len(c.at) == 0 {
		return l
	}
	l.FirstMS = ms(c.at[0])
	gaps := make([]time.Duration, 0, len(c.at))
	for i := 1; i < len(c.at); i++ {
		gaps = append(gaps, c.at[i]-c.at[i-1])
	}
	if len(gaps) == 0 {
		return l
	}
	slices.Sort(gaps)
	q := func(p float64) time.Duration { return gaps[min(len(gaps)-1, int(p*float64(len(gaps))))] }
	l.GapP50MS, l.GapP99MS, l.GapMaxMS = ms(q(0.5)), ms(q(0.99)), ms(gaps[len(gaps)-1])
	return l
}

func runRun(ctx *cli.Context, args []string) error {
	fs := ctx.Flags("run")
	prompt := fs.String("p", "", "the prompt")
	n := fs.Int("n", 128, "tokens to generate at most, at least 1 (fewer at EOS or a full context)")
	sampling := addSamplingFlags(fs, 0)
	var stops stringsFlag
	fs.Var(&stops, "stop", "stop when the text reaches this string (repeatable)")
	asJSON := fs.Bool("json", false, "print one JSON object instead of streaming")
	topLogits := fs.Int("top-logits", 0, "with --json: the K best [id, logit] pairs of every step")
	lf := addLoadFlags(fs)
	spf := addSpecFlags(fs)
	cf := addConstrainFlags(fs)
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if err := firstError(atLeast("n", *n, 1, ""), sampling.check(), lf.check(), checkTopLogits(*topLogits, *asJSON), spf.check(), cf.check()); err != nil {
		return err
	}
	if _, err := cf.parse(io.Discard); err != nil { // a bad file is refused before the model loads
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: want one PLAN", cli.ErrUsage)
	}
	m, err := lf.load(ctx, pos[0], 1)
	if err != nil {
		return err
	}
	defer closeModel(m)
	spc, err := spf.newSpeculator(m, 1)
	if err != nil {
		return err
	}
	defer spc.close()
	s, err := m.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	ids := m.Tokenizer.Tokenize(*prompt, true, false)
	o := runtime.GenerateOptions{MaxTokens: *n, TopLogits: *topLogits, Sampling: sampling.sampling(), Stop: stops}
	spec, closeSpec, err := spc.speculation(m)
	if err != nil {
		return err
	}
	defer closeSpec()
	o.Spec = spec
	x, err := cf.index(m, ctx.Stderr)
	if err != nil {
		return err
	}
	if x != nil {
		o.Processors = append(o.Processors, runtime.NewConstraint(x))
	}
	clk := newClock(min(*n, m.Ctx()+1))
	o.OnToken = func(int32) bool { clk.tick(); return true }
	if !*asJSON {
		fmt.Fprint(ctx.Stdout, *prompt)
		o.OnText = func(text string) bool {
			fmt.Fprint(ctx.Stdout, text)
			return true
		}
	}
	run, stop := interruptible()
	defer stop()
	res, err := s.Generate(run, ids, o)
	if err != nil {
		return err
	}
	st := stats(m, res, clk)
	if !*asJSON {
		fmt.Fprintln(ctx.Stdout)
		seed := ""
		if !o.Sampling.Greedy() {
			seed = fmt.Sprintf("; seed %d", res.Seed)
		}
		fmt.Fprintf(ctx.Stderr, "\nakunu: prompt %d tokens, %.1f tok/s; decode %d tokens, %.1f tok/s; first token %.0f ms, gaps p50 %.1f ms; load %.0f ms%s; stop: %s%s\n",
			len(res.Prompt), st.PromptTokS, len(res.Tokens), st.DecodeTokS, st.FirstMS, st.GapP50MS, st.LoadMS, seed, st.Stop, specLine(spec, res))
		return nil
	}
	out := struct {
		PromptTokens []int32            `json:"prompt_tokens"`
		Tokens       []int32            `json:"tokens"`
		Text         string             `json:"text"`
		Seed         *uint32            `json:"seed,omitempty"`
		Stats        runStats           `json:"stats"`
		TopLogits    [][][2]any         `json:"top_logits,omitempty"`
		Spec         *runtime.SpecStats `json:"spec,omitempty"`
	}{PromptTokens: ids, Tokens: res.Tokens, Text: res.Text, Stats: st}
	if spec != nil {
		out.Spec = &res.Spec
	}
	if !o.Sampling.Greedy() {
		out.Seed = &res.Seed
	}
	if out.Tokens == nil {
		out.Tokens = []int32{}
	}
	for _, step := range res.TopLogits {
		row := make([][2]any, len(step))
		for i, tl := range step {
			row[i] = [2]any{tl.ID, tl.Logit}
		}
		out.TopLogits = append(out.TopLogits, row)
	}
	enc := json.NewEncoder(ctx.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

type runStats struct {
	PromptTokS float64 `json:"prompt_tok_s"`
	DecodeTokS float64 `json:"decode_tok_s"`
	PromptMS   float64 `json:"prompt_ms"`
	DecodeMS   float64 `json:"decode_ms"`
	LoadMS     float64 `json:"load_ms"`
	latency
	Stop       string `json:"stop"`
	StopString string `json:"stop_string,omitempty"`
}

func stats(m *runtime.Model, r *runtime.Result, clk *clock) runStats {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	rate := func(n int, d time.Duration) float64 {
		if d <= 0 || n <= 0 {
			return 0
		}
		return float64(n) / d.Seconds()
	}
	// The first generated token is chosen at the end of the prompt phase;
	// decode covers the rest.
	st := runStats{PromptTokS: rate(len(r.Prompt), r.PromptTime), DecodeTokS: rate(len(r.Tokens)-1, r.DecodeTime),
		PromptMS: ms(r.PromptTime), DecodeMS: ms(r.DecodeTime), LoadMS: ms(m.LoadTime), Stop: string(r.Stop), StopString: r.StopString}
	if clk != nil {
		st.latency = clk.latency()
	}
	return st
}
