package cpu

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
)

// The Rows forms of RoPE and the KV writes are the plain forms applied row
// by row, each row at its own position (and sequence slot): run both and
// compare every byte they write.
func TestRowsKernelsAreThePlainOnesRowByRow(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	const nh, nkv, hd, maxCtx, tokens, slots = 4, 2, 32, 24, 5, 3 // hd: whole Q8_0 blocks
	positions := []uint32{7, 0, 23, 7, 12}
	seqs := []uint32{2, 0, 1, 1, 2}
	for _, k := range kernels.All() {
		if k.Variant&kernels.Rows == 0 || k.Op == kernels.OpAttentionPrefill {
			continue // attention's Rows form is held to the exact softmax in attention_test.go
		}
		t.Run(k.Name, func(t *testing.T) {
			h := newHarness(t, 2)
			a := actOf(k.Act)
			plain := kernels.OpName(k.Op, k.Variant&^kernels.Rows, k.Act)
			posb, seqb := Alloc(4*tokens), Alloc(4*tokens)
			copy(u32s(posb), positions)
			copy(u32s(seqb), seqs)
			c := consts{"head_dim": hd}
			if k.Op == kernels.OpRoPE {
				x := randFloats(r, tokens*nh*hd, 1)
				rows := actBytes(a, x)
				p := kernels.RoPEParams{NTokens: tokens, NHeads: nh, HeadDim: hd, RopeDim: hd, Stride: nh * hd, Theta: 1e4, FreqScale: 1, AttnFactor: 1}
				h.run(k.Name, p, c, binds{"x": rows, "pos": posb, "seq": seqb})
				for t0 := range tokens {
					one := actBytes(a, x[t0*nh*hd:][:nh*hd])
					p1 := p
					p1.NTokens, p1.Position = 1, positions[t0]
					h.run(plain, p1, c, binds{"x": one})
					if got := rows[t0*nh*hd*a.size():][:nh*hd*a.size()]; !bytes.Equal(got, one) {
						t.Fatalf("row %d at %d differs from %s there", t0, positions[t0], plain)
					}
				}
				return
			}
			stride := (nh + 2*nkv) * hd
			x := randFloats(r, tokens*stride, 1)
			qkv := actBytes(a, x)
			qn, kn := f32bytes(randFloats(r, hd, 1)), f32bytes(randFloats(r, hd, 1))
			p := kernels.RoPEQKVWriteParams{NTokens: tokens, NHeads: nh, NKVHeads: nkv, HeadDim: hd, HeadDimV: hd, RopeDim: hd, MaxCtx: maxCtx,
				QStride: uint32(stride), KVStride: uint32(stride), Theta: 1e4, FreqScale: 1, AttnFactor: 1, Eps: 1e-6}
			slot := nkv * maxCtx * kvOf(k.Variant).rowBytes(hd) // bytes of one sequence slot
			kc, vc := Alloc(slots*slot), Alloc(slots*slot)
			qo := Alloc(tokens * nh * hd * a.size())
			p.QStride = uint32(stride)
			sz := a.size()
			bs := binds{"q": qkv, "k": qkv[nh*hd*sz:], "v": qkv[(nh+nkv)*hd*sz:], "q_out": qkv, "k_cache": kc, "v_cache": vc,
				"pos": posb, "seq": seqb}
			if k.Op == kernels.OpHeadNormRoPEKVWrite {
				bs["q_norm"], bs["k_norm"] = qn, kn
			}
			h.run(k.Name, p, c, bs)
			kc1, vc1 := Alloc(slots*slot), Alloc(slots*slot)
			for t0 := range tokens {
				one := actBytes(a, x[t0*stride:][:stride])
				p1 := p
				p1.NTokens, p1.Position = 1, positions[t0]
				s := int(seqs[t0]) * slot
				b1 := binds{"q": one, "k": one[nh*hd*sz:], "v": one[(nh+nkv)*hd*sz:], "q_out": one, "k_cache": kc1[s:], "v_cache": vc1[s:]}
				if k.Op == kernels.OpHeadNormRoPEKVWrite {
					b1["q_norm"], b1["k_norm"] = qn, kn
				}
				h.run(plain, p1, c, b1)
				if got := qkv[t0*stride*sz:][:nh*hd*sz]; !bytes.Equal(got, one[:nh*hd*sz]) {
					t.Fatalf("row %d: rotated q differs from %s at %d", t0, plain, positions[t0])
				}
			}
			if !bytes.Equal(kc, kc1) || !bytes.Equal(vc, vc1) {
				t.Fatalf("the KV cache differs from %s row by row, each in its own slot", plain)
			}
			_ = qo
		})
	}
}

