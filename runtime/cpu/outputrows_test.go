package cpu

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/runtime/device"
)

// A GEMV or GEMM restricted to some output rows (OutputRows) gives the
// unrestricted run's bits on every listed row and -inf on every row outside
// the items it ran (a row's x16 group of 16, or its quad of rows), on every
// row of X; lifted again, it computes every row.
func TestOutputRowsComputeTheListedRows(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	h := newHarness(t, 3)
	const n, kk, m = 320, 1024, 3
	spans := []device.Span{{Lo: 3, Hi: 5}, {Lo: 40, Hi: 41}, {Lo: 100, Hi: 130}, {Lo: 319, Hi: 320}}
	listed := func(row int) bool {
		for _, s := range spans {
			if int32(row) >= s.Lo && int32(row) < s.Hi {
				return true
			}
		}
		return false
	}
	for _, name := range []string{"gemv_q4_0_f32", "gemv_q4_0_x16_f32", "gemv_q4_0", "gemv_q4_0_planar", "gemv_q8_0_x16_f32",
		"simd_gemm_small_q4_0_x16_f32", "simd_gemm_q4_0_f32", "simd_gemm_small_q4_0_planar", "simd_gemm_small_q8_0_x16_f32"} {
		t.Run(name, func(t *testing.T) {
			k, ok := kernels.Lookup(name)
			if !ok {
				t.Fatalf("no kernel %s", name)
			}
			a := actOf(k.Act)
			w, _ := weights(t, r, k.DType, n, kk)
			w = layout(t, k, w, kk)
			rows, ldc := 1, n
			var params any = kernels.GEMVParams{N: n, K: kk}
			if k.Op == kernels.OpGEMM {
				rows, ldc = m, n+5
				params = kernels.GEMMParams{M: m, N: n, K: kk, LDA: kk, LDC: uint32(ldc)}
			}
			x := actBytes(a, randFloats(r, rows*kk, 1))
			y := Alloc(rows * ldc * a.size())
			e := h.bind(name, params, consts{}, binds{"w": w, "x": x, "y": y})
			e.Run()
			full := actFloats(a, y, rows*ldc)
			prog := device.NewProgram(len(h.b.progs))
			if err := h.b.OutputRows(prog, 0, spans); err != nil {
				t.Fatal(err)
			}
			clear(y)
			e.Run()
			got := actFloats(a, y, rows*ldc)
			unit := 4 // a quad of rows, or an x16 group
			if k.Variant&kernels.X16 != 0 {
				unit = x16Rows
			}
			for i := range rows {
				for row := range n {
					g, f := got[i*ldc+row], full[i*ldc+row]
					ran := false
					for u := row / unit * unit; u < row/unit*unit+unit; u++ {
						ran = ran || listed(u)
					}
					switch {
					case ran && g != f:
						t.Fatalf("row %d of X, output row %d (listed %v): %g, the whole run's %g", i, row, listed(row), g, f)
					case !ran && !math.IsInf(g, -1):
						t.Fatalf("row %d of X, output row %d (not run): %g, want -inf", i, row, g)
					}
				}
			}
			if err := h.b.OutputRows(prog, 0, nil); err != nil {
				t.Fatal(err)
			}
			clear(y)
			e.Run()
			for i, v := range actFloats(a, y, rows*ldc) {
				if i%ldc < n && v != full[i] {
					t.Fatalf("lifted: [%d] %g, the whole run's %g", i, v, full[i])
				}
			}
		})
	}
}

// OutputRows refuses spans that are not sorted, disjoint rows of the
// output, a GEMV whose rows are not its own (gate|up pairs) and a command
// that is not a GEMV or GEMM, and leaves the command whole.
func TestOutputRowsRefusesWhatItCannotRestrict(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	h := newHarness(t, 2)
	const n, kk = 64, 256
	w, _ := weights(t, r, dtype.Q4_0, n, kk)
	x := actBytes(actF32, randFloats(r, kk, 1))
	y := Alloc(4 * n)
	e := h.bind("gemv_q4_0_f32", kernels.GEMVParams{N: n, K: kk}, consts{}, binds{"w": w, "x": x, "y": y})
	prog := device.NewProgram(len(h.b.progs))
	for _, bad := range [][]device.Span{{{Lo: 5, Hi: 3}}, {{Lo: 10, Hi: 20}, {Lo: 0, Hi: 4}}, {{Lo: 60, Hi: 65}}, {{Lo: -1, Hi: 2}}, {{Lo: 4, Hi: 8}, {Lo: 6, Hi: 9}}} {
		if err := h.b.OutputRows(prog, 0, bad); !errors.Is(err, ErrUnsupported) {
			t.Errorf("spans %v: %v, want ErrUnsupported", bad, err)
		}
		e.Run()
		for i, v := range f32s(y)[:n] {
			if math.IsInf(float64(v), -1) {
				t.Fatalf("spans %v refused, yet row %d is -inf", bad, i)
			}
		}
	}
	if err := h.b.OutputRows(prog, 1, nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("no such command: %v, want ErrUnsupported", err)
	}
	h.bind("gemv_q4_0_planar_glu", kernels.GEMVParams{N: n, K: kk}, consts{},
		binds{"w": planarOf(t, w), "x": actBytes(actF16, randFloats(r, kk, 1)), "y": Alloc(n)})
	if err := h.b.OutputRows(device.NewProgram(len(h.b.progs)), 0, []device.Span{{Lo: 0, Hi: 2}}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("a gate|up GEMV: %v, want ErrUnsupported", err)
	}
	h.bind("argmax_f32", kernels.ArgmaxParams{N: n}, consts{}, binds{"logits": y, "ids": Alloc(64)})
	if err := h.b.OutputRows(device.NewProgram(len(h.b.progs)), 0, []device.Span{{Lo: 0, Hi: 2}}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("an elementwise command: %v, want ErrUnsupported", err)
	}
}

func planarOf(t *testing.T, w []byte) []byte {
	t.Helper()
	p := Alloc(len(w))
	if err := kernels.ToPlanar(dtype.Q4_0, p, w); err != nil {
		t.Fatal(err)
	}
	return p
}
