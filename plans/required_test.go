package plans

import "testing"

// TestRequiredRuntimeNamesTheNewestFeature: each feature a format added
// raises a plan's minimum runtime to that format, and only that feature
// (format 10's and 11's, which a plan for an NVIDIA chip uses).
func TestRequiredRuntimeNamesTheNewestFeature(t *testing.T) {
	withKernel := func(k string) *Plan { return &Plan{Pipelines: []Pipeline{{Kernel: k}}} }
	withRecipe := func(r string) *Plan { return &Plan{Buffers: []Buffer{{Recipe: RecipeRepackPrefix + r}}} }
	preload := &Plan{}
	preload.Header.Target.Tuning.GEMVPreloadMaxK = 3072
	int8 := &Plan{}
	int8.Header.Target.Tuning.Int8GEMV = true
	for _, tc := range []struct {
		name string
		p    *Plan
		want uint32
	}{
		{"nothing new", &Plan{}, 1},
		{"a plain GEMV", withKernel("gemv_q4_0"), 1},
		{"a planar GEMV's weights", withRecipe("q4_0_planar"), 10},
		{"a norm-folded GEMV", withKernel("gemv_q4_0_planar_norm"), 11},
		{"a residual GEMV", withKernel("gemv_q4_0_planar_res"), 11},
		{"gate and up rows interleaved", withRecipe("q4_0_planar_pairs"), 11},
		{"Q6_K in planes", withRecipe("q6_k_planar"), 11},
		{"the attention rotating q and k", withKernel("flash_attention_decode_rope_neox_norm_f16"), 11},
		{"the plain parallel attention", withKernel("flash_attention_decode_parallel_f16"), 1},
		{"GEMVs preloading their weights", preload, 11},
		{"8-bit GEMV activations", int8, 9},
	} {
		if got := tc.p.RequiredRuntime(); got != tc.want {
			t.Errorf("%s: runtime %d, want %d", tc.name, got, tc.want)
		}
	}
}
