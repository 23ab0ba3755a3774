package cpu

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/akunu-dev/akunu/kernels"
)

// The decode attention that rotates its own q and k leaves the cache and
// the partial results that rope_qkv_write (or head_norm_rope_neox_kv_write)
// followed by flash_attention_decode_parallel leave, bit for bit: the two
// commands it replaces, with q_out between them. Positions in the first and
// in the last split, GQA groups of 1 and 2, frequency factors or none.
func TestAttnRoPEIsTheRopeAndTheAttention(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	h := newHarness(t, 3)
	const maxCtx, hd, splits = 64, 64, 2
	for _, k := range kernels.All() {
		if k.Op != kernels.OpAttentionDecodeRoPE {
			continue
		}
		norm := k.Variant&kernels.Norm != 0
		rname := kernels.OpName(kernels.OpRoPEQKVWrite, k.Variant&kernels.NeoX, k.Act)
		if norm {
			rname = kernels.OpName(kernels.OpHeadNormRoPEKVWrite, kernels.NeoX, k.Act)
		}
		for _, group := range []int{1, 2} {
			for _, pos := range []int{3, 50} {
				for _, factors := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s gqa=%d pos=%d factors=%v", k.Name, group, pos, factors), func(t *testing.T) {
						nkv := 2
						nh := nkv * group
						q, kk, v := actBytes(actF16, randFloats(r, nh*hd, 1)), actBytes(actF16, randFloats(r, nkv*hd, 1)), actBytes(actF16, randFloats(r, nkv*hd, 1))
						kc, vc := actBytes(actF16, randFloats(r, nkv*maxCtx*hd, 1)), actBytes(actF16, randFloats(r, nkv*maxCtx*hd, 1))
						qn, kn, ff := f32bytes(randFloats(r, hd, 1)), f32bytes(randFloats(r, hd, 1)), f32bytes(randFloats(r, hd/2, 1))
						p := kernels.AttentionRoPEParams{NHeads: uint32(nh), NKVHeads: uint32(nkv), HeadDim: hd, HeadDimV: hd, KVLen: uint32(pos + 1),
							MaxCtx: maxCtx, Position: uint32(pos), Scale: 0.125, RopeDim: hd, OrigCtx: 4096, Theta: 10000, FreqScale: 1, AttnFactor: 1, Eps: 1e-6}
						c := consts{"head_dim": hd, "head_dim_v": hd, "n_splits": splits, "has_factors": b2u(factors)}
						// the two commands, on copies
						kc2, vc2, qout := slices.Clone(kc), slices.Clone(vc), Alloc(len(q))
						rb := binds{"q": q, "k": kk, "v": v, "q_out": qout, "k_cache": kc2, "v_cache": vc2}
						if norm {
							rb["q_norm"], rb["k_norm"] = qn, kn
						}
						if factors {
							rb["factors"] = ff
						}
						h.run(rname, kernels.RoPEQKVWriteParams{Position: p.Position, NTokens: 1, NHeads: p.NHeads, NKVHeads: p.NKVHeads, HeadDim: hd,
							HeadDimV: hd, RopeDim: hd, MaxCtx: maxCtx, QStride: p.NHeads * hd, KVStride: p.NKVHeads * hd, OrigCtx: 4096,
							Theta: 10000, FreqScale: 1, AttnFactor: 1, Eps: 1e-6}, consts{"head_dim": hd, "has_factors": b2u(factors)}, rb)
						parts2 := Alloc(4 * nh * splits * (hd + 2))
						h.run(kernels.OpName(kernels.OpAttentionDecode, kernels.Parallel, k.Act), kernels.AttentionParams{NHeads: p.NHeads,
							NKVHeads: p.NKVHeads, HeadDim: hd, HeadDimV: hd, KVLen: p.KVLen, MaxCtx: maxCtx, Position: p.Position, NTokens: 1,
							QStride: p.NHeads * hd, OStride: p.NHeads * hd, Scale: 0.125}, c, binds{"q": qout, "k_cache": kc2, "v_cache": vc2, "partials": parts2})
						// the one command
						parts := Alloc(len(parts2))
						b := binds{"q": q, "k": kk, "v": v, "k_cache": kc, "v_cache": vc, "partials": parts}
						if norm {
							b["q_norm"], b["k_norm"] = qn, kn
						}
						if factors {
							b["factors"] = ff
						}
						h.run(k.Name, p, c, b)
						if !bytes.Equal(kc, kc2) || !bytes.Equal(vc, vc2) {
							t.Fatal("the caches differ from rope_qkv_write's")
						}
						if !bytes.Equal(parts, parts2) {
							t.Fatal("the partial results differ from the parallel attention's")
						}
					})
				}
			}
		}
	}
}
