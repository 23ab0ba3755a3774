package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
)

// The row pieces (vec.go: assembly twins where the CPU has them) agree with
// their portable forms bit for bit. Lengths straddle the groups of eight
// the assembly works in.

// f2hRow against f2h (itself held to dtype) on a lattice of float32 bit
// patterns, every one with F2H_EXHAUSTIVE=1, including NaNs of every
// payload, the subnormal and overflow edges, and row lengths that leave
// tails.
func TestF2HRowMatchesF2H(t *testing.T) {
	step := uint64(89)
	if os.Getenv("F2H_EXHAUSTIVE") != "" {
		step = 1
	}
	const row = 4093 // odd: the tail runs too
	src, got := make([]float32, row), make([]uint16, row)
	check := func(n int) {
		f2hRow(got[:n], src[:n])
		for i, f := range src[:n] {
			if want := dtype.Float16bits(f); got[i] != want {
				t.Fatalf("f2hRow: %#08x (%g) gave %#04x, dtype %#04x", math.Float32bits(f), f, got[i], want)
			}
		}
	}
	n := 0
	for u := uint64(0); u < 1<<32; u += step {
		src[n] = math.Float32frombits(uint32(u))
		if n++; n == row {
			check(n)
			n = 0
		}
	}
	check(n)
	var edges []float32
	for _, b := range []uint32{0x387fffff, 0x38800000, 0x33000000, 0x33000001, 0x32ffffff, 0x477fefff, 0x477ff000,
		0x477fe000, 0x7f800000, 0x7f800001, 0x7fbfffff, 0x7fc00000, 0x7fc00001, 0x7fe00000, 0x7fffffff, 0x00000001, 0x007fffff} {
		for d := uint32(0); d < 4; d++ {
			edges = append(edges, math.Float32frombits(b-2+d), math.Float32frombits(b-2+d|1<<31))
		}
	}
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, len(edges)} {
		copy(src, edges[:n])
		check(n)
	}
}

// rmsScales: rows summed side by side give each row the scale of its sum
// in order, for groups of eight rows and the rows past them, and row
// lengths that are not whole groups (which the Go form takes).
func TestRMSScalesMatchPortable(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, n := range []int{1, 7, 8, 16, 24, 128, 130, 1024} {
		for _, rows := range []int{1, 7, 8, 9, 16, 17, 24} {
			stride := n + r.IntN(3)*8
			x := make([]float32, rows*stride)
			for i := range x {
				// magnitudes spread wide, so the rounding of the sums shows.
				x[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-20)))
			}
			if rows > 2 {
				clear(x[stride : stride+n]) // a zero row: 1/sqrt(eps)
			}
			got, want := make([]float32, rows), make([]float32, rows)
			rmsScales(got, x, n, stride, 1e-6)
			rmsScalesGo(want, x, n, stride, 1e-6)
			checkBits(t, fmt.Sprintf("n %d rows %d", n, rows), got, want)
		}
	}
}

func TestScaleMulMatchesPortable(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	for _, n := range []int{0, 1, 7, 8, 9, 128, 1027} {
		x, w := randFloats(r, n, 1), randFloats(r, n, 1)
		got, want := make([]float32, n), make([]float32, n)
		scaleMul(got, x, w, 0.37)
		scaleMulGo(want, x, w, 0.37)
		checkBits(t, fmt.Sprintf("scaleMul n %d", n), got, want)
		scaleMul(x, x, w, 0.37) // in place
		checkBits(t, fmt.Sprintf("scaleMul in place n %d", n), x, want)
	}
}

// Both rotations, on head sizes whose halves leave tails, with the tables
// ropeCfg.cache writes.
func TestRotateMatchesPortable(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	for _, dims := range []int{2, 8, 14, 16, 30, 32, 64, 128, 256} {
		for _, neox := range []bool{false, true} {
			c := newRopeCfg(dims, 1e6, 1, 1, 0, 32, 1, 4096)
			cs := make([]float32, dims)
			c.cache(cs, 1+r.IntN(3000), neox)
			x := randFloats(r, dims+5, 10)
			got, want := append([]float32(nil), x...), append([]float32(nil), x...)
			rotate(got, cs, neox)
			if neox {
				rotateNeoXGo(want, cs)
			} else {
				rotatePairsGo(want, cs)
			}
			checkBits(t, fmt.Sprintf("rotate dims %d neox %v", dims, neox), got, want)
		}
	}
}

// argmax: the lowest index of the largest value, NaN never winning,
// −0 equal to +0, ties inside a lane, across lanes and in the tail.
func TestArgmaxMatchesPortable(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, n := range []int{0, 1, 31, 32, 33, 64, 95, 1000, 151936} {
		for c := range 9 {
			x := randFloats(r, n, 1)
			if n > 0 {
				switch c {
				case 1: // a tie far apart, the later one in a lower lane
					i, j := r.IntN(n), r.IntN(n)
					x[i], x[j] = 5, 5
				case 2: // NaNs everywhere, one of them where the max would be
					for i := range x {
						if r.IntN(3) == 0 {
							x[i] = nan
						}
					}
				case 3: // all NaN
					for i := range x {
						x[i] = nan
					}
				case 4: // all −Inf, and NaNs
					for i := range x {
						x[i] = float32(math.Inf(-1))
						if i%5 == 0 {
							x[i] = nan
						}
					}
				case 5: // −0 and +0 as the largest
					for i := range x {
						x[i] = -1
					}
					x[r.IntN(n)], x[r.IntN(n)] = float32(math.Copysign(0, -1)), 0
				case 6: // +Inf twice
					x[r.IntN(n)], x[r.IntN(n)] = inf, inf
				case 7: // the max in the tail only
					x[n-1] = 9
				case 8: // all equal
					for i := range x {
						x[i] = 2
					}
				}
			}
			if got, want := argmaxF32(x), argmaxF32Go(x); got != want {
				t.Fatalf("n %d case %d: argmax %d, portable %d", n, c, got, want)
			}
		}
	}
}

