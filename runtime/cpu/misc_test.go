package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
)

func TestEveryCatalogKernelIsRegistered(t *testing.T) {
	var all []string
	for _, k := range kernels.All() {
		all = append(all, k.Name)
	}
	if miss := kernels.Missing("cpu", all); len(miss) > 0 {
		t.Fatalf("the cpu backend lacks %v", miss)
	}
}

// Elementwise ops: float32 arithmetic on widened inputs; F32 within 1e-6
// relative of float64, F16 within its rounding (2^-11, stated 1e-3).
func TestElementwiseOps(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	h := newHarness(t, 2)
	const rows, cols, as, bs, os = 3, 50, 53, 57, 51
	gl := func(x float64) float64 {
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*x*(1+0.044715*x*x)))
	}
	sl := func(x float64) float64 { return x / (1 + math.Exp(-x)) }
	ops := []struct {
		op  kernels.Op
		ref func(a, b, bias float64) float64
	}{
		{kernels.OpAdd, func(a, b, _ float64) float64 { return a + b }},
		{kernels.OpMul, func(a, b, _ float64) float64 { return a * b }},
		{kernels.OpScale, func(a, _, _ float64) float64 { return a * 0.75 }},
		{kernels.OpSoftcap, func(a, _, _ float64) float64 { return 0.75 * math.Tanh(a/0.75) }},
		{kernels.OpSiLU, func(a, _, _ float64) float64 { return sl(a) }},
		{kernels.OpGELU, func(a, _, _ float64) float64 { return gl(a) }},
		{kernels.OpSiLUGate, func(a, b, _ float64) float64 { return sl(a) * b }},
		{kernels.OpGELUGate, func(a, b, _ float64) float64 { return gl(a) * b }},
		{kernels.OpBiasAdd, func(a, _, bias float64) float64 { return a + bias }},
		{kernels.OpCopy, func(a, _, _ float64) float64 { return a }},
	}
	for _, at := range acts() {
		a := actOf(at)
		for _, o := range ops {
			name := kernels.OpName(o.op, 0, at)
			t.Run(name, func(t *testing.T) {
				k, _ := kernels.Lookup(name)
				x0, y0, bv := randFloats(r, rows*as, 2), randFloats(r, rows*bs, 2), randFloats(r, cols, 1)
				xb, yb, out := actBytes(a, x0), actBytes(a, y0), Alloc(rows*os*a.size())
				xs, ys := actFloats(a, xb, rows*as), actFloats(a, yb, rows*bs)
				b := binds{}
				names := []string{}
				for _, bd := range k.Bindings[:k.ParamSlot] {
					names = append(names, bd.Name)
				}
				switch {
				case o.op == kernels.OpBiasAdd:
					b["x"], b["bias"] = xb, f32bytes(bv)
					out = xb
				case len(names) == 3:
					b[names[0]], b[names[1]], b["out"] = xb, yb, out
				default:
					b["x"], b["out"] = xb, out
				}
				ostride := os
				if o.op == kernels.OpBiasAdd {
					ostride = as
				}
				h.run(name, kernels.ElementwiseParams{NRows: rows, NCols: cols, AStride: as, BStride: bs, OutStride: uint32(ostride), Alpha: 0.75}, nil, b)
				got := actFloats(a, out, rows*ostride)
				for row := range rows {
					for i := range cols {
						want := o.ref(xs[row*as+i], ys[row*bs+i], float64(bv[i]))
						tol := 1e-6 * (1 + math.Abs(want))
						if a == actF16 {
							tol = 1e-3 * (1 + math.Abs(want))
						}
						if g := got[row*ostride+i]; !near(g, want, tol) {
							t.Fatalf("[%d,%d]: got %g, want %g", row, i, g, want)
						}
					}
				}
			})
		}
		t.Run(kernels.OpName(kernels.OpCopy, 0, at)+" last_row", func(t *testing.T) {
			x0 := randFloats(r, rows*as, 1)
			xb, out := actBytes(a, x0), Alloc(os*a.size())
			h.run(kernels.OpName(kernels.OpCopy, 0, at), kernels.ElementwiseParams{NRows: rows, NCols: cols, AStride: as, OutStride: os}, consts{"last_row": 1},
				binds{"x": xb, "out": out})
			if got, want := actFloats(a, out, cols), actFloats(a, xb, rows*as)[(rows-1)*as:][:cols]; !slices.Equal(got, want) {
				t.Fatalf("last row: got %v, want %v", got, want)
			}
		})
	}
	t.Run("convert_f16_to_f32", func(t *testing.T) {
		x0 := randFloats(r, rows*as, 3)
		xb, out := actBytes(actF16, x0), Alloc(rows*os*4)
		h.run("convert_f16_to_f32", kernels.ElementwiseParams{NRows: rows, NCols: cols, AStride: as, OutStride: os}, nil, binds{"x": xb, "out": out})
		xs, got := actFloats(actF16, xb, rows*as), actFloats(actF32, out, rows*os)
		for row := range rows {
			for i := range cols {
				if got[row*os+i] != xs[row*as+i] {
					t.Fatalf("[%d,%d]: got %g, want %g", row, i, got[row*os+i], xs[row*as+i])
				}
			}
		}
	})
}

