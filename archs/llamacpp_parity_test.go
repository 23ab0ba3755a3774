package archs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/compiler/synth"
	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/specs"
)

// parityCase is a model whose hyperparameters, as our spec resolves them,
// must be llama.cpp's for the same file.
type parityCase struct {
	name string
	file string         // a model in ../shared/models, or
	o    *synth.Options // a synthetic one
}

// hparamSet turns int and float64 values into the Set of synth.Options.
func hparamSet(kv map[string]any) map[string]specs.Value {
	m := map[string]specs.Value{}
	for k, v := range kv {
		switch v := v.(type) {
		case int:
			m[k] = specs.IntValue(int64(v))
		case float64:
			m[k] = specs.FloatValue(v)
		default:
			panic(fmt.Sprintf("hparam %s: %T", k, v))
		}
	}
	return m
}

// parityCases cover every spec with the shapes where a spec could go wrong
// quietly: KV heads fewer than heads, a head size other than dim / heads,
// FFN widths that are not multiples of 32 (F32 allows any), RoPE bases and
// epsilons other than the defaults, and each sliding-window rule.
var parityCases = []parityCase{
	{name: "stories260K (llama, 8 heads over 4 KV heads, FFN 172)", file: "stories260K.gguf"},
	{name: "a llama with grouped KV heads, an odd FFN and Llama 3's RoPE base", o: &synth.Options{
		Arch: "llama", Dim: 64, Layers: 3, Heads: 4, KVHeads: 2, FFN: 172,
		Set: hparamSet(map[string]any{"rope_base": 500000.0, "norm_eps": 1e-6}),
	}},
	{name: "a llama whose head size is not dim / heads", o: &synth.Options{
		Arch: "llama", Dim: 96, Layers: 2, Heads: 4, KVHeads: 1, HeadDim: 40, FFN: 200,
	}},
	{name: "a qwen2 with one KV head and Qwen's RoPE base", o: &synth.Options{
		Arch: "qwen2", Dim: 128, Layers: 2, Heads: 4, KVHeads: 1, FFN: 300,
		Set: hparamSet(map[string]any{"rope_base": 1000000.0, "norm_eps": 1e-6}),
	}},
	{name: "a qwen3 whose head size is twice dim / heads", o: &synth.Options{
		Arch: "qwen3", Dim: 128, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 232,
		Set: hparamSet(map[string]any{"rope_base": 1000000.0, "norm_eps": 1e-6}),
	}},
	{name: "a gemma with Gemma 7B's wide heads", o: &synth.Options{
		Arch: "gemma", Dim: 96, Layers: 2, Heads: 2, KVHeads: 1, HeadDim: 64, FFN: 260, Tied: true,
		Set: hparamSet(map[string]any{"norm_eps": 1e-6}),
	}},
	{name: "a gemma2 alternates sliding and global layers", o: &synth.Options{
		Arch: "gemma2", Dim: 128, Layers: 5, Heads: 4, KVHeads: 2, HeadDim: 48, FFN: 300, Tied: true,
		Set: hparamSet(map[string]any{"swa_window": 256, "norm_eps": 1e-6}),
	}},
	{name: "a gemma2 without window or SWA base keys takes 4096 and the global base", o: &synth.Options{
		Arch: "gemma2", Dim: 64, Layers: 4, Heads: 2, FFN: 100, Tied: true,
		Set: hparamSet(map[string]any{"rope_base": 1000000.0}),
	}},
	{name: "a gemma2 with a sliding pattern of 3", o: &synth.Options{
		Arch: "gemma2", Dim: 64, Layers: 6, Heads: 2, FFN: 100, Tied: true,
		Set: hparamSet(map[string]any{"swa_window": 128, "swa_pattern": 3}),
	}},
	{name: "a gemma3 of 7 layers has its sixth layer global", o: &synth.Options{
		Arch: "gemma3", Dim: 128, Layers: 7, Heads: 4, KVHeads: 1, HeadDim: 64, FFN: 300, Tied: true,
		Set: hparamSet(map[string]any{"swa_window": 512, "rope_base": 1000000.0, "norm_eps": 1e-6}),
	}},
	{name: "a gemma3 of 12 layers with its own SWA RoPE base", o: &synth.Options{
		Arch: "gemma3", Dim: 64, Layers: 12, Heads: 2, FFN: 100,
		Set: hparamSet(map[string]any{"swa_window": 64, "rope_base": 1000000.0, "rope_base_swa": 20000.0}),
	}},
	{name: "a gemma3 with a sliding pattern of 4", o: &synth.Options{
		Arch: "gemma3", Dim: 64, Layers: 9, Heads: 2, FFN: 100, Tied: true,
		Set: hparamSet(map[string]any{"swa_window": 32, "swa_pattern": 4}),
	}},
	{name: "a gemma3 without a window has no sliding layers", o: &synth.Options{
		Arch: "gemma3", Dim: 64, Layers: 7, Heads: 2, FFN: 100, Tied: true,
	}},
	{name: "a bert with mean pooling and BERT's epsilon", o: &synth.Options{
		Arch: "bert", Dim: 64, Layers: 2, Heads: 4, FFN: 200,
		Set: hparamSet(map[string]any{"pooling": 1, "norm_eps": 1e-12}),
	}},
	{name: "a qwen3moe of 8 experts, 2 used, an expert FFN of its own", o: &synth.Options{
		Arch: "qwen3moe", Dim: 128, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 256,
		Set: hparamSet(map[string]any{"expert_count": 8, "expert_used": 2, "expert_ffn": 96, "norm_eps": 1e-6}),
	}},
	{name: "a Mixtral-style llama with 4 experts, 2 used", o: &synth.Options{
		Arch: "llama", Dim: 128, Layers: 2, Heads: 4, KVHeads: 2, FFN: 160,
		Set: hparamSet(map[string]any{"expert_count": 4, "expert_used": 2}),
	}},
	{name: "a phi3 with grouped KV heads and an odd FFN", o: &synth.Options{
		Arch: "phi3", Dim: 128, Layers: 2, Heads: 4, KVHeads: 2, FFN: 344,
		Set: hparamSet(map[string]any{"rope_base": 10000.0, "norm_eps": 1e-5}),
	}},
}

