package gpu

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/kernels"
)

// clangCUDA checks CUDA source with clang's CUDA front end and the shim
// (no CUDA toolkit: declarations only), every warning an error.
func clangCUDA(t *testing.T) func(name, src string) (string, error) {
	t.Helper()
	cc := ""
	for _, c := range []string{os.Getenv("CLANG"), "clang++", "clang"} {
		if p, err := exec.LookPath(c); c != "" && err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		proof.Missing(t, "the CUDA kernels are not type-checked", "clang not found (apt-get install clang)")
	}
	return func(name, src string) (string, error) {
		cmd := exec.Command(cc, "-x", "cuda", "--cuda-gpu-arch=sm_80", "--cuda-device-only", "-nocudainc", "-nocudalib",
			"-fsyntax-only", "-std=c++17", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror",
			"-include", "shim/cuda_shim.h", "-")
		cmd.Stdin = strings.NewReader("# 1 \"" + name + "\"\n" + src + "\n#pragma clang force_cuda_host_device end\n")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
}

// constsOf gives every constant of a family a value: 1 (true).
func constsOf(t *testing.T, f string, es map[string]*Entry) map[string]uint32 {
	cs, err := Constants(f, es)
	if err != nil {
		t.Fatal(err)
	}
	v := map[string]uint32{}
	for _, c := range cs {
		v[c.Name] = 1
	}
	return v
}

// Every family, all its entries in one translation unit, is CUDA that
// clang accepts: a syntax or type error in a body cannot land though CI
// has no GPU. NVRTC compiles the same text on the device (runtime/cuda).
func TestEveryFamilyIsCUDAThatClangAccepts(t *testing.T) {
	check := clangCUDA(t)
	es := entries(t)
	for _, f := range Families() {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			var names []string
			for _, e := range sortedEntries(f, es) {
				names = append(names, e.Name)
			}
			src, err := CUDA(names, constsOf(t, f, es), es)
			if err != nil {
				t.Fatal(err)
			}
			if out, err := check(f+".cu", src); err != nil {
				t.Errorf("clang rejects the CUDA of %s: %v\n%s", f, err, out)
			}
		})
	}
}

// The check is not a formality: a body that calls what no prelude
// declares, or passes a float where the tile wants a pointer, is refused.
func TestTheCUDACheckCatchesBrokenBodies(t *testing.T) {
	check := clangCUDA(t)
	es := entries(t)
	src, err := CUDA([]string{"rmsnorm_f16"}, nil, es)
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string][2]string{
		"an undeclared function": {"rsqrt(", "rsqrt_undeclared("},
		"a metal-only builtin":   {"simd_sum(v);", "simd_broadcast_first(v);"},
		"a missing field":        {"p.eps", "p.epsilon"},
	} {
		if !strings.Contains(src, edit[0]) {
			t.Fatalf("%s: %q is not in the source", name, edit[0])
		}
		if _, err := check("broken.cu", strings.Replace(src, edit[0], edit[1], 1)); err == nil {
			t.Errorf("clang accepts %s", name)
		}
	}
}

func entries(t *testing.T) map[string]*Entry {
	t.Helper()
	es, err := Entries()
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// Every GPU kernel of the catalog (F16 activations: the Apple and NVIDIA
// plans' kernels) has an entry, and every entry is such a kernel.
func TestEveryGPUKernelHasAnEntry(t *testing.T) {
	es := entries(t)
	for _, k := range kernels.All() {
		if k.Act == dtype.F16 && es[k.Name] == nil {
			t.Errorf("%s has no entry in kernels/gpu", k.Name)
		}
	}
	for n := range es {
		if k, _ := kernels.Lookup(n); k.Act != dtype.F16 {
			t.Errorf("entry %s: %v activations", n, k.Act)
		}
	}
}

// Every CUDA entry lets the next command launch, and waits for the
// commands before it unless its body does (Entry.Waits: after reading only
// what no command writes); the bodies that wait are found through the
// family's own functions.
func TestEntriesWaitForTheCommandsBefore(t *testing.T) {
	es, err := Entries()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"gemv_q4_0_l": true, "gemv_wide_q6_k": true, "gemv_f16_silu": true, "residual_rmsnorm_f16": true,
		"layernorm_f16": true, "head_norm_rope_neox_kv_write_f16": true, "rope_qkv_write_rows_f16": true,
		"head_rmsnorm_f16": false, "rope_f16": false, "flash_attention_decode_parallel_f16": false, "flash_attention_decode_rope_neox_norm_f16": true,
		"simd_gemm_q4_0": false, "argmax_f16": false,
	} {
		e := es[name]
		if e == nil {
			t.Fatalf("no entry %s", name)
		}
		if e.Waits != want {
			t.Errorf("%s: Waits = %v, want %v", name, e.Waits, want)
		}
		src, err := CUDA([]string{name}, nil, es)
		if err != nil {
			t.Fatal(err)
		}
		at := regexp.MustCompile(`__global__ void (__launch_bounds__\([^)]*\) )?` + name + `\(`).FindStringIndex(src)
		if at == nil {
			t.Fatalf("no CUDA entry %s in:\n%s", name, src)
		}
		entry := src[at[0]:]
		if !strings.Contains(entry, "grid_dependents();") || strings.Contains(entry, "grid_wait();") == want {
			t.Errorf("%s's entry:\n%s", name, entry)
		}
	}
	code := `inline void leaf(device float* x) { grid_wait(); x[0] = 1; }
inline void mid(device float* x) { leaf(x); }
template <int T> inline void top(device float* x) { if (T) mid<T>(x); }
inline void other(device float* x) { x[0] = 2; }`
	_, top, err := bodyParams(code, "top")
	if err != nil {
		t.Fatal(err)
	}
	_, other, _ := bodyParams(code, "other")
	if !waits(code, top, map[string]bool{"top": true}) || waits(code, other, map[string]bool{"other": true}) {
		t.Error("waits does not follow the family's calls to grid_wait")
	}
}

