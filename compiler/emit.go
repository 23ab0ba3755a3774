package compiler

import (
	"fmt"
	"slices"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/specs"
)

// Sampling defaults written into the sampled program's gumbel_topk
// parameters. They are static per generation: the runtime rewrites the
// fields (temperature, top_k, top_p, min_p, seed) before a run; only the
// position is patched per token.
const (
	defaultTopK        = 40
	defaultTopP        = 0.95
	defaultMinP        = 0.05
	defaultTemperature = 0.8
)

// emitPass writes the header, the model and every program's commands.
//
// Assumes: kernels and buffers.
// Guarantees: one command per selected kernel, in node order; pipelines in
// first-use order (decode first); bindings at the kernel's slots (a
// conditional binding only when its constant is true), each with the bytes
// it touches; parameters encoded inline from the kernel's struct; grid,
// threadgroup and threadgroup memory from the kernel's geometry rule;
// patches for every patchable field the program changes per replay.
func emitPass(s *state) (string, error) {
	p := s.plan
	if err := s.header(); err != nil {
		return "", err
	}
	total := 0
	for _, pr := range s.progs {
		e := &emitter{s: s, p: pr, st: s.scratch.values[pr.g]}
		for i, n := range pr.g.Nodes {
			if err := e.node(n, pr.kernels[i]); err != nil {
				return "", fmt.Errorf("%s %s: %w", pr.name, n.base().Label, err)
			}
		}
		p.Programs = append(p.Programs, plans.Program{Name: pr.name, Kind: pr.kind, Batch: uint32(pr.rows),
			OutRows: uint32(pr.outRows), Commands: e.cmds})
		total += len(e.cmds)
	}
	var read uint64
	first := &p.Programs[0]
	for _, c := range first.Commands {
		read += c.BytesRead
	}
	return fmt.Sprintf("%d programs, %d commands, %d pipelines; %s: %d commands, %d bytes read per replay",
		len(p.Programs), total, len(p.Pipelines), first.Name, len(first.Commands), read), nil
}

type emitter struct {
	s    *state
	p    *program
	st   []storage
	cmds []plans.Command
	// normParts: the partials the last _res GEMV wrote (its threadgroups)
	normParts uint32
}

// bref is what a binding binds: a buffer, a byte offset, the bytes touched.
type bref struct {
	buf      uint32
	off, len uint64
}

// act is the binding of value v: its scratch buffer from its column, the
// bytes of its rows.
func (e *emitter) act(v ValueID) bref {
	st := e.st[v]
	sl := e.s.scratch.slots[st.slot]
	b := uint64(e.s.act.BlockBytes())
	rows := e.p.rowsOf(v)
	w := e.p.g.Values[v].Width
	return bref{buf: sl.buf, off: uint64(st.col) * b, len: uint64((rows-1)*st.stride+w) * b}
}

func (e *emitter) stride(v ValueID) uint32 { return uint32(e.st[v].stride) }

func (e *emitter) weight(name string) bref {
	i := e.s.weights[name]
	return bref{buf: i, len: e.s.plan.Buffers[i].Size}
}

func (e *emitter) whole(i uint32) bref { return bref{buf: i, len: e.s.plan.Buffers[i].Size} }

// actRead is the activation bytes a command reads from values vs.
func (e *emitter) actRead(vs ...ValueID) uint64 {
	var n uint64
	for _, v := range vs {
		n += uint64(e.p.rowsOf(v)*e.p.g.Values[v].Width) * uint64(e.s.act.BlockBytes())
	}
	return n
}

// rowClass says which count a command's "batch" field holds, and so which
// patch sets it: none in a one-token program, the batch's rows, or (after
// the gather) its output rows.
type rowClass uint8

const (
	rowsFixed rowClass = iota
	rowsBatch
	rowsOut
)

// class is the row class of a command over value v.
func (e *emitter) class(v ValueID) rowClass {
	switch {
	case !e.p.batch():
		return rowsFixed
	case e.p.g.Values[v].Out:
		return rowsOut
	}
	return rowsBatch
}