// TestResolvedHParamsMatchLlamaCpp holds every spec to llama.cpp: for the
// same file, the hyperparameters our spec resolves are the ones llama.cpp
// loads (read from its log: see llamacpp.LoadModelInfo).
func TestResolvedHParamsMatchLlamaCpp(t *testing.T) {
	lib := llamacpp.Require(t)
	reg, err := specs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, tc := range parityCases {
		if tc.o != nil {
			covered[tc.o.Arch] = true
		}
		t.Run(tc.name, func(t *testing.T) {
			path := tc.model(t, reg)
			ours := resolveFile(t, reg, path)
			theirs, err := lib.LoadModelInfo(path)
			if err != nil {
				t.Fatal(err)
			}
			var table strings.Builder
			for _, f := range compareHParams(ours, theirs) {
				mark := " "
				if f.ours != f.theirs {
					mark = "≠"
					t.Errorf("%s: ours %s, llama.cpp %s", f.name, f.ours, f.theirs)
				}
				fmt.Fprintf(&table, "\n%s %-28s %-40s %s", mark, f.name, f.ours, f.theirs)
			}
			t.Logf("  %-28s %-40s %s%s", "field", "ours", "llama.cpp", table.String())
		})
	}
	for _, name := range reg.Names() {
		if !covered[name] {
			t.Errorf("spec %s has no parity case", name)
		}
	}
}

func (tc parityCase) model(t *testing.T, reg *specs.Registry) string {
	t.Helper()
	if tc.file != "" {
		path, err := llamacpp.SharedPath("models", tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("the reference model is missing: %v", err)
		}
		return path
	}
	o := *tc.o
	o.DType, o.Seed = dtype.F32, 1
	p, err := synth.Build(reg, o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), o.Arch+".gguf")
	if err := p.Write(path, o.Seed); err != nil {
		t.Fatal(err)
	}
	return path
}

