package main

import (
	"encoding/json"
	"flag"
	"fmt"
	goruntime "runtime"
	"time"

	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/runtime/metal"
)

func init() {
	app.Register(cli.Command{
		Name:    "run",
		Summary: "generate text from a prompt with a compiled plan (streams; --json for one object)",
		Usage:   "PLAN -p PROMPT [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p M] [--repeat-penalty R] [--seed S] [--threads N] [--json] [--top-logits K] [--model PATH]",
		Run:     runRun,
	})
}

// addSamplingFlags declares the sampling knobs (llama.cpp's names and, but
// for the temperature, its defaults) and returns a function that reads them.
func addSamplingFlags(fs *flag.FlagSet, defaultTemp float64) func() runtime.Sampling {
	temp := fs.Float64("temp", defaultTemp, "temperature (0: greedy)")
	topK := fs.Int("top-k", 40, "top-k (0: all)")
	topP := fs.Float64("top-p", 0.95, "top-p (1: all)")
	minP := fs.Float64("min-p", 0.05, "min-p (0: none)")
	rep := fs.Float64("repeat-penalty", 1, "repetition penalty over the last 64 tokens (1: none)")
	seed := fs.Uint("seed", 0, "sampling seed")
	return func() runtime.Sampling {
		return runtime.Sampling{Temperature: float32(*temp), TopK: *topK, TopP: float32(*topP), MinP: float32(*minP),
			RepeatPenalty: float32(*rep), Seed: uint32(*seed)}
	}
}

// loadFlags are the flags every command that loads a plan takes.
type loadFlags struct {
	model   *string
	backend *string
	threads *int
}

func addLoadFlags(fs interface {
	String(string, string, string) *string
	Int(string, int, string) *int
}) loadFlags {
	return loadFlags{
		model:   fs.String("model", "", "the GGUF file (default: the plan's recorded file name next to the plan)"),
		backend: fs.String("backend", "auto", "the backend: auto (Metal on a Mac with a GPU, else the CPU), metal or cpu"),
		threads: fs.Int("threads", 0, "CPU threads (0: every core)"),
	}
}

func (lf loadFlags) load(ctx *cli.Context, plan string) (*runtime.Model, error) {
	var be runtime.Backend
	switch *lf.backend {
	case "auto":
		var why string
		be, why = runtime.DefaultBackend(*lf.threads)
		if be.Name() != "cpu" || goruntime.GOOS == "darwin" {
			fmt.Fprintf(ctx.Stderr, "akunu: backend %s\n", why)
		}
	case "cpu":
		be = runtime.NewCPU(*lf.threads)
	case "metal":
		var err error
		if be, err = runtime.NewMetal(metal.Options{}); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: --backend %q: want auto, metal or cpu", cli.ErrUsage, *lf.backend)
	}
	return runtime.Load(plan, runtime.Options{Model: *lf.model, Backend: be, Threads: *lf.threads,
		Progress: func(stage string, done, total int64) {
			fmt.Fprintf(ctx.Stderr, "\rakunu: %s %5.1f%%", stage, 100*float64(done)/float64(max(total, 1)))
			if done >= total {
				fmt.Fprintln(ctx.Stderr)
			}
		}})
}

func runRun(ctx *cli.Context, args []string) error {
	fs := ctx.Flags("run")
	prompt := fs.String("p", "", "the prompt")
	n := fs.Int("n", 128, "tokens to generate at most (0: until EOS or a full context)")
	sampling := addSamplingFlags(fs, 0)
	asJSON := fs.Bool("json", false, "print one JSON object instead of streaming")
	topLogits := fs.Int("top-logits", 0, "with --json: the K best [id, logit] pairs of every step")
	lf := addLoadFlags(fs)
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: want one PLAN", cli.ErrUsage)
	}
	m, err := lf.load(ctx, pos[0])
	if err != nil {
		return err
	}
	defer m.Close()
	ids := m.Tokenizer.Tokenize(*prompt, true, false)
	o := runtime.GenerateOptions{MaxTokens: *n, TopLogits: *topLogits, Sampling: sampling()}
	dec := m.Tokenizer.NewDecoder(false)
	if !*asJSON {
		fmt.Fprint(ctx.Stdout, *prompt)
		o.OnToken = func(id int32) bool {
			fmt.Fprint(ctx.Stdout, dec.Add(id))
			return true
		}
	}
	res, err := m.NewSession().Generate(ids, o)
	if err != nil {
		return err
	}
	st := stats(m, res)
	if !*asJSON {
		fmt.Fprintln(ctx.Stdout, dec.Flush())
		fmt.Fprintf(ctx.Stderr, "\nakunu: prompt %d tokens, %.1f tok/s; decode %d tokens, %.1f tok/s; load %.0f ms; stop: %s\n",
			len(res.Prompt), st.PromptTokS, len(res.Tokens), st.DecodeTokS, st.LoadMS, st.Stop)
		return nil
	}
	out := struct {
		PromptTokens []int32    `json:"prompt_tokens"`
		Tokens       []int32    `json:"tokens"`
		Text         string     `json:"text"`
		Stats        runStats   `json:"stats"`
		TopLogits    [][][2]any `json:"top_logits,omitempty"`
	}{PromptTokens: ids, Tokens: res.Tokens, Text: m.Tokenizer.Detokenize(res.Tokens, false), Stats: st}
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
	Stop       string  `json:"stop"`
}

func stats(m *runtime.Model, r *runtime.Result) runStats {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	rate := func(n int, d time.Duration) float64 {
		if d <= 0 || n <= 0 {
			return 0
		}
		return float64(n) / d.Seconds()
	}
	// The first generated token is chosen at the end of the prompt phase;
	// decode covers the rest.
	return runStats{PromptTokS: rate(len(r.Prompt), r.PromptTime), DecodeTokS: rate(len(r.Tokens)-1, r.DecodeTime),
		PromptMS: ms(r.PromptTime), DecodeMS: ms(r.DecodeTime), LoadMS: ms(m.LoadTime), Stop: string(r.Stop)}
}
