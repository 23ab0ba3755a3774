package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/modelinfo"
	"github.com/akunu-dev/akunu/compiler/synth"
	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/specs"
)

func init() {
	app.Register(cli.Command{
		Name:    "synth",
		Summary: "write a GGUF model with random weights of any architecture, shape and dtype",
		Usage: "--arch NAME --dim N --layers N --heads N [--kv-heads N] [--head-dim N] [--ffn N]\n" +
			"       [--dtype T] [--embd-dtype T] [--tied] [--vocab FILE.gguf] [--seed S] [--sparse]\n" +
			"       [--set hparam=value ...] -o OUT.gguf",
		Run: runSynth,
	})
}

// setFlags collects repeated --set name=value flags.
type setFlags map[string]specs.Value

func (s setFlags) String() string { return "" }

func (s setFlags) Set(arg string) error {
	name, val, ok := strings.Cut(arg, "=")
	if !ok || name == "" {
		return fmt.Errorf("want hparam=value, got %q", arg)
	}
	s[name] = parseValue(val)
	return nil
}

// parseValue reads an int, a float, a bool, a comma-separated list of those,
// or else a string.
func parseValue(s string) specs.Value {
	if strings.Contains(s, ",") {
		var elems []specs.Value
		for _, p := range strings.Split(s, ",") {
			elems = append(elems, parseValue(p))
		}
		return specs.ArrayValue(elems[0].Kind, len(elems), elems)
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return specs.IntValue(i)
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return specs.FloatValue(f)
	}
	if b, err := strconv.ParseBool(s); err == nil {
		return specs.BoolValue(b)
	}
	return specs.StringValue(s)
}

func runSynth(ctx *cli.Context, args []string) error {
	fs := ctx.Flags("synth")
	var o synth.Options
	var dt, edt, vocab, out string
	set := setFlags{}
	fs.StringVar(&o.Arch, "arch", "", "architecture: a spec name (llama, qwen3, gemma3, ...) or a general.architecture value")
	fs.IntVar(&o.Dim, "dim", 0, "embedding length")
	fs.IntVar(&o.Layers, "layers", 0, "number of layers")
	fs.IntVar(&o.Heads, "heads", 0, "attention heads")
	fs.IntVar(&o.KVHeads, "kv-heads", 0, "key/value heads (default: --heads)")
	fs.IntVar(&o.HeadDim, "head-dim", 0, "head dimension (default: dim/heads)")
	fs.IntVar(&o.FFN, "ffn", 0, "feed-forward length (default: 4*dim)")
	fs.IntVar(&o.CtxTrain, "ctx", 2048, "training context length written to the metadata")
	fs.StringVar(&dt, "dtype", "f32", "dtype of the weight matrices: f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs, or a llama.cpp mix: q4_k_m (Q4_K with Q6_K for the output and some V/down matrices), q3_k_m (Q3_K with Q6_K output, Q4_K/Q5_K attn_v, attn_output and ffn_down)")
	fs.StringVar(&edt, "embd-dtype", "", "dtype of the token embedding (default: --dtype)")
	fs.BoolVar(&o.Tied, "tied", false, "no output matrix: logits use the token embedding")
	fs.StringVar(&vocab, "vocab", "", "copy the tokenizer of this GGUF file (default: a small built-in byte-level BPE)")
	fs.Uint64Var(&o.Seed, "seed", 1, "random seed; the same seed gives the same file")
	fs.BoolVar(&o.Sparse, "sparse", false, "zero weights written as holes: the file's shape without its disk space")
	fs.BoolVar(&o.Copier, "copier", false, "an induction-head model whose greedy text copies its context (the token that followed an earlier occurrence of the last two) instead of random weights: a copy task for speculative decoding; llama-like --arch, untied, --head-dim 64 or more")
	fs.Var(set, "set", "set another hparam of the spec, e.g. --set sliding_window=512 (repeatable)")
	fs.StringVar(&out, "o", "", "output file (required)")
	if _, err := cli.Parse(fs, args); err != nil {
		return err
	}
	if out == "" {
		return fmt.Errorf("%w: -o OUT.gguf is required", cli.ErrUsage)
	}
	var err error
	switch dt { // a mix: llama.cpp's recipe
	case "q4_k_m":
		dt, o.Recipe = "q4_k", "q4_k_m"
	case "q3_k_m":
		dt, o.Recipe = "q3_k", "q3_k_m"
	}
	if o.DType, err = dtype.Parse(dt); err != nil {
		return fmt.Errorf("%w: --dtype: %v", cli.ErrUsage, err)
	}
	if edt != "" {
		if o.EmbedDType, err = dtype.Parse(edt); err != nil {
			return fmt.Errorf("%w: --embd-dtype: %v", cli.ErrUsage, err)
		}
		o.EmbedSet = true
	}
	if len(set) > 0 {
		o.Set = set
	}
	if vocab != "" {
		if o.Vocab, err = synth.VocabFromGGUF(vocab); err != nil {
			return err
		}
	}
	reg, err := specs.Builtin()
	if err != nil {
		return err
	}
	start := time.Now()
	o.Progress = synthProgress(ctx.Stderr, cli.IsTerminal(ctx.Stderr))
	p, err := synth.Build(reg, o)
	if err != nil {
		return err
	}
	if err := p.Write(out, o.Seed); err != nil {
		return err
	}
	var params int64
	for _, t := range p.Tensors {
		n := int64(1)
		for _, d := range t.Shape {
			n *= d
		}
		params += n
	}
	fmt.Fprintf(ctx.Stdout, "wrote %s: %s (%s), %d tensors, %s parameters, %s in %.1fs\n",
		out, p.HParams.Arch, p.Arch.Name, len(p.Tensors), modelinfo.Count(params), strings.ToLower(o.DType.String()), time.Since(start).Seconds())
	return nil
}

// synthProgress tells how much of a large model (64 MiB or more) is
// written: on a terminal one line rewritten at most once a second; into a
// file or a pipe (a log) a plain line at each quarter, never a \r.
func synthProgress(w io.Writer, tty bool) func(done, total int64) {
	var last time.Time
	quarter := 0
	return func(done, total int64) {
		if total < 64<<20 {
			return
		}
		if !tty {
			if q := int(4 * min(done, total) / total); q > quarter {
				quarter = q
				fmt.Fprintf(w, "synth: %d%% of %s\n", 25*q, modelinfo.Bytes(total))
			}
			return
		}
		if time.Since(last) < time.Second && done < total {
			return
		}
		last = time.Now()
		fmt.Fprintf(w, "\rsynth: %5.1f%% of %s", 100*float64(done)/float64(total), modelinfo.Bytes(total))
		if done == total {
			fmt.Fprintln(w)
		}
	}
}