// resolveFile reads the file's header the way the compiler does.
func resolveFile(t *testing.T, reg *specs.Registry, path string) *specs.HParams {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	md := specs.GGUFMetadata(f)
	v, _ := md.Lookup("general.architecture")
	arch, err := reg.ForArchitecture(v.Str)
	if err != nil {
		t.Fatal(err)
	}
	hp, err := arch.Resolve(md)
	if err != nil {
		t.Fatal(err)
	}
	return hp
}

type fieldPair struct{ name, ours, theirs string }

// compareHParams renders each field both ways. Reals are rendered as
// llama.cpp prints them (%.1f for RoPE bases, %.1e for epsilons), which is
// all the precision the log carries.
func compareHParams(h *specs.HParams, m *llamacpp.ModelInfo) []fieldPair {
	perLayer := func(x int) string {
		xs := make([]int, h.Layers)
		for i := range xs {
			xs[i] = x
		}
		return fmt.Sprint(xs)
	}
	layers := func(xs []int) string {
		if len(xs) > m.Layers {
			xs = xs[:m.Layers]
		}
		return fmt.Sprint(xs)
	}
	d := func(x int) string { return fmt.Sprint(x) }
	eps, theirEps := h.NormEps, m.NormRMSEps
	if h.NormKind == specs.NormLayer {
		theirEps = m.NormEps
	}
	theirStyle := ropeStyle(m.RopeType)
	if h.RopeStyle == specs.RopeNone {
		// A spec that rotates nothing (BERT) has no style to agree on;
		// llama.cpp reports one anyway (NeoX for bert, which its
		// nomic-bert sibling uses).
		theirStyle = string(specs.RopeNone)
	}
	pairs := []fieldPair{
		{"embedding length", d(h.Dim), d(m.Embd)},
		{"layers", d(h.Layers), d(m.Layers)},
		{"heads per layer", perLayer(h.Heads), layers(m.Heads)},
		{"KV heads per layer", perLayer(h.KVHeads), layers(m.HeadsKV)},
		{"head dim of keys", d(h.HeadDim), d(m.HeadDimK)},
		{"head dim of values", d(h.HeadDimV), d(m.HeadDimV)},
		{"FFN per layer", perLayer(h.FFN), layers(m.FFN)},
		{"vocab size", d(h.Vocab), d(m.Vocab)},
		{"training context", d(h.CtxTrain), d(m.CtxTrain)},
		{"RoPE style", string(h.RopeStyle), theirStyle},
		{"RoPE dims", d(h.RopeDim), d(m.Rot)},
		{"RoPE base", fmt.Sprintf("%.1f", h.RopeBase), fmt.Sprintf("%.1f", m.FreqBase)},
		{"norm eps (" + string(h.NormKind) + ")", fmt.Sprintf("%.1e", eps), fmt.Sprintf("%.1e", theirEps)},
		{"sliding window", d(h.SlidingWindow), d(m.SWA)},
		{"sliding layers", fmt.Sprint(h.SlidingLayers), fmt.Sprint(m.IsSWA[:m.Layers])},
	}
	if m.HasSWA {
		pairs = append(pairs, fieldPair{"RoPE base of sliding layers", fmt.Sprintf("%.1f", h.RopeBaseSWA), fmt.Sprintf("%.1f", m.FreqBaseSWA)})
	}
	return pairs
}

// ropeStyle names llama.cpp's rope type as our specs do.
func ropeStyle(t int) string {
	switch t {
	case llamacpp.RopeTypeNone:
		return string(specs.RopeNone)
	case llamacpp.RopeTypeNorm:
		return string(specs.RopeInterleaved)
	case llamacpp.RopeTypeNeoX:
		return string(specs.RopeNeox)
	}
	return fmt.Sprintf("llama.cpp rope type %d (no spec equivalent)", t)
}