// emit appends one command of kernel k.
func (e *emitter) emit(n Node, k *kernels.Kernel, sh kernels.Shape, params any, binds map[string]bref, rc rowClass, read uint64) error {
	l, err := k.Geometry(sh, e.s.tuning)
	if err != nil {
		return err
	}
	consts := make([]plans.Constant, len(l.Constants))
	on := map[string]bool{}
	for i, c := range l.Constants {
		t := plans.ConstU32
		if c.Type == kernels.ConstBool {
			t = plans.ConstBool
			on[c.Name] = c.Value != 0
		}
		consts[i] = plans.Constant{Index: uint32(c.Index), Type: t, Value: c.Value}
	}
	c := plans.Command{Label: n.base().Label, Rule: n.base().Rule, Pipeline: e.s.plan.AddPipeline(k.Name, consts...),
		ParamsSlot: uint32(k.ParamSlot), ThreadgroupMemory: uint32(l.TGMem), BytesRead: read}
	for d := range 3 {
		c.Grid[d], c.Threadgroup[d] = uint32(l.Grid[d]), uint32(l.Threadgroup[d])
	}
	for _, b := range k.Bindings {
		if b.Role == kernels.RoleParam || b.When != "" && !on[b.When] {
			continue
		}
		r, ok := binds[b.Name]
		if !ok {
			return fmt.Errorf("%s: nothing bound to %s", k.Name, b.Name)
		}
		c.Bindings = append(c.Bindings, plans.Binding{Slot: uint32(b.Slot), Buffer: r.buf, Offset: r.off, Length: r.len})
	}
	c.Params = kernels.Encode(params)
	c.Patches = e.patches(k, rc)
	if !e.p.batch() {
		// A decode step's KV bindings move to its sequence slot: the
		// cache holds the slots back to back, a KV buffer's size apart.
		for bi, b := range c.Bindings {
			if kb := k.Bindings[b.Slot]; kb.Role == kernels.RoleKV {
				c.Patches = append(c.Patches, plans.Patch{Kind: plans.PatchSeq, Target: plans.PatchBinding, At: uint32(bi),
					Base: b.Offset, Stride: e.s.plan.Buffers[b.Buffer].Size})
			}
		}
	}
	e.cmds = append(e.cmds, c)
	return nil
}

// patches maps the kernel's patchable fields to the plan's patch kinds for
// this program. Decode patches token, position, kv_len and out_slot and
// leaves batch at 1. A batch patches batch with its rows, or its output
// rows after the gather, and nothing else: its RoPE, KV writes and
// attention read each row's position from io.positions, its embedding
// reads from slot 0 and its argmax writes from slot 0.
func (e *emitter) patches(k *kernels.Kernel, rc rowClass) []plans.Patch {
	decode := !e.p.batch()
	var out []plans.Patch
	for role, at := range k.Patchable {
		var kind plans.PatchKind
		switch {
		case role == "token" && decode:
			kind = plans.PatchToken
		case role == "position" && decode:
			kind = plans.PatchPosition
		case role == "kv_len" && decode:
			kind = plans.PatchKVLength
		case role == "out_slot" && decode:
			kind = plans.PatchArgmaxSlot
		case role == "batch" && rc == rowsBatch:
			kind = plans.PatchBatchLength
		case role == "batch" && rc == rowsOut:
			kind = plans.PatchOutCount
		default:
			continue
		}
		out = append(out, plans.Patch{Kind: kind, Target: plans.PatchParam, At: uint32(at), Width: 4, Stride: 1})
	}
	slices.SortFunc(out, func(a, b plans.Patch) int { return int(a.At) - int(b.At) })
	return out
}

// rows adds the bindings of a Rows kernel: each row's position and
// sequence slot.
func (e *emitter) rows(binds map[string]bref) map[string]bref {
	if e.p.batch() {
		n := uint64(4 * e.p.rows)
		binds["pos"] = bref{buf: e.s.scratch.pos, len: n}
		binds["seq"] = bref{buf: e.s.scratch.seqs, len: n}
	}
	return binds
}

