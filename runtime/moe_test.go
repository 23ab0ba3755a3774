package runtime

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/synth"
	"github.com/akunu-dev/akunu/specs"
)

// synthMoE writes a small mixture-of-experts model: a qwen3moe (8 experts,
// 2 used, an expert FFN narrower than the dense one) or a Mixtral-style
// llama (4 experts, 2 used).
func synthMoE(t testing.TB, arch string, dt dtype.Type) string {
	t.Helper()
	reg, err := specs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	o := synth.Options{Arch: arch, Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 512, CtxTrain: 256, DType: dt, Seed: 13, Tied: true}
	set := map[string]int64{"expert_count": 8, "expert_used": 2, "expert_ffn": 256}
	if arch == "llama" {
		set = map[string]int64{"expert_count": 4, "expert_used": 2}
	}
	o.Set = map[string]specs.Value{}
	for k, v := range set {
		o.Set[k] = specs.IntValue(v)
	}
	sp, err := synth.Build(reg, o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("%s-moe-%v.gguf", arch, dt))
	if err := sp.Write(path, o.Seed); err != nil {
		t.Fatal(err)
	}
	return path
}

// Mixture-of-experts models against llama.cpp: greedy tokens and per-step
// logits (the prompt goes through the batch programs, rows routed to
// different experts; decode through the one-row ones), under the parity
// rule and tolerances of the dense models.
func TestMoEParityWithLlamaCpp(t *testing.T) {
	for _, arch := range []string{"qwen3moe", "llama"} {
		for _, dt := range []dtype.Type{dtype.F16, dtype.Q8_0, dtype.Q4_0, dtype.Q4_K} {
			t.Run(fmt.Sprintf("%s %v", arch, dt), func(t *testing.T) {
				model := synthMoE(t, arch, dt)
				plan := compile(t, model, "cpu-avx2:2")
				steps, d := parity(t, plan, model, "Hello world, this is a test of the experts", 32, parityTol[dt])
				t.Logf("%s MoE %v: %d steps, max |Δ|/max|logit| = %.2g", arch, dt, steps, d)
			})
		}
	}
}