// A row position past the cache or a slot past its end writes nothing and
// reads nothing: the runtime never asks for one, and a kernel must not
// fault if it did.
func TestRowsOutsideTheCacheAreSkipped(t *testing.T) {
	h := newHarness(t, 1)
	const nh, nkv, hd, maxCtx = 2, 1, 16, 8
	stride := (nh + 2*nkv) * hd
	qkv := f32bytes(randFloats(rand.New(rand.NewPCG(1, 2)), 2*stride, 1))
	kc, vc := Alloc(nkv*maxCtx*hd*2), Alloc(nkv*maxCtx*hd*2)
	posb, seqb := Alloc(8), Alloc(8)
	copy(u32s(posb), []uint32{maxCtx, 0})
	copy(u32s(seqb), []uint32{0, 5})
	p := kernels.RoPEQKVWriteParams{NTokens: 2, NHeads: nh, NKVHeads: nkv, HeadDim: hd, HeadDimV: hd, RopeDim: hd, MaxCtx: maxCtx,
		QStride: uint32(stride), KVStride: uint32(stride), Theta: 1e4, FreqScale: 1, AttnFactor: 1}
	name := kernels.OpName(kernels.OpRoPEQKVWrite, kernels.Rows, dtype.F32)
	h.run(name, p, consts{"head_dim": hd}, binds{"q": qkv, "k": qkv[nh*hd*4:], "v": qkv[(nh+nkv)*hd*4:], "q_out": qkv,
		"k_cache": kc, "v_cache": vc, "pos": posb, "seq": seqb})
	if !bytes.Equal(kc, make([]byte, len(kc))) || !bytes.Equal(vc, make([]byte, len(vc))) {
		t.Fatal("a row outside the cache wrote into it")
	}
	out := Alloc(2 * nh * hd * 4)
	ap := kernels.AttentionParams{NHeads: nh, NKVHeads: nkv, HeadDim: hd, HeadDimV: hd, MaxCtx: maxCtx, NTokens: 2,
		QStride: uint32(stride), OStride: nh * hd, Scale: 0.25}
	h.run(kernels.OpName(kernels.OpAttentionPrefill, kernels.Rows, dtype.F32), ap, consts{"head_dim": hd, "head_dim_v": hd},
		binds{"q": qkv, "k_cache": kc, "v_cache": vc, "out": out, "pos": posb, "seq": seqb})
	for i, v := range f32s(out) {
		if v != 0 {
			t.Fatalf("output %d of a query outside the cache is %g, want 0", i, v)
		}
	}
}

func TestGatherRowsAndArgmaxOfSeveralRows(t *testing.T) {
	h := newHarness(t, 1)
	r := rand.New(rand.NewPCG(5, 6))
	for _, at := range acts() {
		a := actOf(at)
		const rows, cols, as, os = 6, 10, 12, 11
		x := randFloats(r, rows*as, 1)
		xb := actBytes(a, x)
		idx := Alloc(16)
		copy(u32s(idx), []uint32{5, 0, 5, 9}) // 9 lies past the batch: zeros
		out := Alloc(4 * os * a.size())
		h.run(kernels.OpName(kernels.OpGatherRows, 0, at), kernels.ElementwiseParams{NRows: 4, NCols: cols, AStride: as, OutStride: os}, nil,
			binds{"x": xb, "rows": idx, "out": out})
		got, xs := actFloats(a, out, 4*os), actFloats(a, xb, rows*as)
		for j, src := range []int{5, 0, 5, -1} {
			for i := range cols {
				want := 0.0
				if src >= 0 {
					want = xs[src*as+i]
				}
				if got[j*os+i] != want {
					t.Fatalf("%v: out[%d][%d] = %g, want %g", at, j, i, got[j*os+i], want)
				}
			}
		}
		// argmax of the gathered rows, one id per row, from slot 1.
		l := actBytes(a, []float32{1, 9, 2 /**/, 7, 7, 0 /**/, -1, -3, -2})
		ids := Alloc(16)
		h.run(kernels.OpName(kernels.OpArgmax, 0, at), kernels.ArgmaxParams{N: 3, OutSlot: 1, NRows: 3}, nil, binds{"logits": l, "ids": ids})
		if got := u32s(ids)[1:4]; got[0] != 1 || got[1] != 0 || got[2] != 0 {
			t.Fatalf("%v: argmax of three rows = %v, want [1 0 0]", at, got)
		}
	}
}
