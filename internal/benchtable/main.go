// Command benchtable times akunu against llama.cpp, each engine in a
// process of its own, and prints one table of ratios with the bars
// beside them (make bench). akunu runs as `akunu bench`; llama.cpp as
// internal/llamapeer, a program that loads only llama.cpp's release
// library. The two alternate, round after round, on the same GGUF file,
// thread count and machine, and nothing of one runs while the other is
// timed. Figures are medians over every run with their range; decode is
// also given as the share of the machine's measured read bandwidth, for
// both engines (the bytes a token reads are akunu's count for the file).
// Timings are reported, never asserted.
//
//	go run ./internal/benchtable -akunu bin/akunu -akunuc bin/akunuc -peer bin/llamapeer \
//	    [-threads 1,2,8,16] [-chip cpu-avx2] [-rounds 3] [-r 3] [-p 512] [-n 128] [-long 4096] [-kv f16] [-json] model.gguf...
//
// With -long N a third row per (model, threads) times decode at a long
// context: tg32 after an N-token prompt (akunu bench -p N -c N -n 32 on a plan
// compiled for N + 64 positions; llamapeer -p 0 -c N -n 32), one run
// after a warm-up per engine and round. -kv picks both engines' KV cache
// type (akunuc compile --kv-type, llamapeer -kv).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/akunu-dev/akunu/runtime"
)

// Bars are issue 11's: decode ≥ 1.2× llama.cpp, prefill ≥ 1.0×, decode
// at a long context ≥ 1.0×.
const (
	barTG   = 1.2
	barPP   = 1.0
	barLong = 1.0
	longTG  = 32
)

// Row is one (model, threads, test) of the table.
type Row struct {
	Model   string    `json:"model"`
	Threads int       `json:"threads"`
	Test    string    `json:"test"`
	Akunu   []float64 `json:"akunu_runs"`
	Llama   []float64 `json:"llama_runs"`
	// Bench are llama-bench's runs (when -llama-bench is given); the
	// peer figure is the faster of llamapeer and llama-bench.
	Bench      []float64 `json:"llama_bench_runs,omitempty"`
	PeerFrom   string    `json:"peer_from"`
	AkunuMed   float64   `json:"akunu_tok_s_median"`
	LlamaMed   float64   `json:"llama_tok_s_median"`
	Ratio      float64   `json:"ratio"`
	Bar        float64   `json:"bar"`
	Meets      bool      `json:"meets_bar"`
	AkunuShare float64   `json:"akunu_bandwidth_share,omitempty"`
	LlamaShare float64   `json:"llama_bandwidth_share,omitempty"`
	// ReadGBs is the median of the read bandwidth the row's akunu runs
	// measured (runtime.ReadBandwidth), the shares' denominator: on a VM
	// it moves between runs, so each row has its own.
	ReadGBs float64 `json:"read_bandwidth_gb_s,omitempty"`
}

// Table is the whole run.
type Table struct {
	CPU          string  `json:"cpu"`
	LlamaVariant string  `json:"llama_cpu_variant"`
	LlamaLib     string  `json:"llama_library"`
	ReadGBs      float64 `json:"read_bandwidth_gb_s"` // the median of the rows' ReadGBs
	Chip         string  `json:"chip"`
	Rows         []Row   `json:"rows"`
}

func main() {
	akunu := flag.String("akunu", "bin/akunu", "the akunu binary")
	akunuc := flag.String("akunuc", "bin/akunuc", "the akunuc binary")
	peer := flag.String("peer", "bin/llamapeer", "the llama.cpp peer binary (internal/llamapeer)")
	lbench := flag.String("llama-bench", "", "llama.cpp's llama-bench (scripts/build-llama-bench.sh): also timed, and the faster of it and llamapeer is the peer")
	threadList := flag.String("threads", "2", "thread counts, comma-separated")
	chip := flag.String("chip", "cpu-avx2", "CPU chip profile to compile for (the thread count is appended)")
	rounds := flag.Int("rounds", 3, "rounds: each engine runs once per round, alternating which goes first")
	reps := flag.Int("r", 3, "repetitions inside each run (after its warm-up)")
	pp := flag.Int("p", 512, "prompt tokens (prefill test)")
	tg := flag.Int("n", 128, "generated tokens (decode test, after a one-token prompt)")
	asJSON := flag.Bool("json", false, "print JSON")
	jsonOut := flag.String("json-out", "", "also write the JSON to this file")
	long := flag.Int("long", 0, "also time decode at a long context: tg32 after a prompt of this many tokens (0: no)")
	kv := flag.String("kv", "f16", "the KV cache type of both engines: f16, q8_0 or f32")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: benchtable [flags] model.gguf...")
		os.Exit(2)
	}
	var threads []int
	for _, s := range strings.Split(*threadList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "benchtable: -threads: %q is not a thread count\n", s)
			os.Exit(2)
		}
		threads = append(threads, n)
	}
	b := &bench{akunu: *akunu, akunuc: *akunuc, peer: *peer, lbench: *lbench, chip: *chip, rounds: max(*rounds, 1), reps: max(*reps, 1), pp: *pp, tg: *tg,
		long: max(*long, 0), kv: *kv}
	t, err := b.run(flag.Args(), threads)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(t, "", "  ")
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(t)
		return
	}
	t.print()
}

