package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime"
)

func init() {
	app.Register(cli.Command{
		Name: "bench",
		Summary: "measure prompt processing and generation speed (llama-bench style), decode bandwidth, " +
			"batched decode of many sequences (--batch) and streaming latency (--stream)",
		Usage: "PLAN [-p 512] [-n 128] [-c 1] [-r 5] [--batch 1,2,4,8,16] [--stream] [--json] [--threads N] [--model PATH]\n" +
			"       [--embed 1,32 [--embed-tokens 64]]: embedding throughput, inputs per second (the default for an embedding model)\n" +
			"       [--spec ngram|draft [--draft PLAN] [--draft-max K] [--draft-min K] [--draft-vocab N] [--prompt TEXT | --prompt-file F]]\n" +
			"       [--grammar FILE.gbnf | --json-schema FILE.json | --json-object]: decode with and without the constraint, alternating",
		Run: runBench,
	})
}

// parseBatches reads "1,2,4,8".
func parseBatches(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || b < 1 || b > plans.MaxSeqs {
			return nil, cli.FlagError{Flag: "batch", Msg: fmt.Sprintf("%q: want sizes from 1 to %d, comma-separated", s, plans.MaxSeqs)}
		}
		out = append(out, b)
	}
	return out, nil
}

type batchRow struct {
	B          int       `json:"b"`
	TokS       float64   `json:"tok_s_median"`
	TokSMin    float64   `json:"tok_s_min"`
	TokSMax    float64   `json:"tok_s_max"`
	PerSeqTokS float64   `json:"per_sequence_tok_s"`
	VsSingle   float64   `json:"vs_single_stream"`
	Runs       []float64 `json:"runs"`
}

