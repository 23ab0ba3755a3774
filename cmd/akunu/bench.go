package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/runtime"
)

func init() {
	app.Register(cli.Command{
		Name:    "bench",
		Summary: "measure prompt processing and generation speed (llama-bench style), and decode bandwidth",
		Usage:   "PLAN [-p 512] [-n 128] [-r 5] [--json] [--threads N] [--model PATH]",
		Run:     runBench,
	})
}

func runBench(ctx *cli.Context, args []string) error {
	fs := ctx.Flags("bench")
	pp := fs.Int("p", 512, "prompt tokens")
	tg := fs.Int("n", 128, "generated tokens")
	reps := fs.Int("r", 5, "repetitions")
	asJSON := fs.Bool("json", false, "print JSON")
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
	r, err := m.Bench(*pp, *tg, max(*reps, 1))
	if err != nil {
		return err
	}
	ppM, ppSD := runtime.MeanSD(r.PP)
	tgM, tgSD := runtime.MeanSD(r.TG)
	tgt := m.Plan.Header.Target
	bw, bwSrc := tgt.BandwidthGBs*1e9, "profile "+tgt.Chip
	if tgt.Kind == "cpu" || bw == 0 {
		bw, bwSrc = runtime.MemcpyBandwidth(), "measured memcpy"
	}
	// The thread count the backend settled on (--threads 0 means every
	// core), where the backend has one.
	threads := *lf.threads
	if t, ok := m.Backend().(interface{ Threads() int }); ok {
		threads = t.Threads()
	}
	perTok := float64(m.DecodeBytes())
	achieved := perTok * tgM
	if *asJSON {
		enc := json.NewEncoder(ctx.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{
			"plan": pos[0], "chip": tgt.Chip, "backend": m.Backend().Name(), "threads": threads,
			"pp": *pp, "tg": *tg, "reps": *reps,
			"pp_tok_s": ppM, "pp_tok_s_sd": ppSD, "tg_tok_s": tgM, "tg_tok_s_sd": tgSD,
			"decode_bytes_per_token": perTok, "decode_bytes_s": achieved,
			"bandwidth_bytes_s": bw, "bandwidth_source": bwSrc, "bandwidth_share": achieved / bw,
		})
	}
	w := tabwriter.NewWriter(ctx.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "model\tchip\tbackend\tthreads\ttest\tt/s\t\n")
	for _, row := range []struct {
		test  string
		m, sd float64
	}{{fmt.Sprintf("pp%d", *pp), ppM, ppSD}, {fmt.Sprintf("tg%d", *tg), tgM, tgSD}} {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%.2f ± %.2f\t\n", m.Plan.Header.Model.File, tgt.Chip, m.Backend().Name(), threads, row.test, row.m, row.sd)
	}
	w.Flush()
	fmt.Fprintf(ctx.Stdout, "\ndecode reads %.1f MB/token: %.2f GB/s, %.1f%% of %.1f GB/s (%s)\n",
		perTok/1e6, achieved/1e9, 100*achieved/bw, bw/1e9, bwSrc)
	return nil
}
