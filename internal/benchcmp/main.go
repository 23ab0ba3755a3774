// Command benchcmp times akunu's decode against llama.cpp's on the same
// GGUF file and thread count, and prints the ratio (make bench). It is a
// program, not a test: timings are reported, never asserted.
//
//	go run ./internal/benchcmp [-chip cpu-avx2:N] [-threads N] [-p 64] [-n 128] [-r 3] [-bar 2] model.gguf
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/specs/chips"
)

func main() {
	threads := flag.Int("threads", 2, "threads for both engines")
	chip := flag.String("chip", "", "compile target (default cpu-avx2:THREADS)")
	pp := flag.Int("p", 64, "prompt tokens")
	tg := flag.Int("n", 128, "generated tokens")
	reps := flag.Int("r", 3, "repetitions")
	bar := flag.Float64("bar", 0, "the decode ratio akunu/llama.cpp to reach (reported, not enforced)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of akunu's runs to this file")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: benchcmp [flags] model.gguf")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *chip, *threads, *pp, *tg, *reps, *bar, *cpuprofile); err != nil {
		fmt.Fprintln(os.Stderr, "benchcmp:", err)
		os.Exit(1)
	}
}

// run compares the two engines on model; profile, if set, is where akunu's
// runs are CPU-profiled.
func run(model, chip string, threads, pp, tg, reps int, bar float64, profile string) error {
	if chip == "" {
		chip = fmt.Sprintf("cpu-avx2:%d", threads)
	}
	prof, err := chips.Resolve(chip, 0)
	if err != nil {
		return err
	}
	p, err := compiler.Compile(model, compiler.Options{Chip: prof})
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "benchcmp")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	plan := filepath.Join(dir, filepath.Base(model)+".plan")
	if err := plans.WriteFile(plan, p); err != nil {
		return err
	}
	m, err := runtime.Load(plan, runtime.Options{Model: model, Threads: threads})
	if err != nil {
		return err
	}
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	r, err := m.Bench(pp, tg, reps)
	pprof.StopCPUProfile()
	m.Close()
	if err != nil {
		return err
	}
	ourPP, ourPPsd := runtime.MeanSD(r.PP)
	ourTG, ourTGsd := runtime.MeanSD(r.TG)

	lib, err := llamacpp.Load()
	if err != nil {
		return err
	}
	lm, err := lib.LoadModel(model)
	if err != nil {
		return err
	}
	defer lm.Close()
	ctx, err := lm.NewContext(pp+tg+8, max(pp, 1), threads)
	if err != nil {
		return err
	}
	defer ctx.Close()
	prompt := make([]int32, pp)
	for i := range prompt {
		prompt[i] = int32(1 + i%max(1, lm.NVocab()-1))
	}
	var lpp, ltg []float64
	for i := -1; i < reps; i++ {
		ctx.ClearKV()
		t0 := time.Now()
		if err := ctx.DecodeLast(prompt, 0); err != nil {
			return err
		}
		dpp := time.Since(t0)
		tok := int32(llamacpp.Argmax(ctx.Logits(pp - 1)))
		t1 := time.Now()
		for j := range tg {
			if err := ctx.DecodeLast([]int32{tok}, pp+j); err != nil {
				return err
			}
			tok = int32(llamacpp.Argmax(ctx.Logits(0)))
		}
		dtg := time.Since(t1)
		if i >= 0 {
			lpp = append(lpp, float64(pp)/dpp.Seconds())
			ltg = append(ltg, float64(tg)/dtg.Seconds())
		}
	}
	lPP, lPPsd := runtime.MeanSD(lpp)
	lTG, lTGsd := runtime.MeanSD(ltg)
	fmt.Printf("%s, %d threads, plan for %s\n", filepath.Base(model), threads, chip)
	fmt.Printf("  %-6s %18s %18s %8s\n", "test", "akunu t/s", "llama.cpp t/s", "ratio")
	fmt.Printf("  %-6s %10.1f ± %5.1f %10.1f ± %5.1f %7.2fx\n", fmt.Sprintf("pp%d", pp), ourPP, ourPPsd, lPP, lPPsd, ourPP/lPP)
	fmt.Printf("  %-6s %10.1f ± %5.1f %10.1f ± %5.1f %7.2fx", fmt.Sprintf("tg%d", tg), ourTG, ourTGsd, lTG, lTGsd, ourTG/lTG)
	if bar > 0 {
		verdict := "meets"
		if ourTG/lTG < bar {
			verdict = "BELOW"
		}
		fmt.Printf("  (bar %.2gx: %s)", bar, verdict)
	}
	fmt.Println()
	return nil
}