type bench struct {
	akunu, akunuc, peer, lbench, chip string
	rounds, reps, pp, tg, long        int
	kv                                string
}

func (b *bench) run(models []string, threads []int) (*Table, error) {
	t := &Table{Chip: b.chip}
	dir, err := os.MkdirTemp("", "benchtable")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, model := range models {
		for _, th := range threads {
			chip := fmt.Sprintf("%s:%d", b.chip, th)
			plan := filepath.Join(dir, fmt.Sprintf("%s.%d.plan", filepath.Base(model), th))
			if err := b.compile(model, chip, plan, 0); err != nil {
				return nil, err
			}
			longPlan := plan + ".long"
			if b.long > 0 {
				if err := b.compile(model, chip, longPlan, b.long+2*longTG); err != nil {
					return nil, err
				}
			}
			fmt.Fprintf(os.Stderr, "benchtable: %s, %d threads\n", filepath.Base(model), th)
			ppRow := Row{Model: filepath.Base(model), Threads: th, Test: fmt.Sprintf("pp%d", b.pp), Bar: barPP}
			tgRow := Row{Model: filepath.Base(model), Threads: th, Test: fmt.Sprintf("tg%d", b.tg), Bar: barTG}
			longRow := Row{Model: filepath.Base(model), Threads: th, Test: fmt.Sprintf("tg%d@%d", longTG, b.long), Bar: barLong}
			var bytesPerTok float64
			var bws []float64 // each akunu decode run's read bandwidth
			for r := 0; r < b.rounds; r++ {
				order := []bool{r%2 == 0, r%2 != 0} // true: akunu
				for _, ours := range order {
					if ours {
						a, err := b.ours(plan, model, th, b.pp, 1)
						if err != nil {
							return nil, err
						}
						ppRow.Akunu = append(ppRow.Akunu, a.PPRuns...)
						a, err = b.ours(plan, model, th, 1, b.tg)
						if err != nil {
							return nil, err
						}
						tgRow.Akunu = append(tgRow.Akunu, a.TGRuns...)
						bytesPerTok = a.DecodeBytes
						if a.Bandwidth > 0 {
							bws = append(bws, a.Bandwidth)
						}
						if b.long > 0 {
							a, err = b.oursReps(longPlan, model, th, b.long, longTG, b.long, 1)
							if err != nil {
								return nil, err
							}
							longRow.Akunu = append(longRow.Akunu, a.TGRuns...)
						}
						continue
					}
					l, err := b.theirs(model, th)
					if err != nil {
						return nil, err
					}
					ppRow.Llama = append(ppRow.Llama, l.PPRuns...)
					tgRow.Llama = append(tgRow.Llama, l.TGRuns...)
					if b.long > 0 {
						ll, err := b.peerRun(model, th, 0, longTG, b.long, 1)
						if err != nil {
							return nil, err
						}
						longRow.Llama = append(longRow.Llama, ll.TGRuns...)
					}
					t.CPU, t.LlamaVariant, t.LlamaLib = l.CPU, l.Variant, l.Engine
					if b.lbench != "" {
						pp, tg, err := b.llamaBench(model, th)
						if err != nil {
							return nil, err
						}
						ppRow.Bench = append(ppRow.Bench, pp...)
						tgRow.Bench = append(tgRow.Bench, tg...)
					}
				}
			}
			rows := []*Row{&ppRow, &tgRow}
			if b.long > 0 {
				rows = append(rows, &longRow)
			}
			for _, row := range rows {
				row.AkunuMed, row.LlamaMed = runtime.Median(row.Akunu), runtime.Median(row.Llama)
				row.PeerFrom = "llamapeer"
				if m := runtime.Median(row.Bench); m > row.LlamaMed {
					row.LlamaMed, row.PeerFrom = m, "llama-bench"
				}
				if row.LlamaMed > 0 {
					row.Ratio = row.AkunuMed / row.LlamaMed
				}
				row.Meets = row.Ratio >= row.Bar
			}
			if len(bws) > 0 {
				bw := runtime.Median(bws)
				tgRow.AkunuShare = tgRow.AkunuMed * bytesPerTok / bw
				tgRow.LlamaShare = tgRow.LlamaMed * bytesPerTok / bw
				tgRow.ReadGBs = bw / 1e9
			}
			for _, row := range rows {
				t.Rows = append(t.Rows, *row)
			}
		}
	}
	var probes []float64
	for _, r := range t.Rows {
		if r.ReadGBs > 0 {
			probes = append(probes, r.ReadGBs)
		}
	}
	if len(probes) > 0 {
		t.ReadGBs = runtime.Median(probes)
	}
	return t, nil
}

type oursJSON struct {
	PPRuns      []float64 `json:"pp_runs"`
	TGRuns      []float64 `json:"tg_runs"`
	DecodeBytes float64   `json:"decode_bytes_per_token"`
	Bandwidth   float64   `json:"bandwidth_bytes_s"`
}