func checkBits(t *testing.T, name string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: [%d] = %g, portable %g", name, i, got[i], want[i])
		}
	}
}

func TestAddRowMatchesPortable(t *testing.T) {
	r := rand.New(rand.NewPCG(49, 50))
	for _, n := range []int{0, 1, 7, 8, 9, 1024, 1027} {
		x, y := randFloats(r, n, 1), randFloats(r, n+3, 1)
		got, want := append([]float32(nil), x...), append([]float32(nil), x...)
		addRow(got, y)
		addRowGo(want, y)
		checkBits(t, fmt.Sprintf("addRow n %d", n), got, want)
	}
}

// The RMS norms, which normalize up to eight rows at once, give each row
// the bits of the one-row formula (float64 sum of squares in element
// order, then x·scale·w): row counts past a group of eight and short of
// one, row lengths that are whole groups of eight elements (the assembly's
// sums) and that are not, with and without the residual.
func TestRMSNormGroupsMatchOneRow(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	h := newHarness(t, 2)
	for _, dim := range []int{97, 128, 1024} {
		for _, rows := range []int{1, 3, 8, 19, 64} {
			for _, residual := range []bool{false, true} {
				stride := dim + 5
				x0, r0 := randFloats(r, rows*stride, 3), randFloats(r, rows*stride, 3)
				wv := randFloats(r, dim, 1)
				xb, rb, out := f32bytes(x0), f32bytes(r0), Alloc(rows*stride*4)
				bs := binds{"x": xb, "weight": f32bytes(wv), "out": out}
				v := kernels.Variant(0)
				if residual {
					bs["residual"], v = rb, kernels.Residual
				}
				name := kernels.OpName(kernels.OpRMSNorm, v, dtype.F32)
				h.run(name, kernels.NormParams{Dim: uint32(dim), NRows: uint32(rows), NHeads: 1, Stride: uint32(stride), Eps: 1e-6}, nil, bs)
				got := f32s(out)
				for row := range rows {
					x := append([]float32(nil), x0[row*stride:row*stride+dim]...)
					if residual {
						for i := range x {
							x[i] += r0[row*stride+i]
						}
					}
					var ss float64
					for _, v := range x {
						ss += float64(v) * float64(v)
					}
					scale := float32(1 / math.Sqrt(ss/float64(dim)+float64(float32(1e-6))))
					for i, v := range x {
						want := v * scale * wv[i]
						if g := got[row*stride+i]; math.Float32bits(g) != math.Float32bits(want) {
							t.Fatalf("%s dim %d rows %d: [%d,%d] = %g, one row %g", name, dim, rows, row, i, g, want)
						}
					}
				}
			}
		}
	}
}

// ropeKV commands share a step's RoPE tables (one per token) across
// layers: a command with another configuration, another layout or other
// positions must not read the tables of the one before. Each command's
// outputs equal those of the same command on a fresh backend.
func TestRoPETablesAreSharedOnlyWhenTheyMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	const hd, nh, nkv, tokens, maxCtx = 32, 4, 2, 3, 64
	qs, kvs := nh*hd, nkv*hd
	q0, k0, v0 := randFloats(r, tokens*qs, 1), randFloats(r, tokens*kvs, 1), randFloats(r, tokens*kvs, 1)
	type run struct {
		theta float32
		neox  bool
		pos   uint32
	}
	exec := func(h *harness, c run) ([]byte, []byte) {
		op := kernels.OpHeadNormRoPEKVWrite
		v := kernels.NeoX
		if !c.neox {
			op, v = kernels.OpRoPEQKVWrite, 0
		}
		qo, kc, vc := Alloc(tokens*qs*4), Alloc(nkv*maxCtx*hd*2), Alloc(nkv*maxCtx*hd*2)
		bs := binds{"q": f32bytes(q0), "k": f32bytes(k0), "v": f32bytes(v0), "q_out": qo, "k_cache": kc, "v_cache": vc}
		if c.neox {
			bs["q_norm"], bs["k_norm"] = f32bytes(q0[:hd]), f32bytes(k0[:hd])
		}
		h.run(kernels.OpName(op, v, dtype.F32), kernels.RoPEQKVWriteParams{Position: c.pos, NTokens: tokens, NHeads: nh, NKVHeads: nkv,
			HeadDim: hd, HeadDimV: hd, RopeDim: hd, MaxCtx: maxCtx, QStride: uint32(qs), KVStride: uint32(kvs), OrigCtx: 4096,
			Theta: c.theta, FreqScale: 1, AttnFactor: 1, Eps: 1e-6}, consts{"head_dim": hd}, bs)
		return qo, kc
	}
	shared := newHarness(t, 2)
	for i, c := range []run{{1e4, true, 5}, {1e4, true, 5}, {1e6, true, 5}, {1e6, false, 5}, {1e6, false, 9}, {1e6, true, 9}} {
		gq, gk := exec(shared, c)
		wq, wk := exec(newHarness(t, 2), c)
		if string(gq) != string(wq) || string(gk) != string(wk) {
			t.Fatalf("command %d (%+v) after the others differs from it alone", i, c)
		}
	}
}