func TestArgmaxTakesTheLowestIndexOfTheMax(t *testing.T) {
	h := newHarness(t, 1)
	for _, at := range acts() {
		a := actOf(at)
		l := actBytes(a, []float32{1, 5, float32(math.NaN()), 5, -2})
		ids := Alloc(16)
		h.run(kernels.OpName(kernels.OpArgmax, 0, at), kernels.ArgmaxParams{N: 5, OutSlot: 2}, nil, binds{"logits": l, "ids": ids})
		if got := u32s(ids)[2]; got != 1 {
			t.Fatalf("%v: argmax = %d, want 1", at, got)
		}
	}
}

// sample runs gumbel_topk then argmax over logits, returning the token.
func sample(h *harness, at dtype.Type, logits []float32, p kernels.SamplingParams) int {
	a := actOf(at)
	lb := actBytes(a, logits)
	ids := Alloc(8)
	p.Vocab = uint32(len(logits))
	h.run(kernels.OpName(kernels.OpGumbelTopK, 0, at), p, nil, binds{"logits": lb})
	h.run(kernels.OpName(kernels.OpArgmax, 0, at), kernels.ArgmaxParams{N: p.Vocab}, nil, binds{"logits": lb, "ids": ids})
	return int(u32s(ids)[0])
}

func TestGumbelSampling(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	h := newHarness(t, 1)
	for _, at := range acts() {
		logits := randFloats(r, 1000, 3)
		best := 0
		for i, v := range logits {
			if v > logits[best] {
				best = i
			}
		}
		t.Run(fmt.Sprintf("%v: temperature near 0 is argmax", at), func(t *testing.T) {
			for pos := range 20 {
				if got := sample(h, at, logits, kernels.SamplingParams{Seed: 1, Position: uint32(pos), Temperature: 1e-4, TopP: 1}); got != best {
					t.Fatalf("position %d: sampled %d, argmax %d", pos, got, best)
				}
			}
		})
		t.Run(fmt.Sprintf("%v: top_k 1 is argmax", at), func(t *testing.T) {
			for pos := range 20 {
				if got := sample(h, at, logits, kernels.SamplingParams{TopK: 1, Seed: 7, Position: uint32(pos), Temperature: 5, TopP: 1}); got != best {
					t.Fatalf("position %d: sampled %d, argmax %d", pos, got, best)
				}
			}
		})
		t.Run(fmt.Sprintf("%v: a seed and position give the same sample", at), func(t *testing.T) {
			p := kernels.SamplingParams{TopK: 50, Seed: 42, Position: 9, Temperature: 1.2, TopP: 0.9, MinP: 0.01}
			a, b := sample(h, at, logits, p), sample(h, at, logits, p)
			if a != b {
				t.Fatalf("sampled %d then %d", a, b)
			}
		})
	}
	t.Run("samples follow the tempered distribution", func(t *testing.T) {
		logits := []float32{0, 1, 2, 0.5}
		const T, n = 0.8, 20000
		counts := make([]int, len(logits))
		for pos := range n {
			counts[sample(h, dtype.F32, logits, kernels.SamplingParams{Seed: 3, Position: uint32(pos), Temperature: T, TopP: 1})]++
		}
		var z float64
		for _, l := range logits {
			z += math.Exp(float64(l) / T)
		}
		for i, l := range logits {
			p := math.Exp(float64(l)/T) / z
			sd := math.Sqrt(p * (1 - p) / n)
			if got := float64(counts[i]) / n; math.Abs(got-p) > 5*sd {
				t.Fatalf("token %d: frequency %.4f, probability %.4f (5σ = %.4f)", i, got, p, 5*sd)
			}
		}
	})
	t.Run("top_p and min_p keep what they promise", func(t *testing.T) {
		logits := []float32{3, 2.9, 0, -1, 2.95} // p ≈ .36 .33 .02 .007 .34 (+)
		seen := map[int]bool{}
		for pos := range 500 {
			seen[sample(h, dtype.F32, logits, kernels.SamplingParams{Seed: 5, Position: uint32(pos), Temperature: 1, TopP: 0.6})] = true
		}
		if len(seen) != 2 || !seen[0] || !seen[4] {
			t.Fatalf("top_p 0.6 sampled %v, want {0, 4}", seen)
		}
		clear(seen)
		for pos := range 500 {
			seen[sample(h, dtype.F32, logits, kernels.SamplingParams{Seed: 5, Position: uint32(pos), Temperature: 1, TopP: 1, MinP: 0.5})] = true
		}
		if len(seen) != 3 || seen[2] || seen[3] {
			t.Fatalf("min_p 0.5 sampled %v, want {0, 1, 4}", seen)
		}
	})
}