// node emits the commands of one node.
func (e *emitter) node(n Node, ks []*kernels.Kernel) error {
	s, g := e.s, e.p.g
	b := n.base()
	switch n := n.(type) {
	case *Split:
		return nil
	case *Embed:
		out := b.Out[0]
		rows, w := e.p.rowsOf(out), g.Values[out].Width
		t := s.tensors[n.Table]
		rowBytes, _ := t.Type.RowBytes(int64(t.Dims[0]))
		ids := e.whole(s.scratch.tokens)
		switch n.Ids {
		case specs.IdsPositions:
			if !e.p.batch() {
				return fmt.Errorf("%w: an embedding of positions in a one-token program", ErrUnsupported)
			}
			ids = bref{buf: s.scratch.pos, len: 4 * uint64(e.p.rows)}
		case specs.IdsZeros:
			ids = bref{buf: s.scratch.zeros, len: 4 * uint64(e.p.rows)}
		}
		return e.emit(n, ks[0], kernels.Shape{Tokens: rows, Dim: w},
			kernels.EmbeddingParams{Dim: uint32(w), Vocab: uint32(t.Dims[1]), NTokens: uint32(rows), Scale: float32(n.Scale), OutStride: e.stride(out)},
			map[string]bref{"table": e.weight(n.Table), "ids": ids, "out": e.act(out)},
			e.class(out), uint64(rows)*(uint64(rowBytes)+4))
	case *Norm:
		x, out := b.In[0], b.Out[0]
		binds := map[string]bref{"x": e.act(x), "weight": e.weight(n.Weight)}
		read := e.actRead(x) + e.weight(n.Weight).len
		if n.Residual {
			binds["residual"] = e.act(b.In[1])
			out = b.Out[1]
			read += e.actRead(b.In[1])
		}
		if n.Bias != "" {
			binds["bias"] = e.weight(n.Bias)
			read += e.weight(n.Bias).len
		}
		binds["out"] = e.act(out)
		if e.stride(x) != e.stride(out) || n.Residual && e.stride(b.In[1]) != e.stride(x) {
			return fmt.Errorf("%w: the norm's input and output rows have different strides (%d, %d)", ErrUnsupported, e.stride(x), e.stride(out))
		}
		rows, w := e.p.rowsOf(x), g.Values[x].Width
		return e.emit(n, ks[0], kernels.Shape{Tokens: rows, Dim: w, Bias: n.Bias != ""},
			kernels.NormParams{Dim: uint32(w), NRows: uint32(rows), NHeads: 1, Stride: e.stride(x), Eps: float32(n.Eps)},
			binds, e.class(x), read)
	case *HeadNorm:
		x := b.In[0]
		rows := e.p.rowsOf(x)
		return e.emit(n, ks[0], kernels.Shape{Tokens: rows, Heads: n.Heads, Dim: n.HeadDim},
			kernels.NormParams{Dim: uint32(n.HeadDim), NRows: uint32(rows), NHeads: uint32(n.Heads), Stride: e.stride(x), Eps: float32(n.Eps)},
			map[string]bref{"x": e.act(x), "weight": e.weight(n.Weight)}, e.class(x), e.actRead(x)+e.weight(n.Weight).len)
	case *MatMul:
		return e.matmul(n, ks[0])
	case *Elementwise:
		return e.elementwise(n, ks[0])
	case *Rope:
		x := b.In[0]
		rows := e.p.rowsOf(x)
		binds := e.rows(map[string]bref{"x": e.act(x)})
		f := e.factors(n.RopeArgs)
		if f != "" {
			binds["factors"] = e.weight(f)
		}
		pr := s.ropeParams(n.RopeArgs)
		return e.emit(n, ks[0], kernels.Shape{Tokens: rows, Heads: n.Heads, HeadDim: n.HeadDim, Factors: f != ""},
			kernels.RoPEParams{NTokens: uint32(rows), NHeads: uint32(n.Heads), HeadDim: uint32(n.HeadDim), RopeDim: pr.RopeDim,
				Stride: e.stride(x), OrigCtx: pr.OrigCtx, Theta: pr.Theta, FreqScale: pr.FreqScale, AttnFactor: pr.AttnFactor,
				ExtFactor: pr.ExtFactor, BetaFast: pr.BetaFast, BetaSlow: pr.BetaSlow},
			binds, e.class(x), e.actRead(x))
	case *RopeKV:
		q, k, v := b.In[0], b.In[1], b.In[2]
		if e.stride(k) != e.stride(v) {
			return fmt.Errorf("%w: k and v rows have different strides (%d, %d)", ErrUnsupported, e.stride(k), e.stride(v))
		}
		rows := e.p.rowsOf(q)
		kv := s.scratch.kv[n.KVLayer]
		binds := e.rows(map[string]bref{"q": e.act(q), "k": e.act(k), "v": e.act(v), "q_out": e.act(b.Out[0]),
			"k_cache": e.whole(kv[0]), "v_cache": e.whole(kv[1])})
		read := e.actRead(q, k, v)
		if n.QNorm != "" {
			binds["q_norm"], binds["k_norm"] = e.weight(n.QNorm), e.weight(n.KNorm)
			read += e.weight(n.QNorm).len + e.weight(n.KNorm).len
		}
		f := e.factors(n.RopeArgs)
		if f != "" {
			binds["factors"] = e.weight(f)
			read += e.weight(f).len
		}
		pr := s.ropeParams(n.RopeArgs)
		pr.NTokens, pr.NHeads, pr.NKVHeads = uint32(rows), uint32(n.Heads), uint32(n.KVHeads)
		pr.HeadDim, pr.HeadDimV, pr.MaxCtx = uint32(n.HeadDim), uint32(n.HeadDimV), uint32(s.ctx)
		pr.QStride, pr.KVStride, pr.Eps = e.stride(q), e.stride(k), float32(n.Eps)
		return e.emit(n, ks[0], kernels.Shape{Tokens: rows, Heads: n.Heads, KVHeads: n.KVHeads, HeadDim: n.HeadDim, HeadDimV: n.HeadDimV, Factors: f != ""},
			pr, binds, e.class(q), read)
	case *Attention:
		if n.Rope != nil {
			return e.attnRoPE(n, b, ks)
		}
		q, out := b.In[0], b.Out[0]
		kv := s.scratch.kv[n.KVLayer]
		prm := e.attnParams(n, e.p.rows, e.stride(q), out)
		sh := attnShape(s, e.p, n)
		read := e.actRead(q) + e.whole(kv[0]).len + e.whole(kv[1]).len
		binds := e.rows(map[string]bref{"q": e.act(q), "k_cache": e.whole(kv[0]), "v_cache": e.whole(kv[1]), "out": e.act(out)})
		if n.NonCausal {
			// Each row attends up to its input's last position rather
			// than its own: the same kernel, another position buffer.
			if !e.p.batch() || s.scratch.seqLast == 0 {
				return fmt.Errorf("%w: non-causal attention outside an embedding program", ErrUnsupported)
			}
			binds["pos"] = bref{buf: s.scratch.seqLast, len: 4 * uint64(e.p.rows)}
		}
		if len(ks) == 2 {
			binds["partials"] = e.whole(s.scratch.parts)
			if err := e.emit(n, ks[0], sh, prm, binds, e.class(q), read); err != nil {
				return err
			}
			return e.emit(n, ks[1], sh, prm, map[string]bref{"partials": e.whole(s.scratch.parts), "out": e.act(out)},
				rowsFixed, e.whole(s.scratch.parts).len)
		}
		return e.emit(n, ks[0], sh, prm, binds, e.class(q), read)
	case *Tail:
		return e.tail(n, ks[0])
	case *Route, *MatMulID, *MoESum:
		return e.moe(n, ks[0])
	}
	return fmt.Errorf("%w: cannot emit %s", ErrUnsupported, n.Kind())
}

