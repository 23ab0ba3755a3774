package specs_test

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/specs"
)

// A small model of each built-in architecture, written as metadata by
// MetadataFor (the synthesizer's path) and resolved back. The golden file
// shows what a reviewer needs to see: the hparams, the tensor table and the
// program.
var goldenModels = []struct {
	arch    string
	values  map[string]int64
	floats  map[string]float64
	tensors []string // optional tensors the model has
}{
	{"llama", map[string]int64{"dim": 64, "layers": 2, "heads": 8, "kv_heads": 4, "ffn": 172, "vocab": 512, "ctx_train": 2048},
		map[string]float64{"norm_eps": 1e-5}, []string{"output.weight"}},
	{"qwen2", map[string]int64{"dim": 64, "layers": 2, "heads": 4, "kv_heads": 2, "ffn": 96, "vocab": 100, "ctx_train": 4096},
		map[string]float64{"norm_eps": 1e-6, "rope_base": 1e6}, nil},
	{"qwen3", map[string]int64{"dim": 64, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 32, "head_dim_v": 32, "ffn": 96, "vocab": 100, "ctx_train": 4096},
		map[string]float64{"norm_eps": 1e-6, "rope_base": 1e6}, nil},
	{"gemma", map[string]int64{"dim": 64, "layers": 2, "heads": 4, "kv_heads": 1, "head_dim": 32, "head_dim_v": 32, "ffn": 128, "vocab": 100, "ctx_train": 8192},
		map[string]float64{"norm_eps": 1e-6}, nil},
	{"gemma2", map[string]int64{"dim": 64, "layers": 4, "heads": 4, "kv_heads": 2, "head_dim": 16, "head_dim_v": 16, "ffn": 128, "vocab": 100, "ctx_train": 8192, "swa_window": 64},
		map[string]float64{"norm_eps": 1e-6}, nil},
	{"gemma3", map[string]int64{"dim": 64, "layers": 7, "heads": 4, "kv_heads": 1, "head_dim": 16, "head_dim_v": 16, "ffn": 128, "vocab": 100, "ctx_train": 32768, "swa_window": 32},
		map[string]float64{"norm_eps": 1e-6, "rope_base": 1e6, "rope_scaling_factor": 8, "final_softcap": 30}, nil},
	{"phi3", map[string]int64{"dim": 64, "layers": 2, "heads": 4, "kv_heads": 4, "ffn": 96, "vocab": 100, "ctx_train": 131072, "rope_orig_ctx": 4096},
		map[string]float64{"norm_eps": 1e-5, "rope_base": 10000},
		[]string{"output.weight", "rope_factors_long.weight", "rope_factors_short.weight"}},
}

func TestBuiltinSpecsResolveSynthesizedModels(t *testing.T) {
	for _, m := range goldenModels {
		t.Run(m.arch, func(t *testing.T) {
			a, err := builtin(t).ForArchitecture(m.arch)
			if err != nil {
				t.Fatal(err)
			}
			values := map[string]specs.Value{}
			for k, v := range m.values {
				values[k] = specs.IntValue(v)
			}
			for k, v := range m.floats {
				values[k] = specs.FloatValue(v)
			}
			if m.arch == "gemma3" {
				values["rope_scaling"] = specs.StringValue("linear")
			}
			kv, err := a.MetadataFor(m.arch, values)
			if err != nil {
				t.Fatal(err)
			}
			hp, err := a.Resolve(specs.NewMapMetadata(kv, m.tensors...))
			if err != nil {
				t.Fatal(err)
			}
			for name, v := range values {
				got, ok := hp.Values[name]
				if name == "vocab" {
					got, ok = specs.IntValue(int64(hp.Vocab)), true
				}
				if !ok || got.String() != v.String() && got.AsFloat() != v.AsFloat() {
					t.Errorf("%s: wrote %v, resolved %v", name, v, got)
				}
			}
			ts, err := a.Tensors(hp)
			if err != nil {
				t.Fatal(err)
			}
			p, err := a.Program(hp)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "golden", m.arch+".txt"), render(a, kv, hp, ts, p))
		})
	}
}

func render(a *specs.Arch, kv map[string]specs.Value, hp *specs.HParams, ts []specs.Tensor, p *specs.Program) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# spec %s (%s), rope %s\n\n## metadata\n", a.Name, strings.Join(a.Chain, " < "), a.RopeStyle())
	for _, k := range sortedKeys(kv) {
		fmt.Fprintf(&b, "%s = %v\n", k, kv[k])
	}
	fmt.Fprintf(&b, "\n## hparams\n")
	fmt.Fprintf(&b, "dim %d, layers %d, heads %d/%d, head_dim %d/%d, ffn %d, vocab %d, ctx %d\n",
		hp.Dim, hp.Layers, hp.Heads, hp.KVHeads, hp.HeadDim, hp.HeadDimV, hp.FFN, hp.Vocab, hp.CtxTrain)
	fmt.Fprintf(&b, "norm %s eps %g; rope %s base %g (swa %g) dim %d scaling %+v\n",
		hp.NormKind, hp.NormEps, hp.RopeStyle, hp.RopeBase, hp.RopeBaseSWA, hp.RopeDim, hp.RopeScaling)
	fmt.Fprintf(&b, "window %d sliding %v; softcap %g/%g; embed scale %g; attn scale %g; tied %v\n",
		hp.SlidingWindow, hp.SlidingLayers, hp.AttnSoftcap, hp.FinalSoftcap, hp.EmbedScale, hp.AttnScale, hp.TiedOutput)
	for _, k := range sortedKeys(hp.Values) {
		fmt.Fprintf(&b, "  %s = %v\n", k, hp.Values[k])
	}
	for _, k := range sortedKeys(hp.LayerValues) {
		fmt.Fprintf(&b, "  %s = %v\n", k, hp.LayerValues[k])
	}
	fmt.Fprintf(&b, "\n## tensors\n")
	for _, t := range ts {
		flags := ""
		if t.Optional {
			flags = " optional"
			if !t.Present {
				flags += " absent"
			}
			if t.Fallback != "" {
				flags += " -> " + t.Fallback
			}
		}
		dims := make([]string, len(t.Shape))
		for i, d := range t.Shape {
			dims[i] = fmt.Sprint(d)
		}
		fmt.Fprintf(&b, "%-32s %-14s %-12s %s%s\n", t.Name, t.Logical, "["+strings.Join(dims, ", ")+"]", t.Role, flags)
	}
	fmt.Fprintf(&b, "\n## program\n%s", p)
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