// compile compiles model for chip into plan (ctx positions; 0: the
// compiler's default) with the KV cache type asked.
func (b *bench) compile(model, chip, plan string, ctx int) error {
	args := []string{"compile", model, "--chip", chip, "--kv-type", b.kv, "-o", plan}
	if ctx > 0 {
		args = append(args, "--ctx", strconv.Itoa(ctx))
	}
	if out, err := exec.Command(b.akunuc, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("compile %s for %s: %v\n%s", model, chip, err, out)
	}
	return nil
}

func (b *bench) ours(plan, model string, threads, pp, tg int) (*oursJSON, error) {
	return b.oursReps(plan, model, threads, pp, tg, 1, b.reps)
}

// oursReps runs akunu bench: pp prompt tokens, tg generated after a prompt
// of ctx (as llamapeer -c).
func (b *bench) oursReps(plan, model string, threads, pp, tg, ctx, reps int) (*oursJSON, error) {
	cmd := exec.Command(b.akunu, "bench", plan, "--model", model, "--threads", strconv.Itoa(threads),
		"-p", strconv.Itoa(pp), "-n", strconv.Itoa(tg), "-c", strconv.Itoa(ctx), "-r", strconv.Itoa(reps), "--json")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, errb.String())
	}
	var r oursJSON
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("akunu bench --json: %v", err)
	}
	return &r, nil
}

type peerJSON struct {
	Engine  string    `json:"engine"`
	CPU     string    `json:"cpu"`
	Variant string    `json:"llama_cpu_variant"`
	PPRuns  []float64 `json:"pp_runs"`
	TGRuns  []float64 `json:"tg_runs"`
}

func (b *bench) theirs(model string, threads int) (*peerJSON, error) {
	return b.peerRun(model, threads, b.pp, b.tg, 1, b.reps)
}

// peerRun runs llamapeer: pp prompt tokens, tg generated after ctx.
func (b *bench) peerRun(model string, threads, pp, tg, ctx, reps int) (*peerJSON, error) {
	cmd := exec.Command(b.peer, "-m", model, "-t", strconv.Itoa(threads), "-p", strconv.Itoa(pp),
		"-n", strconv.Itoa(tg), "-c", strconv.Itoa(ctx), "-r", strconv.Itoa(reps), "-kv", b.kv)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, errb.String())
	}
	var r peerJSON
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("llamapeer: %v", err)
	}
	return &r, nil
}

// llamaBench runs llama-bench on model (pp and tg tests, the same
// sizes and repetitions) and returns each test's per-run tok/s.
func (b *bench) llamaBench(model string, threads int) (pp, tg []float64, err error) {
	args := []string{"-m", model, "-t", strconv.Itoa(threads), "-p", strconv.Itoa(b.pp),
		"-n", strconv.Itoa(b.tg), "-r", strconv.Itoa(b.reps), "-o", "json"}
	if b.kv != "f16" { // a quantized V cache needs flash attention
		args = append(args, "-ctk", b.kv, "-ctv", b.kv, "-fa", "1")
	}
	cmd := exec.Command(b.lbench, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, errb.String())
	}
	var rs []struct {
		NPrompt int       `json:"n_prompt"`
		NGen    int       `json:"n_gen"`
		Samples []float64 `json:"samples_ts"`
	}
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil {
		return nil, nil, fmt.Errorf("llama-bench -o json: %v", err)
	}
	for _, r := range rs {
		if r.NGen > 0 {
			tg = append(tg, r.Samples...)
		} else {
			pp = append(pp, r.Samples...)
		}
	}
	return pp, tg, nil
}

func spread(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f–%.1f", slices.Min(xs), slices.Max(xs))
}

func (t *Table) print() {
	fmt.Printf("CPU: %s; llama.cpp: CPU variant %s (%s); akunu: %s:N\n", t.CPU, t.LlamaVariant, t.LlamaLib, t.Chip)
	fmt.Printf("each engine in its own process, alternating; tok/s medians of every run [range]; decode also as a share of the read bandwidth measured in the row's akunu runs (their median, GB/s)\n\n")
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "model\tthreads\ttest\takunu tok/s\tllamapeer tok/s\tllama-bench tok/s\tratio (vs faster)\tbar\t\tbandwidth akunu / llama.cpp")
	for _, r := range t.Rows {
		verdict := "meets"
		if !r.Meets {
			verdict = "BELOW"
		}
		share := ""
		if r.AkunuShare > 0 {
			share = fmt.Sprintf("%.0f%% / %.0f%% of %.1f", 100*r.AkunuShare, 100*r.LlamaShare, r.ReadGBs)
		}
		lb := "-"
		if len(r.Bench) > 0 {
			lb = fmt.Sprintf("%.1f [%s]", runtime.Median(r.Bench), spread(r.Bench))
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%.1f [%s]\t%.1f [%s]\t%s\t%.2f×\t≥%.1f×\t%s\t%s\n", r.Model, r.Threads, r.Test,
			r.AkunuMed, spread(r.Akunu), runtime.Median(r.Llama), spread(r.Llama), lb, r.Ratio, r.Bar, verdict, share)
	}
	w.Flush()
}