// attnRoPE emits the decode attention that rotates its own q and k (the
// attn_rope rule): flash_attention_decode_rope_* over the unrotated q, k
// and v, writing the cache and the partial results, then the reduce.
func (e *emitter) attnRoPE(n *Attention, b *Base, ks []*kernels.Kernel) error {
	s, r := e.s, n.Rope
	q, k, v, out := b.In[0], b.In[1], b.In[2], b.Out[0]
	if len(ks) != 2 || e.p.batch() || !s.scratch.hasPart {
		return fmt.Errorf("%w: the rotating attention outside decode", ErrUnsupported)
	}
	kv := s.scratch.kv[n.KVLayer]
	rp := s.ropeParams(r.RopeArgs)
	prm := kernels.AttentionRoPEParams{NHeads: uint32(n.Heads), NKVHeads: uint32(n.KVHeads), HeadDim: uint32(n.HeadDim),
		HeadDimV: uint32(n.HeadDimV), MaxCtx: uint32(s.ctx), Window: uint32(n.Window), Scale: float32(n.Scale), Softcap: float32(n.Softcap),
		RopeDim: rp.RopeDim, OrigCtx: rp.OrigCtx, Theta: rp.Theta, FreqScale: rp.FreqScale, AttnFactor: rp.AttnFactor,
		ExtFactor: rp.ExtFactor, BetaFast: rp.BetaFast, BetaSlow: rp.BetaSlow, Eps: float32(r.Eps)}
	binds := map[string]bref{"q": e.act(q), "k": e.act(k), "v": e.act(v), "k_cache": e.whole(kv[0]), "v_cache": e.whole(kv[1]),
		"partials": e.whole(s.scratch.parts)}
	read := e.actRead(q, k, v) + e.whole(kv[0]).len + e.whole(kv[1]).len
	if r.QNorm != "" {
		binds["q_norm"], binds["k_norm"] = e.weight(r.QNorm), e.weight(r.KNorm)
		read += e.weight(r.QNorm).len + e.weight(r.KNorm).len
	}
	sh := attnShape(s, e.p, n)
	if f := e.factors(r.RopeArgs); f != "" {
		binds["factors"] = e.weight(f)
		read += e.weight(f).len
		sh.Factors = true
	}
	if err := e.emit(n, ks[0], sh, prm, binds, e.class(q), read); err != nil {
		return err
	}
	red := e.attnParams(n, 1, uint32(n.Heads*n.HeadDim), out)
	return e.emit(n, ks[1], sh, red, map[string]bref{"partials": e.whole(s.scratch.parts), "out": e.act(out)},
		rowsFixed, e.whole(s.scratch.parts).len)
}

