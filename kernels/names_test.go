package kernels

import (
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/specs/chips"
)

// The names the akunu engine gives its kernels; the plans name pipelines by
// them, so the convention must reproduce each one.
var engineNames = []string{
	"gemv_f16", "gemv_q4_0", "gemv_q4_0_l", "gemv_wide_q4_0", "gemv_q8_0", "gemv_q4_k", "gemv_q6_k",
	"gemv_q4_0_silu", "simd_gemm_q4_0", "simd_gemm_small_q4_0", "simd_gemm_f16", "simd_gemm_small_q6_k",
	"rope_qkv_write_f16", "rope_neox_qkv_write_f16", "head_norm_rope_neox_kv_write_f16",
	"flash_attention_decode_f16", "flash_attention_decode_fast_f16", "flash_attention_decode_parallel_f16",
	"flash_attention_prefill_f16", "flash_attention_prefill_v2_f16",
	"rmsnorm_f16", "residual_rmsnorm_f16", "embedding_lookup_q4_0", "embedding_lookup_q6_k",
	"silu_gate_f16", "gelu_gate_f16", "argmax_f16", "gumbel_topk_f16",
}

func TestTheEngineKernelsAreInTheCatalog(t *testing.T) {
	for _, n := range engineNames {
		if _, ok := Lookup(n); !ok {
			t.Errorf("no kernel %s", n)
		}
	}
}

func TestTheConventionSpellsEachSpecOneWay(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Op: OpGEMV, DType: dtype.F16, Act: dtype.F16}, "gemv_f16"},
		{Spec{Op: OpGEMV, DType: dtype.Q4_0, Variant: LargeK, Act: dtype.F16}, "gemv_q4_0_l"},
		{Spec{Op: OpGEMV, DType: dtype.Q4_0, Variant: LargeK | SiLU, Act: dtype.F16}, "gemv_q4_0_l_silu"},
		{Spec{Op: OpGEMV, DType: dtype.Q6_K, Variant: Wide, Act: dtype.F16}, "gemv_wide_q6_k"},
		{Spec{Op: OpGEMV, DType: dtype.Q4_K, Variant: SiLU, Act: dtype.F32}, "gemv_q4_k_silu_f32"},
		{Spec{Op: OpGEMV, DType: dtype.IQ2_XS, Act: dtype.F16}, "gemv_iq2_xs"},
		{Spec{Op: OpGEMM, DType: dtype.BF16, Variant: Small, Act: dtype.F32}, "simd_gemm_small_bf16_f32"},
		{Spec{Op: OpEmbedding, DType: dtype.Q8_0, Act: dtype.F32}, "embedding_lookup_q8_0_f32"},
		{Spec{Op: OpConvert, DType: dtype.F32, Act: dtype.F16}, "convert_f16_to_f32"},
		{Spec{Op: OpRMSNorm, DType: dtype.Q4_0, Act: dtype.F32}, "rmsnorm_f32"}, // DType ignored
		{Spec{Op: OpLayerNorm, Variant: Residual, Act: dtype.F16}, "residual_layernorm_f16"},
		{Spec{Op: OpRoPE, Variant: NeoX, Act: dtype.F16}, "rope_neox_f16"},
		{Spec{Op: OpAttentionDecodeReduce, Act: dtype.F16}, "flash_attention_decode_reduce_f16"},
		{Spec{Op: OpSoftcap, Act: dtype.F32}, "softcap_f32"},
		{Spec{Op: OpPool, Act: dtype.F32}, "pool_f32"},
		{Spec{Op: OpMoERoute, Act: dtype.F16}, "moe_route_f16"},
		{Spec{Op: OpGEMVID, DType: dtype.Q4_K, Act: dtype.F16}, "gemv_id_q4_k"},
		{Spec{Op: OpGEMVID, DType: dtype.Q8_0, Act: dtype.F32}, "gemv_id_q8_0_f32"},
		{Spec{Op: OpGEMMID, DType: dtype.Q4_0, Act: dtype.F16}, "gemm_id_q4_0"},
		{Spec{Op: OpGEMMID, DType: dtype.Q6_K, Act: dtype.F32}, "gemm_id_q6_k_f32"},
		{Spec{Op: OpMoESum, Act: dtype.F32}, "moe_sum_f32"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			got, err := tc.spec.Name()
			if err != nil || got != tc.want {
				t.Errorf("%+v: %q, %v", tc.spec, got, err)
			}
		})
	}
}

func TestTheConventionRefusesSpecsNoKernelCanHave(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Op: OpGEMV, DType: dtype.Q4_0, Act: dtype.Q8_0}, "activations are F16 or F32"},
		{Spec{Op: OpGEMV, DType: dtype.Q4_0, Variant: NeoX, Act: dtype.F16}, "no neox variant"},
		{Spec{Op: OpGEMV, DType: dtype.Q4_0, Variant: LargeK | Wide, Act: dtype.F16}, "exclude each other"},
		{Spec{Op: OpAttentionDecode, Variant: Fast | Parallel, Act: dtype.F16}, "exclude each other"},
		{Spec{Op: OpGEMV, DType: dtype.Type(4), Act: dtype.F16}, "unknown GGML type"},
		{Spec{Act: dtype.F16}, "invalid op"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := tc.spec.Name()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%+v: %v, want %q", tc.spec, err, tc.want)
			}
		})
	}
}

func TestTheNameHelpersFollowTheConvention(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{GEMVName(dtype.Q4_0, 0, dtype.F16), "gemv_q4_0"},
		{GEMVName(dtype.Q4_0, LargeK|SiLU, dtype.F16), "gemv_q4_0_l_silu"},
		{GEMVName(dtype.Q4_0, 0, dtype.F32), "gemv_q4_0_f32"},
		{GEMVName(dtype.Q4_0, 0, dtype.Q4_0), ""},
		{GEMMName(dtype.Q5_K, true, dtype.F16), "simd_gemm_small_q5_k"},
		{GEMMName(dtype.Q5_K, false, dtype.F32), "simd_gemm_q5_k_f32"},
		{EmbeddingName(dtype.Q6_K, dtype.F16), "embedding_lookup_q6_k"},
		{OpName(OpRMSNorm, Residual, dtype.F16), "residual_rmsnorm_f16"},
		{OpName(OpAttentionPrefill, V2, dtype.F16), "flash_attention_prefill_v2_f16"},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
}

func TestTuningVariantsMapToFlags(t *testing.T) {
	for in, want := range map[chips.GEMVVariant]Variant{chips.GEMVStandard: 0, chips.GEMVLargeK: LargeK, chips.GEMVWide: Wide} {
		if got, err := GEMVVariant(in); err != nil || got != want {
			t.Errorf("%s: %v, %v", in, got, err)
		}
	}
	for in, want := range map[chips.AttnVariant]Variant{chips.AttnStandard: 0, chips.AttnFast: Fast, chips.AttnParallel: Parallel, chips.AttnV1: 0, chips.AttnV2: V2} {
		if got, err := AttentionVariant(in); err != nil || got != want {
			t.Errorf("%s: %v, %v", in, got, err)
		}
	}
	if _, err := GEMVVariant("tall"); err == nil {
		t.Error("unknown GEMV variant accepted")
	}
	if _, err := AttentionVariant("tall"); err == nil {
		t.Error("unknown attention variant accepted")
	}
}

func TestVariantsPrintTheirFlags(t *testing.T) {
	if got := (LargeK | SiLU).String(); got != "large_k+silu" {
		t.Error(got)
	}
	if got := Variant(0).String(); got != "standard" {
		t.Error(got)
	}
}