// A decode step's chain of bound commands, patched and run, allocates
// nothing.
func TestBoundChainDoesNotAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	h := newHarness(t, 2)
	const dim, vocab, nh, nkv, hd, maxCtx = 256, 64, 4, 2, 64, 32
	table, _ := weights(t, r, dtype.Q4_0, vocab, dim)
	wqkv, _ := weights(t, r, dtype.Q8_0, (nh+2*nkv)*hd, dim)
	wo, _ := weights(t, r, dtype.Q4_K, dim, nh*hd)
	wout, _ := weights(t, r, dtype.Q6_K, vocab, dim)
	ids := Alloc(4 * 9) // slots 0..8: argmax writes slot i+1 of the harness's 8
	x, xn, qkv, att, o := Alloc(dim*4), Alloc(dim*4), Alloc((nh+2*nkv)*hd*4), Alloc(nh*hd*4), Alloc(dim*4)
	logits := Alloc(vocab * 4)
	kc, vc := Alloc(nkv*maxCtx*hd*2), Alloc(nkv*maxCtx*hd*2)
	norm := f32bytes(randFloats(r, dim, 1))
	var execs []*Exec
	add := func(name string, params any, c consts, b binds, patches ...plans.Patch) {
		p, cmd := h.command(name, params, c, b)
		cmd.Patches = patches
		e, err := h.exec(p, cmd)
		if err != nil {
			t.Fatal(err)
		}
		execs = append(execs, e)
	}
	pp := func(kind plans.PatchKind, at uint32) plans.Patch {
		return plans.Patch{Kind: kind, Target: plans.PatchParam, At: at, Width: 4, Stride: 1}
	}
	add("embedding_lookup_q4_0_f32", kernels.EmbeddingParams{Dim: dim, Vocab: vocab, NTokens: 1, Scale: 1, OutStride: dim}, nil,
		binds{"table": table, "ids": ids, "out": x}, pp(plans.PatchToken, 8))
	add("rmsnorm_f32", kernels.NormParams{Dim: dim, NRows: 1, NHeads: 1, Stride: dim, Eps: 1e-6}, nil, binds{"x": x, "weight": norm, "out": xn})
	add("gemv_q8_0_f32", kernels.GEMVParams{N: (nh + 2*nkv) * hd, K: dim}, nil, binds{"w": wqkv, "x": xn, "y": qkv})
	add("rope_neox_qkv_write_f32", kernels.RoPEQKVWriteParams{NTokens: 1, NHeads: nh, NKVHeads: nkv, HeadDim: hd, HeadDimV: hd, RopeDim: hd, MaxCtx: maxCtx,
		QStride: nh * hd, KVStride: nkv * hd, Theta: 1e4, FreqScale: 1, AttnFactor: 1}, consts{"head_dim": hd},
		binds{"q": qkv, "k": qkv[nh*hd*4:], "v": qkv[(nh+nkv)*hd*4:], "q_out": qkv, "k_cache": kc, "v_cache": vc}, pp(plans.PatchPosition, 0))
	add("flash_attention_decode_f32", kernels.AttentionParams{NHeads: nh, NKVHeads: nkv, HeadDim: hd, HeadDimV: hd, MaxCtx: maxCtx, NTokens: 1,
		QStride: nh * hd, OStride: nh * hd, Scale: 0.125}, consts{"head_dim": hd, "head_dim_v": hd},
		binds{"q": qkv, "k_cache": kc, "v_cache": vc, "out": att}, pp(plans.PatchKVLength, 16), pp(plans.PatchPosition, 24))
	add("gemv_q4_k_f32", kernels.GEMVParams{N: dim, K: nh * hd}, nil, binds{"w": wo, "x": att, "y": o})
	add("residual_rmsnorm_f32", kernels.NormParams{Dim: dim, NRows: 1, NHeads: 1, Stride: dim, Eps: 1e-6}, nil, binds{"x": o, "residual": x, "weight": norm, "out": xn})
	add("gemv_q6_k_f32", kernels.GEMVParams{N: vocab, K: dim}, nil, binds{"w": wout, "x": xn, "y": logits})
	add("gumbel_topk_f32", kernels.SamplingParams{Vocab: vocab, TopK: 10, Seed: 1, Temperature: 0.7, TopP: 0.9, MinP: 0.05}, nil, binds{"logits": logits}, pp(plans.PatchPosition, 12))
	add("argmax_f32", kernels.ArgmaxParams{N: vocab}, nil, binds{"logits": logits, "ids": ids}, pp(plans.PatchArgmaxSlot, 4))

	step := 0
	run := func() {
		s := plans.Step{Index: uint32(step % 7), Pos: uint32(step % maxCtx), Batch: 1}
		for _, e := range execs {
			e.Patch(s)
			e.Run()
		}
		step++
	}
	run()
	if n := testing.AllocsPerRun(50, run); n != 0 {
		t.Fatalf("a bound decode step allocates %v times", n)
	}
	if got := u32s(ids)[7]; got >= vocab {
		t.Fatalf("argmax wrote token %d", got)
	}
}