// attnParams is attention n's parameter struct for rows tokens whose q
// rows lie qStride elements apart, writing out.
func (e *emitter) attnParams(n *Attention, rows int, qStride uint32, out ValueID) kernels.AttentionParams {
	return kernels.AttentionParams{NHeads: uint32(n.Heads), NKVHeads: uint32(n.KVHeads), HeadDim: uint32(n.HeadDim),
		HeadDimV: uint32(n.HeadDimV), MaxCtx: uint32(e.s.ctx), NTokens: uint32(rows), Window: uint32(n.Window),
		QStride: qStride, OStride: e.stride(out), Scale: float32(n.Scale), Softcap: float32(n.Softcap)}
}

func (e *emitter) matmul(n *MatMul, k *kernels.Kernel) error {
	s := e.s
	w := e.weight(n.Weights[0])
	var bias bref
	if n.Concat {
		w = e.whole(s.derived[n.Label+".weight"])
		if len(n.Biases) > 0 {
			bias = e.whole(s.derived[n.Label+".bias"])
		}
	} else if len(n.Biases) > 0 {
		bias = e.weight(n.Biases[0])
	}
	if i, ok := s.repacked(n); ok {
		w = e.whole(i)
	}
	if i, ok := s.planar(n); ok && k.Variant&kernels.Planar != 0 {
		w = e.whole(i)
	}
	out := n.Out[0]
	if n.Residual { // Out = [res, y]
		out = n.Out[1]
	}
	rows := e.p.rowsOf(out)
	y := e.act(out)
	if n.Concat && !n.GLU { // the whole stacked row, not just its first part
		b := uint64(s.act.BlockBytes())
		y.len = uint64((rows-1)*e.st[out].stride+n.N()) * b
	}
	binds := map[string]bref{"w": w, "y": y}
	read := w.len + bias.len
	if len(n.Biases) > 0 {
		binds["bias"] = bias
	}
	if n.SiLU {
		binds["gate"], binds["up"] = e.act(n.In[0]), e.act(n.In[1])
		read += e.actRead(n.In...)
	} else {
		binds["x"] = e.act(n.In[0])
		read += e.actRead(n.In[0])
	}
	vec := aligned16(binds["x"], binds["gate"], binds["up"])
	sh := kernels.Shape{Tokens: rows, N: n.N(), K: n.K, Bias: len(n.Biases) > 0, VecX: vec}
	prm := kernels.GEMVParams{N: uint32(n.N()), K: uint32(n.K), Eps: float32(n.NormEps)}
	switch { // the norm_fold rule's forms: a _res GEMV's threadgroups each write a partial Σres², the _norm GEMV after it adds them
	case n.Residual:
		l, err := k.Geometry(sh, s.tuning)
		if err != nil {
			return fmt.Errorf("%s: %w", n.Label, err)
		}
		binds["res"], binds["norm_w"], binds["partials"] = e.act(n.Out[0]), e.weight(n.NormW), e.whole(s.scratch.normParts)
		read += e.actRead(n.In[1]) + binds["norm_w"].len
		prm.Parts, e.normParts = uint32(l.Grid[0]), uint32(l.Grid[0])
	case n.Norm:
		if e.normParts == 0 {
			return fmt.Errorf("%s: %w: a norm-folded GEMV with no residual GEMV before it", n.Label, ErrUnsupported)
		}
		binds["partials"] = e.whole(s.scratch.normParts)
		read += uint64(e.normParts) * 4
		prm.Parts = e.normParts
	}
	if k.Op == kernels.OpGEMV {
		return e.emit(n, k, sh, prm, binds, rowsFixed, read)
	}
	sh.VecX = sh.VecX && e.stride(n.In[0])%8 == 0
	return e.emit(n, k, sh, kernels.GEMMParams{M: uint32(rows), N: uint32(n.N()), K: uint32(n.K),
		LDA: e.stride(n.In[0]), LDC: e.stride(out)}, binds, e.class(out), read)
}

