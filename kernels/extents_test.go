package kernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
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
		for _, f := range []string{"n", "k", "m", "dim", "n_rows", "n_cols", "n_tokens", "n_heads", "n_kv_heads", "head_dim", "head_dim_v", "max_ctx", "vocab",
			"n_expert", "n_slots"} {
			if fl, ok := k.Params.Field(f); ok {
				binary.LittleEndian.PutUint32(params[fl.Offset:], 256)
			}
		}
		if fl, ok := k.Params.Field("k"); ok && k.Op == OpMoERoute { // 32 experts a row at most
			binary.LittleEndian.PutUint32(params[fl.Offset:], 8)
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

// TestMoEExtents: the three MoE kernels' rules name what does not fit:
// moe_route's logits, ids and weights and its limits (1024 experts, k up
// to min(32, experts)); gemv_id's n_expert matrices, the slots of x it
// reads, its ids and non-overlapping rows of y, and vec_x's alignment;
// moe_sum's y, weights and out.
func TestMoEExtents(t *testing.T) {
	t.Run("moe_route", func(t *testing.T) {
		const ne, kk, rows, as = 60, 4, 5, 64
		fit := map[string]uint64{"logits": ((rows-1)*as + ne) * 2, "ids": rows * kk * 4, "weights": rows * kk * 4}
		with := func(name string, v uint64) map[string]uint64 {
			m := map[string]uint64{}
			for n, b := range fit {
				m[n] = b
			}
			m[name] = v
			return m
		}
		p := MoERouteParams{NExpert: ne, K: kk, NRows: rows, AStride: as}
		for _, tt := range []struct {
			what  string
			p     MoERouteParams
			avail map[string]uint64
			want  string
		}{
			{"fits exactly", p, fit, ""},
			{"logits one row short", p, with("logits", fit["logits"]-2*as), "binding logits"},
			{"ids one short", p, with("ids", fit["ids"]-4), "binding ids"},
			{"weights one short", p, with("weights", fit["weights"]-4), "binding weights"},
			{"a stride below the experts", MoERouteParams{NExpert: ne, K: kk, NRows: rows, AStride: ne - 1}, fit, "exceeds a_stride"},
			{"k of 0", MoERouteParams{NExpert: ne, NRows: rows, AStride: as}, fit, "k is 0"},
			{"k of 33", MoERouteParams{NExpert: ne, K: 33, NRows: rows, AStride: as}, with("ids", 1<<20), "k 33 exceeds min(32, n_expert)"},
			{"k past the experts", MoERouteParams{NExpert: 3, K: 4, NRows: rows, AStride: as}, fit, "k 4 exceeds min(32, n_expert) 3"},
			{"1025 experts", MoERouteParams{NExpert: 1025, K: 4, NRows: 1, AStride: 1025}, with("logits", 1<<20), "n_expert 1025 exceeds moe_route's limit"},
		} {
			t.Run(tt.what, func(t *testing.T) { checkExtent(t, "moe_route_f16", tt.p, tt.avail, nil, tt.want) })
		}
	})
	t.Run("gemv_id", func(t *testing.T) {
		const n, kk, ns, ne, rows = 64, 512, 4, 8, 3
		w := uint64(ne * n * kk / 32 * 18) // Q4_0
		p := GEMVIDParams{N: n, K: kk, NSlots: ns, NRows: rows, NExpert: ne, XStride: ns * kk, XSlot: kk, YStride: ns * n}
		fit := map[string]uint64{"w": w, "x": rows * ns * kk * 2, "ids": rows * ns * 4, "y": rows * ns * n * 2}
		with := func(name string, v uint64) map[string]uint64 {
			m := map[string]uint64{}
			for n, b := range fit {
				m[n] = b
			}
			m[name] = v
			return m
		}
		one := p
		one.XSlot, one.XStride = 0, kk // gate and up: one x a row
		odd := p
		odd.XStride = ns*kk + 4
		narrow := p
		narrow.YStride = ns*n - 1
		for _, tt := range []struct {
			what   string
			p      GEMVIDParams
			avail  map[string]uint64
			consts map[string]uint32
			want   string
		}{
			{"fits exactly", p, fit, nil, ""},
			{"one x a row fits its rows", one, with("x", rows*kk*2), nil, ""},
			{"the last expert one byte short", p, with("w", w-1), nil, "binding w"},
			{"x one slot short", p, with("x", fit["x"]-kk*2), nil, "binding x"},
			{"ids one short", p, with("ids", fit["ids"]-4), nil, "binding ids"},
			{"y one short", p, with("y", fit["y"]-2), nil, "binding y"},
			{"rows of y overlap", narrow, fit, nil, "exceeds y_stride"},
			{"vec_x with a stride off 16 bytes", odd, with("x", 1<<20), map[string]uint32{"vec_x": 1}, "16-byte aligned"},
			{"the same stride without vec_x", odd, with("x", 1<<20), map[string]uint32{"vec_x": 0}, ""},
			{"no experts", GEMVIDParams{N: n, K: kk, NSlots: ns, NRows: rows, XStride: ns * kk, XSlot: kk, YStride: ns * n}, fit, nil, "n_expert is 0"},
		} {
			t.Run(tt.what, func(t *testing.T) { checkExtent(t, "gemv_id_q4_0", tt.p, tt.avail, tt.consts, tt.want) })
			// gemm_id, gemv_id's batch form, reads and writes the same
			// extents; it has no vec_x.
			if tt.consts == nil {
				t.Run("gemm_id "+tt.what, func(t *testing.T) { checkExtent(t, "gemm_id_q4_0", tt.p, tt.avail, nil, tt.want) })
			}
		}
	})
	t.Run("moe_sum", func(t *testing.T) {
		const n, ns, rows = 100, 3, 4
		p := MoESumParams{N: n, NSlots: ns, NRows: rows, YStride: ns * n, OutStride: n}
		fit := map[string]uint64{"y": rows * ns * n * 4, "weights": rows * ns * 4, "out": rows * n * 4}
		with := func(name string, v uint64) map[string]uint64 {
			m := map[string]uint64{}
			for n, b := range fit {
				m[n] = b
			}
			m[name] = v
			return m
		}
		for _, tt := range []struct {
			what  string
			p     MoESumParams
			avail map[string]uint64
			want  string
		}{
			{"fits exactly", p, fit, ""},
			{"y one short", p, with("y", fit["y"]-4), "binding y"},
			{"weights one short", p, with("weights", fit["weights"]-4), "binding weights"},
			{"out one short", p, with("out", fit["out"]-4), "binding out"},
			{"rows of out overlap", MoESumParams{N: n, NSlots: ns, NRows: rows, YStride: ns * n, OutStride: n - 1}, fit, "exceeds out_stride"},
			{"no slots", MoESumParams{N: n, NRows: rows, YStride: ns * n, OutStride: n}, fit, "n_slots is 0"},
		} {
			t.Run(tt.what, func(t *testing.T) { checkExtent(t, "moe_sum_f32", tt.p, tt.avail, nil, tt.want) })
		}
	})
}

// checkExtent runs kernel name's extent rule on parameters p, the bytes
// avail of each binding and the constants consts: refused with want in its
// error, or accepted where want is "".
func checkExtent(t *testing.T, name string, p any, avail map[string]uint64, consts map[string]uint32, want string) {
	t.Helper()
	k, ok := Lookup(name)
	if !ok {
		t.Fatalf("no %s", name)
	}
	a := make([]uint64, len(k.Bindings))
	for _, b := range k.Bindings {
		a[b.Slot] = avail[b.Name]
	}
	x := &Extents{Params: Encode(p), Avail: a, Constants: make([]uint32, len(k.Constants)), Set: make([]bool, len(k.Constants)), Batch: 16}
	for i, c := range k.Constants {
		if v, ok := consts[c.Name]; ok {
			x.Constants[i], x.Set[i] = v, true
		}
	}
	err := k.CheckExtents(x)
	switch {
	case want == "" && err != nil:
		t.Fatalf("refused: %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrExtent)):
		t.Fatalf("got %v, want an ErrExtent naming %q", err, want)
	}
}

// The small GEMM's outputs a SIMD group (cols) size its accumulators: a
// plan setting fewer than 1 or more than 8 is refused.
func TestSmallGEMMExtents(t *testing.T) {
	const m, n, kk = 8, 64, 256
	p := GEMMParams{M: m, N: n, K: kk, LDA: kk, LDC: n}
	fit := map[string]uint64{"w": n * kk / 32 * 34, "x": m * kk * 2, "y": m * n * 2}
	for _, tt := range []struct {
		cols uint32
		want string
	}{{8, ""}, {1, ""}, {0, "constant cols 0"}, {16, "constant cols 16"}} {
		t.Run("cols "+strconv.Itoa(int(tt.cols)), func(t *testing.T) {
			checkExtent(t, "simd_gemm_small_q8_0", p, fit, map[string]uint32{"cols": tt.cols}, tt.want)
		})
	}
	// vec_x: rows of lda a whole number of 16-byte vectors, K of 8 halves.
	odd := p
	odd.LDA = kk + 4
	oddFit := map[string]uint64{"w": fit["w"], "x": m * (kk + 4) * 2, "y": fit["y"]}
	for _, tt := range []struct {
		name string
		p    GEMMParams
		fit  map[string]uint64
		vec  uint32
		want string
	}{
		{"vec_x", p, fit, 1, ""},
		{"vec_x with lda off 16 bytes", odd, oddFit, 1, "16-byte vectors"},
		{"lda off 16 bytes without vec_x", odd, oddFit, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkExtent(t, "simd_gemm_small_q8_0", tt.p, tt.fit, map[string]uint32{"cols": 8, "vec_x": tt.vec}, tt.want)
		})
	}
}

// A GEMV's rows a SIMD group (nr) size its accumulators and its SIMD
// groups (nsg) its threadgroup: a plan setting them outside 1–8 and 1–32
// is refused, for the GEMVs, the MoE's expert GEMVs and the planar small
// GEMMs.
func TestGEMVCountExtents(t *testing.T) {
	const n, kk = 64, 256
	p := GEMVParams{N: n, K: kk}
	fit := map[string]uint64{"w": n * kk / 32 * 18, "x": 2 * kk, "y": 2 * n}
	for _, tt := range []struct {
		nr, nsg uint32
		want    string
	}{{4, 2, ""}, {GEMVMaxNR, 32, ""}, {1, 1, ""}, {0, 2, "constant nr 0"}, {GEMVMaxNR + 1, 2, "constant nr 9"},
		{4, 0, "constant nsg 0"}, {4, 33, "constant nsg 33"}} {
		t.Run(fmt.Sprintf("nr %d nsg %d", tt.nr, tt.nsg), func(t *testing.T) {
			checkExtent(t, "gemv_q4_0", p, fit, map[string]uint32{"nr": tt.nr, "nsg": tt.nsg}, tt.want)
		})
	}
	id := GEMVIDParams{N: n, K: kk, NSlots: 1, NExpert: 1, NRows: 1, XStride: kk, XSlot: kk, YStride: n}
	idFit := map[string]uint64{"w": n * kk / 32 * 18, "x": 2 * kk, "ids": 4, "y": 2 * n}
	checkExtent(t, "gemv_id_q4_0", id, idFit, map[string]uint32{"nr": 4, "nsg": 2}, "")
	checkExtent(t, "gemv_id_q4_0", id, idFit, map[string]uint32{"nr": 16, "nsg": 2}, "constant nr 16")
	// the planar small GEMM runs the planar GEMV's body: the same bounds,
	// and its pairs form (_glu) whole pairs of gate and up rows
	gp := GEMMParams{M: 8, N: n, K: kk, LDA: kk, LDC: n}
	gFit := map[string]uint64{"w": n * kk / 32 * 18, "x": 8 * 2 * kk, "y": 8 * 2 * n}
	for _, name := range []string{"simd_gemm_small_q4_0_planar", "simd_gemm_small_q4_0_planar_glu"} {
		checkExtent(t, name, gp, gFit, map[string]uint32{"nr": 8, "nsg": 1}, "")
		checkExtent(t, name, gp, gFit, map[string]uint32{"nr": GEMVMaxNR + 1, "nsg": 1}, "constant nr 9")
		checkExtent(t, name, gp, gFit, map[string]uint32{"nr": 8, "nsg": 33}, "constant nsg 33")
	}
	odd := gp
	odd.N = n - 1
	oddFit := map[string]uint64{"w": (n - 1) * kk / 32 * 18, "x": gFit["x"], "y": gFit["y"]}
	checkExtent(t, "simd_gemm_small_q4_0_planar_glu", odd, oddFit, map[string]uint32{"nr": 8, "nsg": 1}, "not pairs")
	checkExtent(t, "simd_gemm_small_q4_0_planar", odd, oddFit, map[string]uint32{"nr": 8, "nsg": 1}, "")
}
