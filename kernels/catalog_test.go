package kernels

import (
	"errors"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/specs/chips"
)

func tuning(t *testing.T, chip string) chips.Tuning {
	t.Helper()
	p, err := chips.Resolve(chip, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p.Tuning()
}

func TestEveryWeightTypeTheCompilerAcceptsHasItsKernels(t *testing.T) {
	for _, dt := range []dtype.Type{dtype.F32, dtype.F16, dtype.BF16, dtype.Q4_0, dtype.Q4_1, dtype.Q5_0,
		dtype.Q5_1, dtype.Q8_0, dtype.Q4_K, dtype.Q5_K, dtype.Q6_K} {
		if !Supported(dt) {
			t.Errorf("%v is not supported", dt)
		}
		for _, act := range []dtype.Type{dtype.F16, dtype.F32} {
			for _, n := range []string{
				GEMVName(dt, 0, act), GEMVName(dt, SiLU, act), GEMMName(dt, false, act),
				GEMMName(dt, true, act), EmbeddingName(dt, act),
			} {
				if _, ok := Lookup(n); !ok {
					t.Errorf("%v, %v activations: no %s", dt, act, n)
				}
			}
		}
		if _, ok := Lookup(GEMVName(dt, Wide, dtype.F16)); !ok {
			t.Errorf("%v: no wide GEMV: a large-vocabulary LM head in %v could not compile", dt, dt)
		}
	}
	if got := WeightTypes(); len(got) != 15 {
		t.Errorf("WeightTypes() = %v", got)
	}
}

func TestATypeWithoutAKernelIsACompileErrorNamingTheTypeAndTheOp(t *testing.T) {
	if Supported(dtype.IQ2_XS) {
		t.Fatal("IQ2_XS supported")
	}
	_, err := Find(Spec{Op: OpGEMV, DType: dtype.IQ2_XS, Act: dtype.F16})
	if !errors.Is(err, ErrNoKernel) {
		t.Fatalf("error %v does not wrap ErrNoKernel", err)
	}
	for _, want := range []string{"gemv_iq2_xs", "gemv", "IQ2_XS", "Q4_K"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}

func TestTheLargeKVariantExistsForEveryTypeTheGPUTuningAppliesItToThatHasAGEMV(t *testing.T) {
	tu := tuning(t, "m4-max")
	for _, name := range tu.LargeKTypes {
		dt, err := dtype.Parse(name)
		if err != nil {
			t.Fatal(err)
		}
		if !Supported(dt) {
			continue // no GEMV at all: the compiler refuses the type
		}
		if _, err := Find(Spec{Op: OpGEMV, DType: dt, Variant: LargeK, Act: dtype.F16}); err != nil {
			t.Error(err)
		}
	}
}

func TestSelectGEMVFollowsTheChipsTuning(t *testing.T) {
	max, m1, cpu := tuning(t, "m4-max"), tuning(t, "m1"), tuning(t, "cpu-avx2:8")
	for _, tc := range []struct {
		name  string
		t     chips.Tuning
		dt    dtype.Type
		n, k  int
		silu  bool
		act   dtype.Type
		want  string
		noKer bool
	}{
		{"a large chip splits long Q4 rows", max, dtype.Q4_0, 4096, 4096, false, dtype.F16, "gemv_q4_0_l", false},
		{"a small chip does not at the same K", m1, dtype.Q4_0, 4096, 1024, false, dtype.F16, "gemv_q4_0", false},
		{"Q6_K has no large-K form and needs none", max, dtype.Q6_K, 4096, 14336, false, dtype.F16, "gemv_q6_k", false},
		{"the down projection fuses SiLU with large-K", max, dtype.Q4_K, 4096, 14336, true, dtype.F16, "gemv_q4_k_l_silu", false},
		{"a large vocabulary takes the wide GEMV", m1, dtype.Q6_K, 151936, 1024, false, dtype.F16, "gemv_wide_q6_k", false},
		{"the CPU takes the F32 twin", cpu, dtype.Q4_0, 4096, 4096, false, dtype.F32, "gemv_q4_0_f32", false},
		{"wide has no fused SiLU form", m1, dtype.Q8_0, 65536, 1024, true, dtype.F16, "gemv_wide_q8_0_silu", true},
		{"IQ4_NL is large-K in the tuning", max, dtype.IQ4_NL, 4096, 4096, false, dtype.F16, "gemv_iq4_nl_l", false},
		{"Q3_K has no large-K form", max, dtype.Q3_K, 4096, 4096, false, dtype.F16, "gemv_q3_k", false},
		{"a grid I-quant has no GEMV", m1, dtype.IQ2_XS, 4096, 4096, false, dtype.F16, "gemv_iq2_xs", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := SelectGEMV(tc.t, tc.dt, tc.n, tc.k, tc.silu, tc.act)
			if tc.noKer {
				if !errors.Is(err, ErrNoKernel) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("got %v, %v; want ErrNoKernel naming %s", k, err, tc.want)
				}
				return
			}
			if err != nil || k.Name != tc.want {
				t.Errorf("got %v, %v; want %s", k, err, tc.want)
			}
		})
	}
}

