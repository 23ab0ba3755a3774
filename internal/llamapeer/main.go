// Command llamapeer times llama.cpp alone, in a process of its own: the
// peer that make bench compares akunu with. It loads nothing of akunu's
// engine, only llama.cpp's release library (npm: @node-llama-cpp, every
// CPU variant, the best loaded at run time) through purego, and measures
// as akunu bench does: prompt processing of -p tokens in one batch, and
// decode of -n tokens after a prompt of -c tokens, greedy, -r repetitions
// after a warm-up. It prints one JSON object: the runs, their medians, the
// CPU model and which llama.cpp CPU variant the process loaded.
//
//	go run ./internal/llamapeer -m model.gguf [-t 2] [-p 512] [-n 128] [-c 1] [-r 5]
//	go run ./internal/llamapeer -m embedder.gguf -e 32 [-l 64] [-t 2] [-r 5]
//
// With -e B it times embeddings instead, as akunu bench --embed does: B
// inputs of -l tokens each, pooled as the model's file says, one
// llama_decode for all of them (each its own sequence), inputs per second.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/internal/llamacpp"
)

// Result is what llamapeer prints.
type Result struct {
	Engine    string    `json:"engine"`
	Model     string    `json:"model"`
	Threads   int       `json:"threads"`
	CPU       string    `json:"cpu"`
	Variant   string    `json:"llama_cpu_variant"`
	PP        int       `json:"pp"`
	TG        int       `json:"tg"`
	TGContext int       `json:"tg_context"`
	KV        string    `json:"kv_type"`
	PPRuns    []float64 `json:"pp_runs"`
	TGRuns    []float64 `json:"tg_runs"`
	PPMedian  float64   `json:"pp_tok_s_median"`
	TGMedian  float64   `json:"tg_tok_s_median"`
	// -e: embeddings of EmbedB inputs of EmbedTokens tokens.
	EmbedB      int       `json:"embed_b,omitempty"`
	EmbedTokens int       `json:"embed_tokens,omitempty"`
	EmbedRuns   []float64 `json:"embed_inputs_s,omitempty"`
	EmbedMedian float64   `json:"embed_inputs_s_median,omitempty"`
}

func main() {
	model := flag.String("m", "", "GGUF model file")
	threads := flag.Int("t", 2, "threads")
	pp := flag.Int("p", 512, "prompt tokens of the prompt-processing test (0: none)")
	tg := flag.Int("n", 128, "generated tokens of the decode test (0: none)")
	tgCtx := flag.Int("c", 1, "prompt tokens fed before the decode test")
	reps := flag.Int("r", 5, "repetitions (after one warm-up)")
	ngl := flag.Int("ngl", 0, "layers offloaded to the GPU (a llama.cpp built with CUDA, AKUNU_LLAMA_LIB=its lib dir; 999: all)")
	embedB := flag.Int("e", 0, "embed this many inputs together instead (an embedding model, or pooling as its file says)")
	embedTokens := flag.Int("l", 64, "tokens of each input with -e")
	kv := flag.String("kv", "f16", "the KV cache's type, K and V (llama-bench's -ctk/-ctv): f16, q8_0 or f32")
	blind := flag.Bool("blind", false, "decode without reading the logits, feeding token ids as llama-bench does (a check of the harness, not a user's decode)")
	flag.Parse()
	if *model == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: llamapeer -m model.gguf [-t N] [-p 512] [-n 128] [-c 1] [-r 5] [-kv f16|q8_0|f32]")
		os.Exit(2)
	}
	var r *Result
	var err error
	if *embedB > 0 {
		r, err = runEmbed(*model, *threads, *ngl, *embedB, max(*embedTokens, 1), max(*reps, 1))
	} else {
		kvType, ok := map[string]dtype.Type{"f16": dtype.F16, "q8_0": dtype.Q8_0, "f32": dtype.F32}[*kv]
		if !ok {
			fmt.Fprintf(os.Stderr, "llamapeer: -kv %q: want f16, q8_0 or f32\n", *kv)
			os.Exit(2)
		}
		r, err = run(*model, *threads, *ngl, *pp, *tg, max(*tgCtx, 1), max(*reps, 1), *blind, kvType)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "llamapeer:", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		os.Exit(1)
	}
}

// openModel loads llama.cpp and maps the model with ngl layers on the GPU.
func openModel(model string, ngl int) (*llamacpp.Lib, *llamacpp.Model, error) {
	lib, err := llamacpp.Load()
	if err != nil {
		return nil, nil, err
	}
	p := lib.DefaultModelParams()
	p.LoadMode = llamacpp.LoadModeMmap
	p.NGPULayers = int32(ngl)
	lm, err := lib.LoadModelWith(model, p)
	return lib, lm, err
}