// A "//! cuda_launch_bounds FUNC THREADS BLOCKS [unless CONST]" line gives
// the entries that call FUNC a __launch_bounds__, and no other entry.
func TestLaunchBoundsReachTheCUDAEntry(t *testing.T) {
	es := entries(t)
	for name, want := range map[string]string{
		"gemv_q4_0_l_silu": "__global__ void __launch_bounds__(128, 8) gemv_q4_0_l_silu(",
		"gemv_q6_k_l_silu": "__global__ void __launch_bounds__(128, 8) gemv_q6_k_l_silu(",
		"gemv_q4_0_l":      "__global__ void gemv_q4_0_l(",
		"gemv_q4_0_silu":   "__global__ void gemv_q4_0_silu(",
		"gemv_q4_0_planar": "__global__ void gemv_q4_0_planar(",
	} {
		e := es[name]
		if e == nil {
			t.Fatalf("no entry %s", name)
		}
		src, err := CUDA([]string{name}, nil, es)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(src, want) {
			t.Errorf("%s (Bounds %v): want %q in its CUDA", name, e.Bounds, want)
		}
	}
}

// A bound with an "unless" condition is on the specializations where the
// condition is false and on no other (the folded planar GEMVs: streaming 8
// rows a group).
func TestLaunchBoundsFollowTheirCondition(t *testing.T) {
	es := entries(t)
	for _, name := range []string{"gemv_q4_0_planar_norm", "gemv_q4_0_planar_glu_norm", "gemv_q4_0_planar_res"} {
		for _, c := range []struct {
			values  map[string]uint32
			bounded bool
		}{
			{map[string]uint32{"nr": 8}, true},
			{map[string]uint32{"nr": 8, "preload": 1}, false},
			{map[string]uint32{"nr": 4}, false},
			{nil, false},
		} {
			src, err := CUDA([]string{name}, c.values, es)
			if err != nil {
				t.Fatal(err)
			}
			want := "__global__ void " + name + "("
			if c.bounded {
				want = "__global__ void __launch_bounds__(128, 4) " + name + "("
			}
			if !strings.Contains(src, want) {
				t.Errorf("%s with %v: want %q in its CUDA", name, c.values, want)
			}
		}
	}
}

func TestConstantConditions(t *testing.T) {
	for expr, want := range map[string]int64{"preload || nr < 8": 1, "!preload && nr >= 8": 0, "(nr == 8) && !(preload != 0)": 0, "nr <= 4 || 3 > 2": 1} {
		got, err := evalConstantExpr(expr, map[string]uint32{"nr": 8, "preload": 1})
		if err != nil || got != want {
			t.Errorf("%s with nr 8, preload 1: %d, %v; want %d", expr, got, err, want)
		}
	}
	for _, bad := range []string{"nr +", "nr + 1", "f(nr)", "nr < 0x8"} {
		if _, err := evalConstantExpr(bad, nil); err == nil {
			t.Errorf("%q evaluated", bad)
		}
	}
}

// A bound's "unless" condition may name only the kernel's constants.
func TestBoundsConditionNamesConstants(t *testing.T) {
	k, ok := kernels.Lookup("gemv_q4_0_planar_norm")
	if !ok {
		t.Fatal("no kernel gemv_q4_0_planar_norm")
	}
	if err := constantExpr(k, "preload || nr < 8"); err != nil {
		t.Error(err)
	}
	if err := constantExpr(k, "preload || rows < 8"); err == nil {
		t.Error("a condition naming rows, not a constant, was accepted")
	}
}

// The extent rules bound a GEMV's nr by kernels.GEMVMaxNR: the width of
// the bodies' accumulators, which gemv_rows.h defines.
func TestGEMVMaxNRIsTheBodies(t *testing.T) {
	src, err := sources.ReadFile("gemv_rows.h")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^#define GEMV_MAX_NR (\d+)$`).FindSubmatch(src)
	if m == nil || string(m[1]) != strconv.Itoa(kernels.GEMVMaxNR) {
		t.Fatalf("gemv_rows.h defines GEMV_MAX_NR as %q; kernels.GEMVMaxNR is %d", m, kernels.GEMVMaxNR)
	}
}