func TestSelectAttentionFollowsTheChipsTuning(t *testing.T) {
	max, cpu := tuning(t, "m4-max"), tuning(t, "cpu-avx2:8")
	for _, tc := range []struct {
		got  func() (*Kernel, error)
		want string
	}{
		{func() (*Kernel, error) { return SelectDecodeAttention(max, 16, dtype.F16) }, "flash_attention_decode_f16"},
		{func() (*Kernel, error) { return SelectDecodeAttention(max, 512, dtype.F16) }, "flash_attention_decode_fast_f16"},
		{func() (*Kernel, error) { return SelectDecodeAttention(max, 8192, dtype.F16) }, "flash_attention_decode_parallel_f16"},
		{func() (*Kernel, error) { return SelectDecodeAttention(cpu, 8192, dtype.F32) }, "flash_attention_decode_f32"},
		{func() (*Kernel, error) { return SelectPrefillAttention(max, 8, dtype.F16) }, "flash_attention_prefill_f16"},
		{func() (*Kernel, error) { return SelectPrefillAttention(max, 512, dtype.F16) }, "flash_attention_prefill_v2_f16"},
		{func() (*Kernel, error) { return SelectPrefillAttention(cpu, 512, dtype.F32) }, "flash_attention_prefill_f32"},
	} {
		k, err := tc.got()
		if err != nil || k.Name != tc.want {
			t.Errorf("got %v, %v; want %s", k, err, tc.want)
		}
	}
}

func TestEveryKernelHasAFullContract(t *testing.T) {
	for _, k := range All() {
		if k.Summary == "" || k.GeometryDoc == "" || k.geometry == nil || k.Params == nil {
			t.Errorf("%s: incomplete: %+v", k.Name, k)
		}
		if k.Params.Size%16 != 0 || k.ParamSlot != len(k.Bindings)-1 {
			t.Errorf("%s: params %s at slot %d of %d", k.Name, k.Params.Name, k.ParamSlot, len(k.Bindings))
		}
		writes := false
		for _, b := range k.Bindings {
			writes = writes || b.Access != Read
			if b.Doc == "" {
				t.Errorf("%s: binding %s undocumented", k.Name, b.Name)
			}
		}
		if !writes {
			t.Errorf("%s writes nothing", k.Name)
		}
		for role, off := range k.Patchable {
			if f, ok := fieldAt(k.Params, off); !ok || f.Patch != role {
				t.Errorf("%s: Patchable[%q] = %d names no such field", k.Name, role, off)
			}
		}
	}
}

func TestPatchableOffsetsAreTheFieldsOffsets(t *testing.T) {
	for name, want := range map[string]map[string]int{
		"flash_attention_decode_f16": {"kv_len": 16, "position": 24, "batch": 28},
		"rope_qkv_write_f16":         {"position": 0, "batch": 4},
		"embedding_lookup_q4_0":      {"token": 8, "batch": 12},
		"argmax_f16":                 {"out_slot": 4, "batch": 8},
		"rope_qkv_write_rows_f16":    {"position": 0, "batch": 4},
		"gather_rows_f32":            {"batch": 0},
		"gemv_q4_0":                  {},
		"simd_gemm_q4_0":             {"batch": 0},
		"gumbel_topk_f16":            {"position": 12},
		"pool_f16":                   {"batch": 4},
		"moe_route_f16":              {"batch": 8},
		"gemv_id_q4_k":               {"batch": 12},
		"gemm_id_q4_k":               {"batch": 12},
		"moe_sum_f32":                {"batch": 8},
	} {
		k, ok := Lookup(name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		if len(k.Patchable) != len(want) {
			t.Errorf("%s: %v, want %v", name, k.Patchable, want)
		}
		for r, off := range want {
			if k.Patchable[r] != off {
				t.Errorf("%s: Patchable[%q] = %d, want %d", name, r, k.Patchable[r], off)
			}
		}
	}
}

func TestCheckKernelRefusesAMalformedEntry(t *testing.T) {
	good, _ := Lookup("layernorm_f16")
	for _, tc := range []struct {
		what   string
		break_ func(k *Kernel)
		want   string
	}{
		{"a name off the convention", func(k *Kernel) { k.Name = "layer_norm_f16" }, "the convention names"},
		{"a binding under an unknown constant", func(k *Kernel) { k.Bindings[2].When = "has_gate" }, "not a bool constant"},
		{"constants out of order", func(k *Kernel) { k.Constants[0].Index = 3 }, "has index 3"},
		{"the params not last", func(k *Kernel) { k.ParamSlot = 0 }, "must be the last"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			k := *good
			k.Bindings = append([]Binding(nil), good.Bindings...)
			k.Constants = append([]Constant(nil), good.Constants...)
			tc.break_(&k)
			if err := checkKernel(&k); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
}
