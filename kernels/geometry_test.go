package kernels

import (
	"reflect"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/specs/chips"
)

// shapes of real models, decode and prefill: Llama 3 8B (GQA, head 128,
// vocab 128k), Gemma 2 9B (head 256, soft-capping, window), Qwen 3 0.6B
// (head 128, vocab 152k; last-token pooling, normalized, as
// Qwen3-Embedding) and stories260K (dim 64). The pooling modes of the
// others are what an embedding program of their shape could ask; their
// experts are Mixtral's (8, 2 a token) on the Llama shape, Qwen3-30B-A3B's
// (128, 8) on the Qwen shape, and what a MoE of the others' shapes could
// have (32 of 4; 4 of 1).
var modelShapes = map[string]Shape{
	"llama3-8b": {N: 4096, K: 4096, Dim: 4096, Vocab: 128256, Heads: 32, KVHeads: 8, HeadDim: 128, HeadDimV: 128, MaxCtx: 8192,
		Pooling: PoolMean, Normalize: true, Experts: 8, Slots: 2},
	"gemma2-9b": {N: 3584, K: 14336, Dim: 3584, Vocab: 256000, Heads: 16, KVHeads: 8, HeadDim: 256, HeadDimV: 256, MaxCtx: 8192,
		Softcap: true, Window: true, Bias: true, Factors: true, Pooling: PoolCLS, Experts: 32, Slots: 4},
	"qwen3-0.6b": {N: 151936, K: 1024, Dim: 1024, Vocab: 151936, Heads: 16, KVHeads: 8, HeadDim: 128, HeadDimV: 128, MaxCtx: 40960,
		Pooling: PoolLast, Normalize: true, Experts: 128, Slots: 8},
	"stories260K": {N: 64, K: 64, Dim: 64, Vocab: 512, Heads: 8, KVHeads: 4, HeadDim: 8, HeadDimV: 8, MaxCtx: 512, Pooling: PoolMean,
		Experts: 4, Slots: 1},
}

// Every kernel sizes a command of every model, decode and prefill, within
// the limits, with a value for each of its constants.
func TestEveryKernelHasALaunchForEveryModelShape(t *testing.T) {
	tunings := map[string]bool{"m1": true, "m4-max": true, "cpu-neon:4": true}
	for chip := range tunings {
		tu := tuning(t, chip)
		for model, s := range modelShapes {
			for _, tokens := range []int{1, 8, 512} {
				s := s
				s.Tokens = tokens
				for _, k := range All() {
					if k.Variant&Small != 0 && tokens > 8 || k.Op == OpGEMM && k.Variant&Small == 0 && tokens == 1 {
						continue
					}
					if k.DType.BlockSize() == 256 && (s.K%256 != 0 || s.Dim%256 != 0) {
						continue // stories260K's dim 64 cannot hold K-quant blocks
					}
					l, err := k.Geometry(s, tu)
					if err != nil {
						t.Errorf("%s, %s, %d tokens, %s: %v", chip, model, tokens, k.Name, err)
						continue
					}
					if len(l.Constants) != len(k.Constants) {
						t.Errorf("%s: %d constant values for %d constants", k.Name, len(l.Constants), len(k.Constants))
					}
					if l.TGMem%16 != 0 {
						t.Errorf("%s: threadgroup memory %d is not a multiple of 16", k.Name, l.TGMem)
					}
				}
			}
		}
	}
}

// A GEMV grid covers every output row exactly: no row without a thread, and
// less than one threadgroup of slack, whatever N, with the rows per
// threadgroup that the constants tell the kernel.
func TestGEMVGridsCoverEveryRowWithLessThanAThreadgroupToSpare(t *testing.T) {
	tu := tuning(t, "m4-max")
	for _, k := range All() {
		if k.Op != OpGEMV {
			continue
		}
		for _, n := range []int{1, 7, 64, 1000, 4096, 32769, 151936} {
			l, err := k.Geometry(Shape{N: n, K: 256 * 4}, tu)
			if err != nil {
				t.Fatal(err)
			}
			nr, nsg := int(l.Constants[0].Value), int(l.Constants[1].Value)
			if nsg*SIMDWidth != l.Threads() {
				t.Errorf("%s: nsg %d for %d threads", k.Name, nsg, l.Threads())
			}
			rows := nr * nsg
			if k.Variant&LargeK != 0 {
				rows = nr // the SIMD groups share the rows
			}
			if g := l.Grid[0]; g*rows < n || (g-1)*rows >= n {
				t.Errorf("%s, N=%d: %d threadgroups of %d rows", k.Name, n, g, rows)
			}
		}
	}
}