func TestPatchesWriteWhatPlansSay(t *testing.T) {
	h := newHarness(t, 1)
	p, cmd := h.command("embedding_lookup_f32_f32", kernels.EmbeddingParams{Dim: 4, Vocab: 2, NTokens: 1, Scale: 1, OutStride: 4}, nil,
		binds{"table": Alloc(32), "ids": Alloc(64), "out": Alloc(16)})
	cmd.Patches = []plans.Patch{
		{Kind: plans.PatchToken, Target: plans.PatchParam, At: 8, Width: 4, Base: 1, Stride: 1},
		{Kind: plans.PatchToken, Target: plans.PatchBinding, At: 1, Stride: 4},
	}
	e, err := h.exec(p, cmd)
	if err != nil {
		t.Fatal(err)
	}
	s := plans.Step{Index: 3, Pos: 10, Batch: 2}
	e.Patch(s)
	var ep kernels.EmbeddingParams
	if err := kernels.Decode(e.Params(), &ep); err != nil {
		t.Fatal(err)
	}
	v := cmd.Patches[0].Values(s)
	if uint64(ep.TokenSlot) != v[0] {
		t.Fatalf("token wrote %d; plans says %v", ep.TokenSlot, v)
	}
	if got, want := e.slots[1].off, cmd.Patches[1].Values(s)[0]; got != want {
		t.Fatalf("binding patch set offset %d, want %d", got, want)
	}
}

// f2h against dtype's reference on a lattice of float32 bit patterns (every
// one with F2H_EXHAUSTIVE=1) and the boundaries of its fast ranges.
func TestF2HMatchesDtype(t *testing.T) {
	step := uint64(97)
	if os.Getenv("F2H_EXHAUSTIVE") != "" {
		step = 1
	}
	check := func(u uint32) {
		f := math.Float32frombits(u)
		if got, want := f2h(f), dtype.Float16bits(f); got != want {
			t.Fatalf("f2h(%#08x = %g) = %#04x, dtype %#04x", u, f, got, want)
		}
	}
	for u := uint64(0); u < 1<<32; u += step {
		check(uint32(u))
	}
	for _, b := range []uint32{0x387fffff, 0x38800000, 0x33000000, 0x33000001, 0x32ffffff, 0x477fefff, 0x477ff000, 0x477fe000, 0x7f800000, 0x7fc00000} {
		for d := uint32(0); d < 4; d++ {
			check(b - 2 + d)
			check(b - 2 + d | 1<<31)
		}
	}
}