func runBench(ctx *cli.Context, args []string) error {
	fs := ctx.Flags("bench")
	pp := fs.Int("p", 512, "prompt tokens")
	tg := fs.Int("n", 128, "generated tokens")
	tgCtx := fs.Int("c", 1, "prompt tokens before the decode test: tg is timed from this context (1: from an empty one, as llama-bench's tg; -c equal to -p: the decode after the pp prompt)")
	reps := fs.Int("r", 5, "repetitions")
	batchList := fs.String("batch", "", "also decode B sequences together for each B listed (1,2,4,8,16): aggregate tok/s")
	embedList := fs.String("embed", "", "embed B inputs together for each B listed (1,32): inputs/s; an embedding model's plan does only this (default 1,32)")
	embedTokens := fs.Int("embed-tokens", 64, "tokens of each input of --embed")
	stream := fs.Bool("stream", false, "also stream a generation and report time to first token and the gaps between tokens")
	asJSON := fs.Bool("json", false, "print JSON")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of everything after the load (warm-ups and timed runs) to this file, for go tool pprof")
	lf := addLoadFlags(fs)
	bs := addBenchSpecFlags(fs)
	cf := addConstrainFlags(fs)
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if err := firstError(atLeast("p", *pp, 1, ""), atLeast("n", *tg, 1, ""), atLeast("c", *tgCtx, 1, ""), atLeast("r", *reps, 1, ""), lf.check(), bs.check(), cf.check(), cf.notWithSpec(*bs.spec.mode)); err != nil {
		return err
	}
	if _, err := cf.parse(io.Discard); err != nil { // a bad file is refused before the model loads
		return err
	}
	batches, err := parseBatches(*batchList)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: want one PLAN", cli.ErrUsage)
	}
	embeds, err := parseBatches(*embedList)
	if err != nil {
		return cli.FlagError{Flag: "embed", Msg: strings.TrimPrefix(err.Error(), "--batch ")}
	}
	if err := atLeast("embed-tokens", *embedTokens, 1, ""); err != nil {
		return err
	}
	seqs := 1
	if len(batches) > 0 {
		seqs = slices.Max(batches)
	}
	encoder := false
	m, err := lf.loadFor(ctx, pos[0], func(p *plans.Plan) int {
		encoder = p.Program(plans.ProgDecode) == nil
		if encoder && embeds == nil {
			embeds = []int{1, 32}
		}
		if embeds != nil {
			return max(seqs, embedSeqs(p))
		}
		return seqs
	})
	if err != nil {
		return err
	}
	defer closeModel(m)
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if embeds != nil {
		if err := benchEmbed(ctx, m, embeds, *embedTokens, *reps, *asJSON); err != nil || encoder {
			return err
		}
	}
	if *bs.spec.mode != "" {
		return benchSpec(ctx, m, bs, *tg, *reps, *asJSON)
	}
	if cf.on() {
		return benchConstrained(ctx, m, cf, *pp, *tg, *reps, *asJSON)
	}
	// A generation stops at a full context: tg tokens past it would be
	// fewer tokens timed under tg's name.
	if c := m.Ctx(); *pp+1 > c {
		return cli.FlagError{Flag: "p", Msg: fmt.Sprintf("%d plus the token it gives: more positions than the plan's context of %d", *pp, c)}
	} else if *tgCtx+*tg > c {
		return cli.FlagError{Flag: "n", Msg: fmt.Sprintf("%d after -c %d: %d positions, more than the plan's context of %d", *tg, *tgCtx, *tgCtx+*tg, c)}
	}
	tgName := fmt.Sprintf("tg%d", *tg)
	if *tgCtx > 1 {
		tgName += fmt.Sprintf(" @ d%d", *tgCtx) // llama-bench's name for a decode at a depth
	}
	prog := newProgress(ctx.Stderr, *reps)
	prog.phase(fmt.Sprintf("pp%d and %s, %d runs after a warm-up", *pp, tgName, *reps))
	r, err := m.BenchEach(*pp, *tg, *tgCtx, *reps, func(rep int, ppRate, tgRate float64) {
		prog.rep(rep, fmt.Sprintf("pp %.2f t/s, tg %.2f t/s", ppRate, tgRate))
	})
	prog.done()
	if err != nil {
		return err
	}
	ppM, ppSD := runtime.MeanSD(r.PP)
	tgM, tgSD := runtime.MeanSD(r.TG)
	tgMed := runtime.Median(r.TG)
	var rows []batchRow
	for _, b := range batches {
		prog.phase(fmt.Sprintf("batched decode of %d sequences", b))
		br, err := m.BenchBatchEach(b, 16, *tg, *reps, func(rep int, _, tgRate float64) {
			prog.rep(rep, fmt.Sprintf("%.2f t/s together", tgRate))
		})
		prog.done()
		if err != nil {
			return err
		}
		med := runtime.Median(br.TG)
		rows = append(rows, batchRow{B: b, TokS: med, TokSMin: slices.Min(br.TG), TokSMax: slices.Max(br.TG),
			PerSeqTokS: med / float64(b), VsSingle: med / tgMed, Runs: br.TG})
	}
	var lat *latency
	if *stream {
		prog.phase("a streamed generation")
		l, err := streamLatency(m, *pp, *tg)
		if err != nil {
			return err
		}
		lat = &l
	}
	tgt := m.Plan.Header.Target
	// The thread count the backend settled on (--threads 0 means every
	// core), where the backend has one.
	threads := *lf.threads
	if t, ok := m.Backend().(interface{ Threads() int }); ok {
		threads = t.Threads()
	}
	bw, bwSrc, measured := tgt.BandwidthGBs*1e9, "profile "+tgt.Chip, false
	if cb, ok := m.Backend().(interface{ CopyBandwidth() (float64, error) }); ok {
		// a GPU that measures its own: bytes read and written by a device copy
		prog.phase("the GPU's copy bandwidth")
		if b, err := cb.CopyBandwidth(); err == nil && b > 0 {
			bw, bwSrc, measured = b, "measured device copy, read + written", true
		}
	} else if tgt.Kind == "cpu" || bw == 0 {
		prog.phase("the memory's read bandwidth")
		bw, bwSrc, measured = runtime.ReadBandwidth(threads), fmt.Sprintf("measured read, %d threads", max(threads, 1)), true
	}
	// The decode test's steps read tgCtx+1 .. tgCtx+tg cached positions:
	// the roofline counts the cache they read, not the plan's whole one.
	kvAvg := *tgCtx + (*tg+1)/2
	perTok := float64(m.DecodeBytesAt(kvAvg))
	achieved := perTok * tgM
	bwLine, bwNote := bandwidthLine(perTok, achieved, bw, bwSrc, measured)
	bwLine += fmt.Sprintf("\n  (the weights and %d cached positions on average; with the whole %d-position cache, as akunuc inspect counts, %.1f MB/token)",
		kvAvg, m.Ctx(), float64(m.DecodeBytes())/1e6)
	if *asJSON {
		out := map[string]any{
			"plan": pos[0], "chip": tgt.Chip, "backend": m.Backend().Name(), "threads": threads,
			"pp": *pp, "tg": *tg, "tg_context": *tgCtx, "reps": *reps,
			"pp_tok_s": ppM, "pp_tok_s_sd": ppSD, "tg_tok_s": tgM, "tg_tok_s_sd": tgSD, "tg_tok_s_median": tgMed,
			"pp_runs": r.PP, "tg_runs": r.TG,
			"decode_bytes_per_token": perTok, "decode_bytes_s": achieved,
			"decode_kv_positions": kvAvg, "decode_bytes_per_token_whole_cache": float64(m.DecodeBytes()),
			"bandwidth_bytes_s": bw, "bandwidth_source": bwSrc, "bandwidth_share": achieved / bw,
		}
		if bwNote != "" {
			out["bandwidth_note"] = bwNote
		}
		if rows != nil {
			out["batch"] = rows
		}
		if lat != nil {
			out["stream"] = lat
		}
		enc := json.NewEncoder(ctx.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	w := tabwriter.NewWriter(ctx.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "model\tchip\tbackend\tthreads\ttest\tt/s\t\n")
	for _, row := range []struct {
		test  string
		m, sd float64
	}{{fmt.Sprintf("pp%d", *pp), ppM, ppSD}, {tgName, tgM, tgSD}} {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%.2f ± %.2f\t\n", m.Plan.Header.Model.File, tgt.Chip, m.Backend().Name(), threads, row.test, row.m, row.sd)
	}
	w.Flush()
	fmt.Fprintf(ctx.Stdout, "\n%s\n", bwLine)
	if rows != nil {
		fmt.Fprintf(ctx.Stdout, "\nbatched decode, tg%d per sequence, median of %d runs [min–max]; against single-stream tg (median %.2f t/s):\n", *tg, *reps, tgMed)
		w = tabwriter.NewWriter(ctx.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(w, "B\taggregate t/s\tper sequence\t× single\t\n")
		for _, r := range rows {
			fmt.Fprintf(w, "%d\t%.2f [%.2f–%.2f]\t%.2f\t%.2f×\t\n", r.B, r.TokS, r.TokSMin, r.TokSMax, r.PerSeqTokS, r.VsSingle)
		}
		w.Flush()
	}
	if lat != nil {
		fmt.Fprintf(ctx.Stdout, "\nstreaming (pp%d, tg%d): first token %.1f ms; gaps between tokens p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
			*pp, *tg, lat.FirstMS, lat.GapP50MS, lat.GapP99MS, lat.GapMaxMS)
	}
	return nil
}

// streamLatency streams one generation as akunu run does (its default
// latency budget) and times the tokens' arrival.
func streamLatency(m *runtime.Model, pp, tg int) (latency, error) {
	s, err := m.NewSession()
	if err != nil {
		return latency{}, err
	}
	defer s.Close()
	prompt := make([]int32, pp)
	for i := range prompt {
		prompt[i] = int32(1 + i%max(1, m.Vocab()-1))
	}
	clk := newClock(tg)
	_, err = s.Generate(context.Background(), prompt, runtime.GenerateOptions{MaxTokens: tg, IgnoreEOS: true,
		OnToken: func(int32) bool { clk.tick(); return true }})
	return clk.latency(), err
}

// cachedBytes is more than any CPU's caches keep between two tokens: a
// decode that reads more than this each token cannot be served from them.
const cachedBytes = 64 << 20

// bandwidthLine says how fast decode read its bytes against the ceiling
// bw, and note why, when it read faster than the ceiling: a share above
// 100% is never printed bare.
func bandwidthLine(perTok, achieved, bw float64, src string, measured bool) (line, note string) {
	if bw <= 0 || math.IsNaN(bw) || math.IsInf(bw, 0) {
		return fmt.Sprintf("decode reads %.1f MB/token: %.2f GB/s (no bandwidth to compare with)", perTok/1e6, achieved/1e9), ""
	}
	line = fmt.Sprintf("decode reads %.1f MB/token: %.2f GB/s, %.1f%% of %.1f GB/s (%s)", perTok/1e6, achieved/1e9, 100*achieved/bw, bw/1e9, src)
	if achieved > bw {
		note = "above the measured read bandwidth: the bytes a token reads stay in the CPU's caches between tokens"
		if perTok > cachedBytes {
			// No cache holds this much between tokens: the probe is what
			// fell short (a plain Go loop a thread, against decode's
			// vector kernels).
			note = "above the measured read bandwidth: the read probe (a plain loop a thread) undershoots this machine, so the share is relative, not a roofline"
		}
		if !measured {
			note = "above the profile's bandwidth: the bytes a token reads stay in the chip's caches, or the profile's figure is low"
		}
		line += "; " + note
	}
	return line, note
}

// progress tells, on stderr, which phase of a bench runs and how each
// repetition went: a line each, or one line rewritten on a terminal.
type progress struct {
	w     io.Writer
	tty   bool
	reps  int
	label string
	open  bool // a \r line waits for its newline
}

func newProgress(w io.Writer, reps int) *progress {
	return &progress{w: w, tty: isTerminal(w), reps: reps}
}

func (p *progress) phase(label string) {
	p.done()
	p.label = label
	fmt.Fprintf(p.w, "akunu: %s\n", label)
}

func (p *progress) rep(rep int, what string) {
	run := fmt.Sprintf("run %d/%d", rep, p.reps)
	if rep == 0 {
		run = "warm-up"
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r\x1b[Kakunu:   %s: %s", run, what)
		p.open = true
		return
	}
	fmt.Fprintf(p.w, "akunu:   %s: %s\n", run, what)
}

// done ends a rewritten line.
func (p *progress) done() {
	if p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// embedRow is one --embed measurement.
type embedRow struct {
	B      int       `json:"b"`
	Tokens int       `json:"tokens_per_input"`
	InS    float64   `json:"inputs_s_median"`
	InSMin float64   `json:"inputs_s_min"`
	InSMax float64   `json:"inputs_s_max"`
	TokS   float64   `json:"tok_s_median"`
	Runs   []float64 `json:"runs"`
}

// benchEmbed times embeddings of B inputs of n tokens for each B.
func benchEmbed(ctx *cli.Context, m *runtime.Model, bs []int, n, reps int, asJSON bool) error {
	if !m.Embeds() {
		return fmt.Errorf("--embed: the plan has no embedding program (compile an embedding model, or a decoder with --pooling)")
	}
	if n > m.MaxEmbedTokens() {
		return cli.FlagError{Flag: "embed-tokens", Msg: fmt.Sprintf("%d: the plan embeds at most %d tokens an input", n, m.MaxEmbedTokens())}
	}
	prog := newProgress(ctx.Stderr, reps)
	var rows []embedRow
	for _, b := range bs {
		prog.phase(fmt.Sprintf("embeddings of %d inputs of %d tokens", b, n))
		runs, err := m.BenchEmbed(b, n, reps, func(rep int, _, rate float64) { prog.rep(rep, fmt.Sprintf("%.1f inputs/s", rate)) })
		prog.done()
		if err != nil {
			return err
		}
		med := runtime.Median(runs)
		rows = append(rows, embedRow{B: b, Tokens: n, InS: med, InSMin: slices.Min(runs), InSMax: slices.Max(runs), TokS: med * float64(n), Runs: runs})
	}
	tgt := m.Plan.Header.Target
	threads := 0
	if t, ok := m.Backend().(interface{ Threads() int }); ok {
		threads = t.Threads()
	}
	if asJSON {
		enc := json.NewEncoder(ctx.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"plan": m.Plan.Header.Model.File, "chip": tgt.Chip, "backend": m.Backend().Name(),
			"threads": threads, "reps": reps, "embed": rows})
	}
	fmt.Fprintf(ctx.Stdout, "embeddings of %s on %s (%s, %d threads), median of %d runs [min–max]:\n", m.Plan.Header.Model.File, tgt.Chip, m.Backend().Name(), threads, reps)
	w := tabwriter.NewWriter(ctx.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "B\ttokens\tinputs/s\ttok/s\t\n")
	for _, r := range rows {
		fmt.Fprintf(w, "%d\t%d\t%.1f [%.1f–%.1f]\t%.0f\t\n", r.B, r.Tokens, r.InS, r.InSMin, r.InSMax, r.TokS)
	}
	return w.Flush()
}

// startCPUProfile starts Go's CPU profiler writing to path; stop ends it
// and closes the file. The file is created before the profile starts, so
// a bad path is an error before any run.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
