package kernels

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/specs/chips"
)

// TestEveryKernelHasAnExtentRule: a kernel without a rule would bind
// unchecked, so a catalog entry added without one is caught here.
func TestEveryKernelHasAnExtentRule(t *testing.T) {
	for _, k := range All() {
		err := k.CheckExtents(&Extents{Params: make([]byte, k.Params.Size)})
		if err == nil || strings.Contains(err.Error(), "no extent rule") {
			t.Errorf("%s: zero parameters over no bindings give %v", k.Name, err)
		}
	}
}

// TestGEMVExtents: the rule relates n and k to the weight's blocks, x and
// y, and names what does not fit.
func TestGEMVExtents(t *testing.T) {
	k, ok := Lookup("gemv_q4_0")
	if !ok {
		t.Fatal("no gemv_q4_0")
	}
	const n, kk = 64, 256
	wBytes := uint64(n * kk / 32 * 18) // Q4_0: 18 bytes a block of 32
	avail := func(w, x, y uint64) []uint64 {
		a := make([]uint64, len(k.Bindings))
		for _, b := range k.Bindings {
			switch b.Name {
			case "w":
				a[b.Slot] = w
			case "x":
				a[b.Slot] = x
			case "y":
				a[b.Slot] = y
			}
		}
		return a
	}
	tests := []struct {
		name          string
		n, k, w, x, y uint64
		want          string
	}{
		{"fits exactly", n, kk, wBytes, 2 * kk, 2 * n, ""},
		{"a weight one byte short", n, kk, wBytes - 1, 2 * kk, 2 * n, "binding w"},
		{"k not whole blocks", n, kk + 16, wBytes * 2, 4 * kk, 2 * n, "block of 32"},
		{"x short", n, kk, wBytes, 2*kk - 2, 2 * n, "binding x"},
		{"y short", n, kk, wBytes, 2 * kk, 2*n - 2, "binding y"},
		{"n of 2^30", 1 << 30, kk, wBytes, 2 * kk, 2 * n, "binding w"},
		{"k of 0", n, 0, wBytes, 2 * kk, 2 * n, "k is 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := Encode(GEMVParams{N: uint32(tt.n), K: uint32(tt.k)})
			err := k.CheckExtents(&Extents{Params: params, Avail: avail(tt.w, tt.x, tt.y)})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrExtent)):
				t.Fatalf("got %v, want an ErrExtent naming %q", err, tt.want)
			}
		})
	}
}

// TestEveryKernelHasAShapeRecovery: a kernel whose shape cannot be read
// back from its parameters would bind with an unchecked launch, so a
// catalog entry added without one is caught here; and the launch its rule
// gives for the recovered shape is the one CheckLaunch accepts, while a
// grid one larger is refused.
func TestEveryKernelHasAShapeRecovery(t *testing.T) {
	tune := chips.Tuning{NormTG: 256}
	for _, k := range All() {
		params := make([]byte, k.Params.Size)
		for _, f := range []string{"n", "k", "m", "dim", "n_rows", "n_cols", "n_tokens", "n_heads", "n_kv_heads", "head_dim", "head_dim_v", "max_ctx", "vocab"} {
			if fl, ok := k.Params.Field(f); ok {
				binary.LittleEndian.PutUint32(params[fl.Offset:], 256)
			}
		}
		if fl, ok := k.Params.Field("m"); ok && k.Variant&Small != 0 {
			binary.LittleEndian.PutUint32(params[fl.Offset:], 4)
		}
		x := &Extents{Params: params, Constants: make([]uint32, len(k.Constants)), Set: make([]bool, len(k.Constants))}
		for i, c := range k.Constants {
			if c.Name == "pooling" { // a shape without a mode has no launch
				x.Constants[i], x.Set[i] = PoolMean, true
			}
		}
		s, err := k.ShapeOf(x)
		if err != nil {
			t.Errorf("%s: %v", k.Name, err)
			continue
		}
		l, err := k.Geometry(s, tune)
		if err != nil {
			t.Errorf("%s: shape %s: %v", k.Name, s, err)
			continue
		}
		var grid, tg [3]uint32
		for d := range 3 {
			grid[d], tg[d] = uint32(l.Grid[d]), uint32(l.Threadgroup[d])
		}
		if err := k.CheckLaunch(x, tune, grid, tg, uint32(l.TGMem)); err != nil {
			t.Errorf("%s: the rule's own launch is refused: %v", k.Name, err)
		}
		grid[0]++
		if err := k.CheckLaunch(x, tune, grid, tg, uint32(l.TGMem)); !errors.Is(err, ErrLaunch) || !strings.Contains(err.Error(), "the rule gives") {
			t.Errorf("%s: a grid one larger gives %v", k.Name, err)
		}
	}
}

// TestPoolExtents: pool reads the batch's rows of x (its ranges are host
// data, checked by the kernel), two u32 a range and n_rows×dim floats out,
// and only with a pooling mode it knows.
func TestPoolExtents(t *testing.T) {
	k, ok := Lookup("pool_f16")
	if !ok {
		t.Fatal("no pool_f16")
	}
	const dim, as, rows, batch = 64, 80, 3, 10
	x := uint64((batch-1)*as+dim) * 2
	tests := []struct {
		name          string
		mode          uint32
		set           bool
		dim, as       uint32
		x, ranges, ou uint64
		want          string
	}{
		{"fits exactly", PoolMean, true, dim, as, x, 8 * rows, 4 * rows * dim, ""},
		{"x one row short", PoolLast, true, dim, as, x - 2*as, 8 * rows, 4 * rows * dim, "binding x"},
		{"a range short", PoolCLS, true, dim, as, x, 8*rows - 4, 4 * rows * dim, "binding ranges"},
		{"out short", PoolMean, true, dim, as, x, 8 * rows, 4*rows*dim - 4, "binding out"},
		{"a stride below dim", PoolMean, true, dim, dim - 1, x, 8 * rows, 4 * rows * dim, "exceeds a_stride"},
		{"no mode", 0, false, dim, as, x, 8 * rows, 4 * rows * dim, "pooling is not set"},
		{"mode 4", 4, true, dim, as, x, 8 * rows, 4 * rows * dim, "pooling 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			avail := make([]uint64, len(k.Bindings))
			avail[0], avail[1], avail[2] = tt.x, tt.ranges, tt.ou
			err := k.CheckExtents(&Extents{Params: Encode(PoolParams{Dim: tt.dim, NRows: rows, AStride: tt.as}), Avail: avail,
				Constants: []uint32{tt.mode, 1}, Set: []bool{tt.set, true}, Batch: batch})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrExtent)):
				t.Fatalf("got %v, want an ErrExtent naming %q", err, tt.want)
			}
		})
	}
}
