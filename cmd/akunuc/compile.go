package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/compiler/modelinfo"
	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/specs/chips"
)

func init() {
	app.Register(cli.Command{
		Name:    "compile",
		Summary: "compile a GGUF model into a dispatch plan for a chip (reads the header only, never the weights)",
		Usage:   "MODEL.gguf -o OUT.plan [--chip NAME|auto] [--cores N] [--ctx N] [--sampled-sums-only] [--no-template] [--pooling mean|cls|last|none] [--kv-type f16|q8_0|f32] [-v]",
		Run:     runCompile,
	})
}

func runCompile(ctx *cli.Context, args []string) error {
	fs := ctx.Flags("compile")
	out := fs.String("o", "", "output plan (default: MODEL with .plan)")
	chip := fs.String("chip", "auto", "target chip profile (akunuc chips lists them), or auto to detect this machine")
	cores := fs.Int("cores", 0, "core count: picks an Apple GPU bin or sets a CPU target's threads (0: the profile's own or this machine's)")
	maxCtx := fs.Int("ctx", 0, "maximum context the plan holds (default: the model's training context, at most 4096)")
	verbose := fs.Bool("v", false, "print each compiler pass and its time")
	noTemplate := fs.Bool("no-template", false, "leave the model's chat template out of the plan (one the chat engine cannot parse refuses the compile); akunu chat then takes --template or talks in plain turns")
	pooling := fs.String("pooling", "", "embeddings: how an input's rows are pooled, mean, cls or last, overriding the file's pooling_type (none: no embedding program for a decoder whose file names one); a decoder compiled with one gets an embedding program beside its decode programs")
	sampledOnly := fs.Bool("sampled-sums-only", false, "record only sampled weight sums, not every byte's: compiles without reading the whole model, but akunu verify-model cannot check the plan")
	kvType := fs.String("kv-type", "f16", "the KV cache's element type: f16; q8_0 (ggml's 8-bit blocks, half the bytes a position: longer contexts in the same memory, faster decode at long contexts; heads must be multiples of 32); f32 (twice the bytes; the reference). q8_0 and f32 are for CPU plans: the GPU kernels read an f16 cache")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: want one model file, got %d arguments", cli.ErrUsage, len(pos))
	}
	model := pos[0]
	pool, ok := map[string]int{"": 0, "none": compiler.PoolNone, "mean": compiler.PoolMean, "cls": compiler.PoolCLS, "last": compiler.PoolLast}[*pooling]
	if !ok {
		return fmt.Errorf("%w: --pooling %q: want mean, cls, last or none", cli.ErrUsage, *pooling)
	}
	if *out == "" {
		*out = strings.TrimSuffix(model, filepath.Ext(model)) + ".plan"
	}

	var prof chips.Profile
	if *chip == "auto" {
		var found string
		if prof, found, err = chips.Detect(); err != nil {
			return fmt.Errorf("--chip auto: %w (name a target with --chip; akunuc chips lists them)", err)
		}
		if *cores != 0 {
			if prof, err = chips.Resolve(prof.Name, *cores); err != nil {
				return err
			}
		}
		fmt.Fprintln(ctx.Stderr, autoChipLine(found, prof))
	} else if prof, err = chips.Resolve(*chip, *cores); err != nil {
		return err
	}

	o := compiler.Options{Chip: prof, Ctx: *maxCtx, SampledSumsOnly: *sampledOnly, NoTemplate: *noTemplate, Pooling: pool, KVType: *kvType}
	if *verbose {
		o.Verbose = ctx.Stderr
	}
	start := time.Now()
	p, err := compiler.Compile(model, o)
	if err != nil {
		return err
	}
	if err := plans.WriteFile(*out, p); err != nil {
		return err
	}
	st, err := os.Stat(*out)
	if err != nil {
		return err
	}
	var cmds int
	for _, pr := range p.Programs {
		cmds += len(pr.Commands)
	}
	fmt.Fprintf(ctx.Stdout, "wrote %s: %s for %s, context %d, %d programs, %d commands, %s, in %s\n",
		*out, p.Model.HParams.Arch, prof, p.Model.HParams.Ctx, len(p.Programs), cmds,
		modelinfo.Bytes(st.Size()), time.Since(start).Round(time.Millisecond))
	return nil
}

// autoChipLine tells what --chip auto chose: "detected X", and what the
// machine reported where that says more than X's own name.
func autoChipLine(found string, prof chips.Profile) string {
	found = strings.ReplaceAll(strings.TrimSpace(found), "\n", "; ")
	if found == "" || found == prof.String() {
		return fmt.Sprintf("akunuc: --chip auto: detected %s", prof)
	}
	return fmt.Sprintf("akunuc: --chip auto: detected %s (%s)", prof, found)
}