func TestLaunchesOfRepresentativeCommands(t *testing.T) {
	max := tuning(t, "m4-max")
	for _, tc := range []struct {
		kernel string
		shape  Shape
		want   Launch
	}{
		{"gemv_q4_0", Shape{N: 4096, K: 4096}, Launch{Grid: [3]int{512, 1, 1}, Threadgroup: [3]int{64, 1, 1},
			Constants: []ConstValue{{0, "nr", ConstUint, 4}, {1, "nsg", ConstUint, 2}, {2, "has_bias", ConstBool, 0}, {3, "vec_x", ConstBool, 0}}}},
		{"gemv_q4_0_l", Shape{N: 4096, K: 14336, Bias: true, VecX: true}, Launch{Grid: [3]int{1024, 1, 1}, Threadgroup: [3]int{128, 1, 1}, TGMem: 64,
			Constants: []ConstValue{{0, "nr", ConstUint, 4}, {1, "nsg", ConstUint, 4}, {2, "has_bias", ConstBool, 1}, {3, "vec_x", ConstBool, 1}}}},
		{"gemv_wide_q6_k", Shape{N: 151936, K: 1024}, Launch{Grid: [3]int{18992, 1, 1}, Threadgroup: [3]int{256, 1, 1},
			Constants: []ConstValue{{0, "nr", ConstUint, 1}, {1, "nsg", ConstUint, 8}, {2, "has_bias", ConstBool, 0}, {3, "vec_x", ConstBool, 0}}}},
		{"gemv_f16", Shape{N: 96, K: 1000, VecX: true}, Launch{Grid: [3]int{12, 1, 1}, Threadgroup: [3]int{64, 1, 1},
			Constants: []ConstValue{{0, "nr", ConstUint, 4}, {1, "nsg", ConstUint, 2}, {2, "has_bias", ConstBool, 0}, {3, "vec_x", ConstBool, 0}}}},
		{"simd_gemm_q4_k", Shape{Tokens: 512, N: 4096, K: 4096, VecX: true}, Launch{Grid: [3]int{64, 8, 1}, Threadgroup: [3]int{128, 1, 1}, TGMem: 18432,
			Constants: []ConstValue{{0, "has_bias", ConstBool, 0}, {1, "vec_x", ConstBool, 1}}}},
		// F32 activations: the CPU's GEMM, whose launch stays the one older
		// plans carry (32-row tiles, 12 KiB), so that they still load.
		{"simd_gemm_q4_0_f32", Shape{Tokens: 100, N: 96, K: 512, VecX: true}, Launch{Grid: [3]int{2, 4, 1}, Threadgroup: [3]int{128, 1, 1}, TGMem: 12288,
			Constants: []ConstValue{{0, "has_bias", ConstBool, 0}}}},
		{"simd_gemm_f16", Shape{Tokens: 9, N: 64, K: 36, VecX: true}, Launch{Grid: [3]int{1, 1, 1}, Threadgroup: [3]int{128, 1, 1}, TGMem: 18432,
			Constants: []ConstValue{{0, "has_bias", ConstBool, 0}, {1, "vec_x", ConstBool, 0}}}},
		{"simd_gemm_small_q8_0", Shape{Tokens: 5, N: 1000, K: 4096}, Launch{Grid: [3]int{32, 1, 1}, Threadgroup: [3]int{128, 1, 1},
			Constants: []ConstValue{{0, "has_bias", ConstBool, 0}, {1, "vec_x", ConstBool, 0}, {2, "cols", ConstUint, 8}}}},
		{"rmsnorm_f16", Shape{Tokens: 1, Dim: 4096}, Launch{Grid: [3]int{1, 1, 1}, Threadgroup: [3]int{1024, 1, 1}, TGMem: 128, Constants: []ConstValue{}}},
		{"rmsnorm_f16", Shape{Tokens: 3, Dim: 64}, Launch{Grid: [3]int{3, 1, 1}, Threadgroup: [3]int{64, 1, 1}, TGMem: 16, Constants: []ConstValue{}}},
		{"flash_attention_decode_parallel_f16", Shape{Heads: 32, KVHeads: 8, HeadDim: 128, HeadDimV: 128, MaxCtx: 8192},
			Launch{Grid: [3]int{32, 16, 1}, Threadgroup: [3]int{128, 1, 1}, TGMem: 2080, Constants: []ConstValue{
				{0, "head_dim", ConstUint, 128}, {1, "head_dim_v", ConstUint, 128}, {2, "has_softcap", ConstBool, 0},
				{3, "has_window", ConstBool, 0}, {4, "n_splits", ConstUint, 16}}}},
		{"flash_attention_prefill_v2_f16", Shape{Tokens: 512, Heads: 16, KVHeads: 8, HeadDim: 256, HeadDimV: 256, Softcap: true},
			Launch{Grid: [3]int{16, 16, 1}, Threadgroup: [3]int{128, 1, 1}, TGMem: 16*512*2 + 32*16*4, Constants: []ConstValue{
				{0, "head_dim", ConstUint, 256}, {1, "head_dim_v", ConstUint, 256}, {2, "has_softcap", ConstBool, 1},
				{3, "has_window", ConstBool, 0}, {4, "kv_tile", ConstUint, 16}}}},
		{"rope_neox_qkv_write_f16", Shape{Tokens: 1, Heads: 32, KVHeads: 8, HeadDim: 128, HeadDimV: 128, Factors: true},
			Launch{Grid: [3]int{40, 1, 1}, Threadgroup: [3]int{64, 1, 1}, Constants: []ConstValue{
				{0, "head_dim", ConstUint, 128}, {1, "has_factors", ConstBool, 1}}}},
		{"copy_f16", Shape{Tokens: 512, Dim: 4096, LastRow: true}, Launch{Grid: [3]int{16, 1, 1}, Threadgroup: [3]int{256, 1, 1},
			Constants: []ConstValue{{0, "last_row", ConstBool, 1}}}},
		{"argmax_f16", Shape{Vocab: 128256, VecX: true}, Launch{Grid: [3]int{1, 1, 1}, Threadgroup: [3]int{1024, 1, 1}, TGMem: 256,
			Constants: []ConstValue{{0, "vec_x", ConstBool, 1}}}},
		{"argmax_f16", Shape{Vocab: 50257, VecX: true}, Launch{Grid: [3]int{1, 1, 1}, Threadgroup: [3]int{1024, 1, 1}, TGMem: 256,
			Constants: []ConstValue{{0, "vec_x", ConstBool, 0}}}},
		{"pool_f16", Shape{Tokens: 32, Dim: 1024, Pooling: PoolLast, Normalize: true}, Launch{Grid: [3]int{32, 1, 1}, Threadgroup: [3]int{256, 1, 1}, TGMem: 32,
			Constants: []ConstValue{{0, "pooling", ConstUint, 3}, {1, "l2_normalize", ConstBool, 1}}}},
		{"moe_route_f16", Shape{Tokens: 512, Experts: 128, Slots: 8, Norm: true}, Launch{Grid: [3]int{512, 1, 1}, Threadgroup: [3]int{32, 1, 1}, TGMem: 512,
			Constants: []ConstValue{{0, "norm_w", ConstBool, 1}}}},
		{"moe_route_f32", Shape{Tokens: 1, Experts: 60, Slots: 4}, Launch{Grid: [3]int{1, 1, 1}, Threadgroup: [3]int{32, 1, 1}, TGMem: 240,
			Constants: []ConstValue{{0, "norm_w", ConstBool, 0}}}},
		{"gemv_id_q4_k", Shape{Tokens: 7, N: 768, K: 2048, Experts: 128, Slots: 8, VecX: true}, Launch{Grid: [3]int{192, 8, 7}, Threadgroup: [3]int{64, 1, 1},
			Constants: []ConstValue{{0, "nr", ConstUint, 2}, {1, "nsg", ConstUint, 2}, {2, "vec_x", ConstBool, 1}}}},
		{"gemv_id_q8_0", Shape{Tokens: 1, N: 2048, K: 100 * 32, Slots: 2, VecX: true}, Launch{Grid: [3]int{256, 2, 1}, Threadgroup: [3]int{64, 1, 1},
			Constants: []ConstValue{{0, "nr", ConstUint, 4}, {1, "nsg", ConstUint, 2}, {2, "vec_x", ConstBool, 1}}}},
		{"gemv_id_f16", Shape{Tokens: 1, N: 9, K: 24, Slots: 1, VecX: true}, Launch{Grid: [3]int{2, 1, 1}, Threadgroup: [3]int{64, 1, 1},
			Constants: []ConstValue{{0, "nr", ConstUint, 4}, {1, "nsg", ConstUint, 2}, {2, "vec_x", ConstBool, 0}}}},
		// gemm_id: a threadgroup per (expert, 64 columns); simd_gemm's 7.5 KiB
		// of tiles (96 rows of 40 halves), 4 counts and the list of 2048 pairs.
		{"gemm_id_q4_0", Shape{Tokens: 512, N: 768, K: 2048, Experts: 128, Slots: 8, VecX: true}, Launch{Grid: [3]int{128, 12, 1}, Threadgroup: [3]int{128, 1, 1},
			TGMem: 7680 + 16 + 8192, Constants: []ConstValue{}}},
		{"gemm_id_q6_k", Shape{Tokens: 37, N: 96, K: 512, Experts: 4, Slots: 2}, Launch{Grid: [3]int{4, 2, 1}, Threadgroup: [3]int{128, 1, 1},
			TGMem: 7680 + 16 + 8192, Constants: []ConstValue{}}},
		{"gemm_id_f16_f32", Shape{Tokens: 3, N: 64, K: 32, Experts: 8, Slots: 2}, Launch{Grid: [3]int{8, 1, 1}, Threadgroup: [3]int{128, 1, 1},
			TGMem: 12288 + 16 + 8192, Constants: []ConstValue{}}},
		{"moe_sum_f16", Shape{Tokens: 3, Dim: 2048, Slots: 8}, Launch{Grid: [3]int{8, 3, 1}, Threadgroup: [3]int{256, 1, 1}}},
	} {
		t.Run(tc.kernel, func(t *testing.T) {
			k, ok := Lookup(tc.kernel)
			if !ok {
				t.Fatalf("no %s", tc.kernel)
			}
			got, err := k.Geometry(tc.shape, max)
			if err != nil {
				t.Fatal(err)
			}
			if got.Constants == nil {
				got.Constants = []ConstValue{}
			}
			if tc.want.Constants == nil {
				tc.want.Constants = []ConstValue{}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestGeometryRefusesShapesItCannotRun(t *testing.T) {
	max := tuning(t, "m4-max")
	for _, tc := range []struct {
		kernel string
		shape  Shape
		want   string
	}{
		{"gemv_q4_0", Shape{K: 4096}, "shape.N must be positive"},
		{"gemv_q4_k", Shape{N: 64, K: 4000}, "not a multiple of the Q4_K block size 256"},
		{"simd_gemm_small_f16", Shape{Tokens: 9, N: 64, K: 64}, "the small GEMM takes 2 to 8"},
		{"rope_f16", Shape{Tokens: 1, Heads: 2, HeadDim: 63}, "odd head_dim"},
		{"flash_attention_decode_f16", Shape{Heads: 32, HeadDim: 128, HeadDimV: 128, MaxCtx: 64}, "shape.KVHeads"},
		{"flash_attention_decode_fast_f16", Shape{Heads: 1, KVHeads: 1, HeadDim: 1024, HeadDimV: 1024, MaxCtx: 64}, "threadgroup memory"},
		{"pool_f32", Shape{Tokens: 4, Dim: 384}, "shape.Pooling must be positive"},
		{"pool_f16", Shape{Tokens: 4, Dim: 384, Pooling: 4}, "pooling 4; the modes are"},
		{"moe_route_f16", Shape{Tokens: 1, Experts: 1025, Slots: 8}, "1025 experts; it takes at most 1024"},
		{"moe_route_f32", Shape{Tokens: 1, Experts: 64, Slots: 33}, "33 experts chosen of 64"},
		{"moe_route_f16", Shape{Tokens: 1, Experts: 4, Slots: 5}, "5 experts chosen of 4"},
		{"moe_route_f16", Shape{Tokens: 1, Experts: 4}, "shape.Slots must be positive"},
		{"gemv_id_q4_k", Shape{Tokens: 1, N: 64, K: 1000, Slots: 2}, "not a multiple of the Q4_K block size 256"},
		{"gemv_id_q4_0", Shape{Tokens: 1, N: 64, K: 1024}, "shape.Slots must be positive"},
		{"gemm_id_q4_k", Shape{Tokens: 9, N: 64, K: 1000, Experts: 8, Slots: 2}, "not a multiple of the Q4_K block size 256"},
		{"gemm_id_q4_0", Shape{Tokens: 9, N: 64, K: 1024, Slots: 2}, "shape.Experts must be positive"},
		{"moe_sum_f32", Shape{Tokens: 2, Slots: 2}, "shape.Dim must be positive"},
		{"rmsnorm_f16", Shape{Tokens: 1, Dim: 64}, ""},
	} {
		t.Run(tc.kernel+" "+tc.want, func(t *testing.T) {
			k, _ := Lookup(tc.kernel)
			tu := max
			if tc.want == "" {
				tu.NormTG, tc.want = 0, "tuning.NormTG must be positive"
			}
			_, err := k.Geometry(tc.shape, tu)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.kernel) {
				t.Errorf("%v, want %q naming the kernel", err, tc.want)
			}
		})
	}
}

func TestParallelDecodeSplitsFollowTheCacheSize(t *testing.T) {
	for maxCtx, want := range map[int]int{64: 2, 1024: 2, 1536: 3, 8192: 16, 16384: 32, 131072: 32} {
		if got := attnSplits(maxCtx); got != want {
			t.Errorf("attnSplits(%d) = %d, want %d", maxCtx, got, want)
		}
	}
}

// A large-K GEMV with fewer threadgroups than the tuning's GEMVMinGroups
// halves its rows per threadgroup until it has enough (down to
// GEMVMinRows, or one row); without the field, or with enough rows, the
// dtype's split stands.
func TestGEMVRowsHalveBelowTheMinimumThreadgroups(t *testing.T) {
	k, ok := Lookup("gemv_q4_0_l")
	if !ok {
		t.Fatal("no gemv_q4_0_l")
	}
	for _, tc := range []struct {
		n, min, minRows, grid, nr int
	}{
		{1024, 0, 0, 256, 4},   // no minimum: Q4_0's 4 rows
		{1024, 512, 0, 512, 2}, // 256 < 512: 2 rows
		{1024, 2048, 0, 1024, 1},
		{256, 4096, 0, 256, 1}, // one row is the least
		{4096, 512, 0, 1024, 4},
		{1024, 1024, 2, 512, 2},  // the halving stops at 2 rows
		{1024, 1024, 1, 1024, 1}, // 1: as 0
		{3072, 1024, 2, 1536, 2},
		{1024, 1024, 8, 256, 4}, // a floor above the dtype's rows halves nothing
	} {
		l := geometryUnder(t, k, Shape{N: tc.n, K: 2048}, tc.min, tc.minRows)
		nr := constValue(l, "nr")
		if l.Grid[0] != tc.grid || nr != tc.nr || l.TGMem != 16*tc.nr {
			t.Errorf("N %d, minimum %d, rows ≥ %d: grid %d, nr %d, tg_mem %d; want %d, %d, %d", tc.n, tc.min, tc.minRows, l.Grid[0], nr, l.TGMem, tc.grid, tc.nr, 16*tc.nr)
		}
	}
}

// The small GEMM (2–8 rows) follows the GEMVs' rule: fewer threadgroups
// than GEMVMinGroups halve its outputs per SIMD group (cols) from 8, down
// to GEMVMinRows or one; without the field (Apple) it keeps 8. Its CPU
// form (F32 activations) has no cols.
func TestSmallGEMMColsHalveBelowTheMinimumThreadgroups(t *testing.T) {
	k, ok := Lookup("simd_gemm_small_q8_0")
	if !ok {
		t.Fatal("no simd_gemm_small_q8_0")
	}
	for _, tc := range []struct {
		n, min, minRows, grid, cols int
	}{
		{1024, 0, 0, 32, 8},     // Apple: 8
		{1024, 1024, 2, 128, 2}, // NVIDIA's 1024 and 2: the 0.6B shape's down projection
		{4096, 1024, 2, 512, 2},
		{1024, 1024, 0, 256, 1},
		{1024, 64, 0, 64, 4},
		{100000, 1024, 2, 3125, 8}, // enough already
	} {
		l := geometryUnder(t, k, Shape{Tokens: 8, N: tc.n, K: 1024}, tc.min, tc.minRows)
		cols := constValue(l, "cols")
		if l.Grid[0] != tc.grid || cols != tc.cols {
			t.Errorf("N %d, minimum %d, floor %d: grid %d, cols %d; want %d, %d", tc.n, tc.min, tc.minRows, l.Grid[0], cols, tc.grid, tc.cols)
		}
	}
	f32, ok := Lookup("simd_gemm_small_q8_0_f32")
	if !ok {
		t.Fatal("no simd_gemm_small_q8_0_f32")
	}
	l, err := f32.Geometry(Shape{Tokens: 8, N: 1024, K: 1024}, chips.Tuning{GEMVMinGroups: 1024, GEMVMinRows: 2})
	if err != nil || l.Grid[0] != 32 || len(l.Constants) != 1 {
		t.Errorf("the CPU's small GEMM: %+v, %v; want 32 threadgroups and has_bias alone", l, err)
	}
}

// geometryUnder is k's launch for s under the GEMVs' halving rule's two
// tuning fields.
func geometryUnder(t *testing.T, k *Kernel, s Shape, minGroups, minRows int) Launch {
	t.Helper()
	l, err := k.Geometry(s, chips.Tuning{GEMVMinGroups: minGroups, GEMVMinRows: minRows})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// constValue is the value of l's constant name, -1 where it has none.
func constValue(l Launch, name string) int {
	for _, c := range l.Constants {
		if c.Name == name {
			return int(c.Value)
		}
	}
	return -1
}

// On a chip whose GEMVs dot 8-bit x (Int8GEMV), Q4_K and Q6_K take their
// 8-bit rows in every GEMV shape, before any halving; the other types, and
// the expert-indexed GEMV, keep the float path's rows.
func TestInt8GEMVTakesTheEightBitRows(t *testing.T) {
	nrOf := func(name string, s Shape, tu chips.Tuning) (int, int) {
		t.Helper()
		k, ok := Lookup(name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		l, err := k.Geometry(s, tu)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range l.Constants {
			if k.Constants[c.Index].Name == "nr" {
				return int(c.Value), l.Grid[0]
			}
		}
		t.Fatalf("%s: no nr", name)
		return 0, 0
	}
	nv := chips.Tuning{Int8GEMV: true, GEMVMinGroups: 1024, GEMVMinRows: 2}
	for _, tc := range []struct {
		name       string
		n          int
		tu         chips.Tuning
		nr, groups int
	}{
		{"gemv_q4_k_l", 16384, chips.Tuning{}, 2, 8192},
		{"gemv_q4_k_l", 16384, nv, 4, 4096},
		{"gemv_q4_k_l", 2048, nv, 2, 1024}, // 512 threadgroups at 4: halved to the floor
		{"gemv_q6_k_l", 2048, chips.Tuning{}, 1, 2048},
		{"gemv_q6_k_l", 2048, nv, 2, 1024}, // 512 threadgroups at 4: halved to the floor
		{"gemv_wide_q6_k", 128256, chips.Tuning{}, 1, 16032},
		{"gemv_wide_q6_k", 128256, nv, 4, 4008},
		{"gemv_q6_k", 1024, nv, 4, 128},
		{"gemv_q4_0_l", 16384, nv, 4, 4096}, // Q4_0's rows either way
		{"gemv_q8_0", 1024, nv, 4, 128},     // no 8-bit rows
		{"gemv_id_q6_k", 1024, nv, 1, 512},  // measured on the dense GEMVs only
	} {
		s := Shape{N: tc.n, K: 2048, Tokens: 1, Slots: 1}
		if nr, groups := nrOf(tc.name, s, tc.tu); nr != tc.nr || groups != tc.groups {
			t.Errorf("%s, N %d, int8 %v: nr %d, %d threadgroups; want %d, %d", tc.name, tc.n, tc.tu.Int8GEMV, nr, groups, tc.nr, tc.groups)
		}
	}
}
