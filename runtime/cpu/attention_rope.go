package cpu

import (
	"fmt"
	"unsafe"

	"github.com/akunu-dev/akunu/kernels"
)

// attnRoPE is flash_attention_decode_rope_*: the decode attention that
// rotates its own q and k. Its twin is the two commands it replaces, run
// one after the other on views of this command's buffers: rope_qkv_write's
// (or head_norm_rope_neox_kv_write's) twin, q rotated into a scratch q_out
// and k, v written into the cache, then flash_attention_decode_parallel's
// twin reading that q_out. The GPU kernel rounds its rotated q to half as
// rope_qkv_write stores q_out, so the two compute the same values.
type attnRoPE struct {
	p          kernels.AttentionRoPEParams
	rope       *ropeKV
	attn       *attention
	re, ae     Exec
	rmap, amap []int // the views' slots: this command's slot, or −1 for q_out
	qout       []byte
}

func bindAttnRoPE(k *kernels.Kernel, c constants) (impl, unsafe.Pointer) {
	a := &attnRoPE{}
	rname := kernels.OpName(kernels.OpRoPEQKVWrite, k.Variant&kernels.NeoX, k.Act)
	if k.Variant&kernels.Norm != 0 {
		rname = kernels.OpName(kernels.OpHeadNormRoPEKVWrite, kernels.NeoX, k.Act)
	}
	rk, _ := kernels.Lookup(rname) // the catalog has both (TestEveryAttnRoPEHasItsParts)
	ak, _ := kernels.Lookup(kernels.OpName(kernels.OpAttentionDecode, kernels.Parallel, k.Act))
	ri, rp := bindRoPEKV(rk, sub(rk, c))
	ai, ap := bindAttention(ak, sub(ak, c))
	a.rope, a.attn = ri.(*ropeKV), ai.(*attention)
	a.re = Exec{Kernel: rk, impl: ri, params: rp, psize: rk.Params.Size, slots: make([]slot, len(rk.Bindings))}
	a.ae = Exec{Kernel: ak, impl: ai, params: ap, psize: ak.Params.Size, slots: make([]slot, len(ak.Bindings))}
	a.rmap, a.amap = viewSlots(rk, k, "q_out"), viewSlots(ak, k, "q")
	return a, unsafe.Pointer(&a.p)
}

// sub is c for kernel k: the values of the constants k has, by name.
func sub(k *kernels.Kernel, c constants) constants {
	s := constants{k: k, vals: make([]uint32, len(k.Constants)), set: make([]bool, len(k.Constants))}
	for i, kc := range k.Constants {
		for j, pc := range c.k.Constants {
			if pc.Name == kc.Name && j < len(c.set) && c.set[j] {
				s.vals[i], s.set[i] = c.vals[j], true
			}
		}
	}
	return s
}

// viewSlots maps each binding of part to the slot of whole that has its
// name; scratch (the q that rope_qkv_write writes and the attention
// reads), and a name whole has not, map to −1: the scratch q.
func viewSlots(part, whole *kernels.Kernel, scratch string) []int {
	m := make([]int, len(part.Bindings))
	for i, b := range part.Bindings {
		m[i] = -1
		for _, w := range whole.Bindings {
			if w.Name == b.Name && b.Name != scratch {
				m[i] = w.Slot
			}
		}
	}
	return m
}

func (a *attnRoPE) prepare(e *Exec) error {
	p := &a.p
	if p.HeadDim == 0 || p.NKVHeads == 0 || p.NHeads%p.NKVHeads != 0 {
		return fmt.Errorf("heads %d of %d, kv heads %d: %w", p.NHeads, p.HeadDim, p.NKVHeads, ErrUnsupported)
	}
	a.qout = Alloc(int(p.NHeads*p.HeadDim) * a.attn.act.size())
	a.re.b, a.ae.b, a.re.Label, a.ae.Label = e.b, e.b, e.Label, e.Label
	a.views(e)
	if err := a.rope.prepare(&a.re); err != nil {
		return err
	}
	return a.attn.prepare(&a.ae)
}

// views points the two commands at this one's buffers and parameters.
func (a *attnRoPE) views(e *Exec) {
	for _, v := range []struct {
		x *Exec
		m []int
	}{{&a.re, a.rmap}, {&a.ae, a.amap}} {
		for i, s := range v.m {
			switch {
			case s >= 0 && s < len(e.slots):
				v.x.slots[i] = e.slots[s]
			case s < 0:
				v.x.slots[i] = slot{buf: a.qout}
			}
		}
	}
	p := &a.p
	a.rope.p = kernels.RoPEQKVWriteParams{Position: p.Position, NTokens: 1, NHeads: p.NHeads, NKVHeads: p.NKVHeads,
		HeadDim: p.HeadDim, HeadDimV: p.HeadDimV, RopeDim: p.RopeDim, MaxCtx: p.MaxCtx, QStride: p.NHeads * p.HeadDim,
		KVStride: p.NKVHeads * max(p.HeadDim, p.HeadDimV), OrigCtx: p.OrigCtx, Theta: p.Theta, FreqScale: p.FreqScale,
		AttnFactor: p.AttnFactor, ExtFactor: p.ExtFactor, BetaFast: p.BetaFast, BetaSlow: p.BetaSlow, Eps: p.Eps}
	a.attn.p = kernels.AttentionParams{NHeads: p.NHeads, NKVHeads: p.NKVHeads, HeadDim: p.HeadDim, HeadDimV: p.HeadDimV,
		KVLen: p.KVLen, MaxCtx: p.MaxCtx, Position: p.Position, NTokens: 1, Window: p.Window, QStride: p.NHeads * p.HeadDim,
		OStride: p.NHeads * p.HeadDimV, Scale: p.Scale, Softcap: p.Softcap}
}

func (a *attnRoPE) run(e *Exec) {
	a.views(e) // this step's positions and binding offsets
	a.rope.run(&a.re)
	a.attn.run(&a.ae)
}