func (e *emitter) elementwise(n *Elementwise, k *kernels.Kernel) error {
	in := n.In[0]
	rows, w := e.p.rowsOf(in), e.p.g.Values[in].Width
	prm := kernels.ElementwiseParams{NRows: uint32(rows), NCols: uint32(w), AStride: e.stride(in), Alpha: float32(n.Alpha)}
	binds := map[string]bref{}
	read := e.actRead(n.In...)
	switch n.Op {
	case EwBiasAdd:
		binds["x"], binds["bias"] = e.act(in), e.weight(n.Bias)
		read += e.weight(n.Bias).len
	case EwAdd, EwMul:
		binds["a"], binds["b"], binds["out"] = e.act(in), e.act(n.In[1]), e.act(n.Out[0])
		prm.BStride, prm.OutStride = e.stride(n.In[1]), e.stride(n.Out[0])
	case EwSiLUGate, EwGELUGate:
		binds["gate"], binds["up"], binds["out"] = e.act(in), e.act(n.In[1]), e.act(n.Out[0])
		prm.BStride, prm.OutStride = e.stride(n.In[1]), e.stride(n.Out[0])
	default:
		binds["x"], binds["out"] = e.act(in), e.act(n.Out[0])
		prm.OutStride = e.stride(n.Out[0])
	}
	return e.emit(n, k, kernels.Shape{Tokens: rows, Dim: w}, prm, binds, e.class(in), read)
}