func run(model string, threads, ngl, pp, tg, tgCtx, reps int, blind bool, kv dtype.Type) (*Result, error) {
	lib, lm, err := openModel(model, ngl)
	if err != nil {
		return nil, err
	}
	defer lm.Close()
	// llama.cpp's defaults (flash attention as it decides), one batch
	// for the whole prompt; the KV cache's type as asked.
	p := lib.DefaultContextParams()
	p.TypeK, p.TypeV = int32(kv), int32(kv)
	p.NCtx = uint32(max(pp, tgCtx+tg) + 8)
	p.NBatch = uint32(max(pp, tgCtx, 1))
	p.NUbatch = p.NBatch
	p.NSeqMax = 1
	p.NThreads, p.NThreadsBatch = int32(threads), int32(threads)
	p.NoPerf = true
	ctx, err := lm.NewContextWith(p)
	if err != nil {
		return nil, err
	}
	defer ctx.Close()
	// A persistent thread pool, as llama.cpp's own tools attach.
	if err := ctx.AttachThreadpool(threads); err != nil {
		return nil, err
	}
	r := &Result{Engine: libVersion(lib.Dir), Model: model, Threads: threads, CPU: cpuModel(), Variant: loadedVariant(),
		PP: pp, TG: tg, TGContext: tgCtx, KV: strings.ToLower(kv.String())}
	prompt := func(k int) []int32 {
		p := make([]int32, k)
		for i := range p {
			p[i] = int32(1 + i%max(1, lm.NVocab()-1))
		}
		return p
	}
	for i := -1; i < reps; i++ {
		if pp > 0 {
			ctx.ClearKV()
			t0 := time.Now()
			if err := ctx.DecodeLast(prompt(pp), 0); err != nil {
				return nil, err
			}
			_ = ctx.ArgmaxAt(pp - 1)
			if i >= 0 {
				r.PPRuns = append(r.PPRuns, float64(pp)/time.Since(t0).Seconds())
			}
		}
		if tg > 0 {
			ctx.ClearKV()
			if err := ctx.DecodeLast(prompt(tgCtx), 0); err != nil {
				return nil, err
			}
			tok := int32(ctx.ArgmaxAt(tgCtx - 1))
			t0 := time.Now()
			for j := range tg {
				if err := ctx.DecodeLast([]int32{tok}, tgCtx+j); err != nil {
					return nil, err
				}
				if blind {
					tok = int32(1 + j%max(1, lm.NVocab()-1))
					continue
				}
				tok = int32(ctx.ArgmaxAt(0))
			}
			if i >= 0 {
				r.TGRuns = append(r.TGRuns, float64(tg)/time.Since(t0).Seconds())
			}
		}
	}
	r.PPMedian, r.TGMedian = median(r.PPRuns), median(r.TGRuns)
	return r, nil
}

// runEmbed times llama.cpp's pooled embeddings of b inputs of n tokens.
func runEmbed(model string, threads, ngl, b, n, reps int) (*Result, error) {
	lib, lm, err := openModel(model, ngl)
	if err != nil {
		return nil, err
	}
	defer lm.Close()
	o := llamacpp.EmbedOptions{Pooling: llamacpp.PoolingUnspecified, Attention: llamacpp.AttentionUnspecified,
		NCtx: b * n, NSeqMax: b, NThreads: threads}
	if ngl > 0 {
		o.FlashAttn = llamacpp.FlashAttnAuto // llama.cpp's default on a GPU
	}
	ctx, err := lm.NewEmbedContext(o)
	if err != nil {
		return nil, err
	}
	defer ctx.Close()
	if err := ctx.AttachThreadpool(threads); err != nil {
		return nil, err
	}
	inputs := make([][]int32, b)
	for i := range inputs {
		inputs[i] = make([]int32, n)
		for j := range inputs[i] {
			inputs[i][j] = int32(1 + (j+(i+1)*7)%max(1, lm.NVocab()-1))
		}
	}
	r := &Result{Engine: libVersion(lib.Dir), Model: model, Threads: threads, CPU: cpuModel(), Variant: loadedVariant(), EmbedB: b, EmbedTokens: n}
	for i := -1; i < reps; i++ {
		t0 := time.Now()
		if _, err := ctx.Embed(inputs); err != nil {
			return nil, err
		}
		if i >= 0 {
			r.EmbedRuns = append(r.EmbedRuns, float64(b)/time.Since(t0).Seconds())
		}
	}
	r.EmbedMedian = median(r.EmbedRuns)
	return r, nil
}

// median is runtime.Median, not imported: this program links nothing of
// akunu's engine.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// libVersion names the llama.cpp library: its npm package and version
// (the package.json two levels above the library directory).
func libVersion(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "..", "..", "package.json"))
	if err != nil {
		return "llama.cpp in " + dir
	}
	var pkg struct{ Name, Version string }
	if json.Unmarshal(b, &pkg) != nil || pkg.Name == "" {
		return "llama.cpp in " + dir
	}
	return "llama.cpp from npm " + pkg.Name + "@" + pkg.Version
}

// cpuModel is the CPU's model name (/proc/cpuinfo).
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// loadedVariant is the llama.cpp CPU library this process mapped
// (libggml-cpu-<variant>.so), read from /proc/self/maps.
func loadedVariant() string {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return "unknown"
	}
	var found []string
	for _, line := range strings.Split(string(b), "\n") {
		i := strings.Index(line, "libggml-cpu")
		if i < 0 {
			continue
		}
		name := line[i:]
		if j := strings.Index(name, ".so"); j >= 0 {
			name = name[:j]
		}
		name = strings.TrimPrefix(strings.TrimPrefix(name, "libggml-cpu"), "-")
		if name == "" {
			name = "generic"
		}
		if !slices.Contains(found, name) {
			found = append(found, name)
		}
	}
	if len(found) == 0 {
		return "unknown"
	}
	return strings.Join(found, ",")
}