func (e *emitter) tail(n *Tail, k *kernels.Kernel) error {
	s := e.s
	in := n.In[0]
	rows, w := e.p.rowsOf(in), e.p.g.Values[in].Width
	switch n.Op {
	case TailGather:
		out := n.Out[0]
		outRows := e.p.rowsOf(out)
		return e.emit(n, k, kernels.Shape{Tokens: outRows, Dim: w},
			kernels.ElementwiseParams{NRows: uint32(outRows), NCols: uint32(w), AStride: e.stride(in), OutStride: e.stride(out)},
			map[string]bref{"x": e.act(in), "rows": {buf: s.scratch.outRows, len: 4 * uint64(outRows)}, "out": e.act(out)},
			e.class(out), e.actRead(out))
	case TailToHost:
		return e.emit(n, k, kernels.Shape{Tokens: rows, Dim: w},
			kernels.ElementwiseParams{NRows: uint32(rows), NCols: uint32(w), AStride: e.stride(in), OutStride: uint32(w)},
			map[string]bref{"x": e.act(in), "out": {buf: s.scratch.logits, len: 4 * uint64(rows*w)}}, e.class(in), e.actRead(in))
	case TailSample:
		return e.emit(n, k, kernels.Shape{Vocab: w},
			kernels.SamplingParams{Vocab: uint32(w), TopK: defaultTopK, Temperature: defaultTemperature, TopP: defaultTopP, MinP: defaultMinP},
			map[string]bref{"logits": e.act(in)}, rowsFixed, e.actRead(in))
	case TailPool:
		inputs := e.p.outRows
		return e.emit(n, k, kernels.Shape{Tokens: inputs, Dim: w, Pooling: n.Pooling, Normalize: true},
			kernels.PoolParams{Dim: uint32(w), NRows: uint32(inputs), AStride: e.stride(in)},
			map[string]bref{"x": e.act(in), "ranges": {buf: s.scratch.poolRanges, len: 8 * uint64(inputs)},
				"out": {buf: s.scratch.embeddings, len: 4 * uint64(inputs*w)}}, rowsOut, e.actRead(in))
	case TailArgmax:
		ids := e.whole(s.scratch.tokens)
		if e.p.batch() {
			ids = bref{buf: s.scratch.argmax, len: 4 * uint64(rows)}
		}
		return e.emit(n, k, kernels.Shape{Vocab: w, Tokens: rows, VecX: aligned16(e.act(in))}, kernels.ArgmaxParams{N: uint32(w), NRows: uint32(rows)},
			map[string]bref{"logits": e.act(in), "ids": ids}, e.class(in), e.actRead(in))
	}
	return fmt.Errorf("%w: tail op %s", ErrUnsupported, n.Op)
}

// factors is the RoPE factor tensor a plan of this context uses: the long
// factors when the context passes the original one (as llama.cpp picks
// them by n_ctx), else the short ones; "" for none.
func (e *emitter) factors(r RopeArgs) string {
	if r.LongFactors != "" && e.s.ctx > e.s.hp.RopeScaling.OrigCtx {
		return r.LongFactors
	}
	return r.Factors
}

// ropeParams fills the RoPE fields every rope kernel shares: the base and
// scale the spec gave the op, YaRN's values from the model (llama.cpp's
// defaults when the file gives none: ext_factor 1 under YaRN else 0,
// beta_fast 32, beta_slow 1, attn_factor 1).
func (s *state) ropeParams(r RopeArgs) kernels.RoPEQKVWriteParams {
	rs := s.hp.RopeScaling
	p := kernels.RoPEQKVWriteParams{RopeDim: uint32(r.Dim), OrigCtx: uint32(rs.OrigCtx), Theta: float32(r.Base),
		FreqScale: float32(r.FreqScale), AttnFactor: 1, BetaFast: 32, BetaSlow: 1}
	if rs.AttnFactor > 0 {
		p.AttnFactor = float32(rs.AttnFactor)
	}
	if rs.Type == "yarn" {
		p.ExtFactor = 1
		if rs.YarnExtFactor > 0 {
			p.ExtFactor = float32(rs.YarnExtFactor)
		}
	}
	if rs.YarnBetaFast > 0 {
		p.BetaFast = float32(rs.YarnBetaFast)
	}
	if rs.YarnBetaSlow > 0 {
		p.BetaSlow = float32(rs.YarnBetaSlow)
	}
	return p
}

// aligned16 reports whether every bound activation among bs starts at a
// 16-byte offset of its buffer (an unbound one, the zero bref, does);
// buffers themselves start aligned on every backend.
func aligned16(bs ...bref) bool {
	for _, b := range bs {
		if b.off%16 != 0 {
			return false
		}
	}
	return true
}
