package compiler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/specs"
	"github.com/akunu-dev/akunu/specs/chips"
)

// lowerPass resolves the model against its spec and lowers the spec's
// program into one graph per form (decode, sampled, batch).
//
// Assumes: a parsed GGUF header and a chip profile.
// Guarantees: the tensor table matches the spec (every required tensor, every
// shape); s.hp, s.prog, s.tuning, s.act and s.ctx are set; each graph has
// one node per spec op (a matmul with a bias becomes matmul + bias_add), in
// program order, with the program's tail: decode ends to_host, argmax;
// sampled to_host, sample, argmax; batch inserts gather (the rows whose
// outputs are asked for) before the LM head and ends to_host, argmax.
func lowerPass(s *state) (string, error) {
	reg, err := specs.Builtin()
	if err != nil {
		return "", err
	}
	s.arch, err = reg.ForArchitecture(s.file.Architecture())
	if err != nil {
		return "", err
	}
	s.hp, err = s.arch.Resolve(specs.GGUFMetadata(s.file))
	if err != nil {
		return "", err
	}
	if err := checkHParams(s); err != nil {
		return "", err
	}
	ts, err := s.arch.Tensors(s.hp)
	if err != nil {
		return "", err
	}
	have := make([]specs.TensorInfo, len(s.file.Tensors))
	s.tensors = make(map[string]*gguf.TensorInfo, len(s.file.Tensors))
	for i := range s.file.Tensors {
		t := &s.file.Tensors[i]
		shape := make([]int64, len(t.Dims))
		for j, d := range t.Dims {
			shape[j] = int64(d)
		}
		have[i] = specs.TensorInfo{Name: t.Name, Shape: shape}
		s.tensors[t.Name] = t
	}
	if err := specs.CheckTensorTable(ts, have); err != nil {
		return "", err
	}
	s.prog, err = s.arch.Program(s.hp)
	if err != nil {
		return "", err
	}

	s.tuning = s.opts.Chip.Tuning()
	if s.opts.Chip.Name == "" {
		return "", fmt.Errorf("%w: no chip profile", ErrOptions)
	}
	s.act = dtype.F16
	if s.opts.Chip.Kind == chips.CPU {
		s.act = dtype.F32
	}
	if s.kv, s.kvVar, err = kvType(s.opts.KVType, s.act); err != nil {
		return "", err
	}
	s.ctx = s.opts.Ctx
	if s.ctx == 0 {
		s.ctx = DefaultCtx
		if s.hp.CtxTrain > 0 {
			s.ctx = min(s.hp.CtxTrain, DefaultCtx)
		}
	}
	if s.ctx < 1 || s.ctx > plans.MaxCtx {
		return "", fmt.Errorf("%w: context %d is outside [1, %d]", ErrOptions, s.ctx, plans.MaxCtx)
	}
	s.buckets = batchBuckets(s.tuning.PrefillChunk, s.ctx)

	forms, err := s.forms()
	if err != nil {
		return "", err
	}
	s.graphs = nil
	for _, f := range forms {
		g := lower(s.prog, f, s.pooling)
		// A route value is k u32 ids and k f32 weights a row, in scratch
		// of the activation dtype.
		for i, v := range g.Values {
			if v.Route > 0 {
				g.Values[i].Width = 8 * v.Route / s.act.BlockBytes()
			}
		}
		s.graphs = append(s.graphs, g)
	}
	g := s.graphs[0]
	pool := ""
	if s.pooling != 0 {
		pool = ", " + PoolingName(s.pooling) + " pooling"
	}
	return fmt.Sprintf("%s (%s): %d layers, %d nodes in the %s graph, ctx %d, %s activations, batch buckets %v%s",
		s.hp.Arch, s.hp.Spec, g.Layers, len(g.Nodes), g.Form, s.ctx, strings.ToLower(s.act.String()), s.buckets, pool), nil
}

// forms are the program forms the model compiles to: decode, sampled and
// batch for a language model, with embed when it pools (its file's
// pooling_type, or Options.Pooling); embed alone for an encoder (spec
// output: embedding), which must pool. It sets s.pooling.
func (s *state) forms() ([]Form, error) {
	s.pooling = s.hp.Pooling
	if s.opts.Pooling != 0 {
		s.pooling = s.opts.Pooling
	}
	if s.pooling == PoolNone {
		s.pooling = 0
	}
	encoder := s.arch.Output == specs.OutputEmbedding
	switch {
	case s.pooling == 4:
		return nil, fmt.Errorf("%w: pooling_type 4 (rank: a reranker's classifier head) is not supported; --pooling mean, cls or last embeds", ErrUnsupported)
	case s.pooling < 0 || s.pooling > 4:
		return nil, fmt.Errorf("%w: pooling type %d (want 1 mean, 2 cls or 3 last)", ErrOptions, s.pooling)
	case encoder && s.pooling == 0:
		return nil, fmt.Errorf("%w: %s is an embedding model and needs a pooling: its file's pooling_type (it has none), or --pooling mean, cls or last", ErrUnsupported, s.hp.Arch)
	case encoder:
		return []Form{FormEmbed}, nil
	case s.pooling != 0:
		return []Form{FormDecode, FormSampled, FormBatch, FormEmbed}, nil
	}
	return []Form{FormDecode, FormSampled, FormBatch}, nil
}

// graph is the graph of form f, or nil when the model has none.
func (s *state) graph(f Form) *Graph {
	for _, g := range s.graphs {
		if g.Form == f {
			return g
		}
	}
	return nil
}

// batchBuckets are the row counts batch programs are compiled for: 4, 8,
// 16 and 32 (decode steps of a few sequences, verify passes: the GEMM's
// small form up to 8 rows), then 128, 512, ... (×4) below the tuning's
// prefill chunk, then the chunk itself; none beyond the context.
func batchBuckets(chunk, ctx int) []int {
	top := min(chunk, ctx)
	var out []int
	for _, n := range []int{4, 8, 16, 32} {
		if n < top {
			out = append(out, n)
		}
	}
	for n := 128; n < top; n *= 4 {
		out = append(out, n)
	}
	if top > 1 {
		out = append(out, top)
	}
	return out
}

// lower turns a spec program into a graph of form f; an embed graph pools
// with pooling.
func lower(p *specs.Program, f Form, pooling int) *Graph {
	g := &Graph{Form: f, Layers: len(p.Layers)}
	for _, v := range p.Values {
		g.Values = append(g.Values, Value{Name: v.Name, Width: v.Width, Layer: v.Layer, Route: v.Route})
	}
	add := func(n Node) { g.Nodes = append(g.Nodes, n) }
	newValue := func(like ValueID) ValueID {
		v := g.Values[like]
		v.Name = ""
		g.Values = append(g.Values, v)
		return ValueID(len(g.Values) - 1)
	}
	out := map[ValueID]bool{} // values with the batch's output rows
	var ops []specs.Op
	ops = append(ops, p.Prologue...)
	for _, l := range p.Layers {
		ops = append(ops, l...)
	}
	ops = append(ops, p.Epilogue...)
	lmHead := true             // the epilogue's first matmul is the LM head
	skip := map[ValueID]bool{} // embed: the LM head's output and what follows from it
	for _, op := range ops {
		b := Base{Layer: op.Layer, Label: label(op, &lmHead), In: clone(op.In), Out: clone(op.Out)}
		if f == FormEmbed && (b.Label == "logits" || slices.ContainsFunc(op.In, func(v ValueID) bool { return skip[v] })) {
			for _, o := range op.Out {
				skip[o] = true
			}
			continue
		}
		if f == FormBatch && op.Kind == specs.OpMatmul && b.Label == "logits" {
			// A batch computes the logits of the rows asked for only.
			rows := newValue(op.In[0])
			g.Values[rows].Out = true
			add(&Tail{Base: Base{Layer: -1, Label: "gather", In: []ValueID{op.In[0]}, Out: []ValueID{rows}}, Op: TailGather})
			b.In[0] = rows
			out[rows] = true
		}
		for _, v := range b.In {
			if out[v] {
				for _, o := range b.Out {
					out[o] = true
					g.Values[o].Out = true
				}
			}
		}
		switch op.Kind {
		case specs.OpEmbedding:
			add(&Embed{Base: b, Table: op.Weight, Scale: 1, Ids: op.Ids})
		case specs.OpRMSNorm, specs.OpLayerNorm:
			add(&Norm{Base: b, LN: op.Kind == specs.OpLayerNorm, Weight: op.Weight, Bias: op.Bias, Eps: op.Eps})
		case specs.OpHeadRMSNorm:
			add(&HeadNorm{Base: b, Weight: op.Weight, Eps: op.Eps, Heads: op.Heads, HeadDim: op.HeadDim})
		case specs.OpMatmul:
			mm := &MatMul{Base: b, Weights: []string{op.Weight}, Ns: []int{g.Values[op.Out[0]].Width}, K: g.Values[op.In[0]].Width}
			if op.Bias == "" {
				add(mm)
				break
			}
			// The bias is its own node; bias_fold folds it back when the
			// kernel can add it.
			tmp := newValue(op.Out[0])
			mm.Out = []ValueID{tmp}
			add(mm)
			add(&Elementwise{Base: Base{Layer: op.Layer, Label: b.Label, In: []ValueID{tmp}, Out: clone(op.Out)}, Op: EwBiasAdd, Bias: op.Bias})
		case specs.OpAdd:
			add(&Elementwise{Base: b, Op: EwAdd})
		case specs.OpMul:
			add(&Elementwise{Base: b, Op: EwMul})
		case specs.OpScale:
			add(&Elementwise{Base: b, Op: EwScale, Alpha: op.Scale})
		case specs.OpSilu:
			add(&Elementwise{Base: b, Op: EwSiLU})
		case specs.OpGelu:
			add(&Elementwise{Base: b, Op: EwGELU})
		case specs.OpSoftcap:
			add(&Elementwise{Base: b, Op: EwSoftcap, Alpha: op.Cap})
		case specs.OpRope:
			add(&Rope{Base: b, RopeArgs: RopeArgs{Style: op.RopeStyle, Base: op.RopeBase, FreqScale: op.RopeFreqScale,
				Dim: op.RopeDim, Factors: op.RopeFactors, LongFactors: op.RopeLongFactors}, Heads: op.Heads, HeadDim: op.HeadDim})
		case specs.OpAttention:
			add(&Attention{Base: b, Heads: op.Heads, KVHeads: op.KVHeads, HeadDim: op.HeadDim, HeadDimV: op.HeadDimV,
				Scale: op.Scale, Softcap: op.Cap, Window: op.Window, KVLayer: op.KVLayer, NonCausal: !op.Causal})
		case specs.OpSplit:
			add(&Split{Base: b, Sizes: clone(op.Sizes)})
		case specs.OpRoute:
			add(&Route{Base: b, K: op.Slots, Experts: g.Values[op.In[0]].Width, Norm: op.Norm})
		case specs.OpMatmulID:
			n := g.Values[op.Out[0]].Width / op.Slots
			k := g.Values[op.In[0]].Width
			if op.PerSlot {
				k /= op.Slots
			}
			add(&MatMulID{Base: b, Weight: op.Weight, N: n, K: k, Slots: op.Slots, Experts: op.Experts, PerSlot: op.PerSlot})
		case specs.OpMoESum:
			add(&MoESum{Base: b, N: g.Values[op.Out[0]].Width, Slots: op.Slots})
		default:
			panic(fmt.Sprintf("compiler: lower: op %v has no lowering", op.Kind))
		}
	}
	if f == FormEmbed {
		add(&Tail{Base: Base{Layer: -1, Label: "pool", In: []ValueID{p.Embedding}}, Op: TailPool, Pooling: pooling})
		return g
	}
	tail := func(op string, label string) {
		add(&Tail{Base: Base{Layer: -1, Label: label, In: []ValueID{p.Logits}}, Op: op})
	}
	tail(TailToHost, "logits.host")
	if f == FormSampled {
		tail(TailSample, "sample")
	}
	tail(TailArgmax, "argmax")
	return g
}

// label names an op for the plan: "L3." + the spec's label with the block
// name not repeated ("attn.attn_q" → "attn.q", "ffn.ffn_down" →
// "ffn.down"); the prologue's embedding is "embed", the epilogue's first
// matmul (the LM head) "logits", other epilogue ops their logical name.
func label(op specs.Op, lmHead *bool) string {
	block, name, ok := strings.Cut(op.Label, ".")
	if !ok {
		block, name = op.Block, op.Label
	}
	name = strings.TrimPrefix(name, block+"_")
	switch {
	case op.Layer >= 0:
		return fmt.Sprintf("L%d.%s.%s", op.Layer, block, name)
	case op.Kind == specs.OpEmbedding && op.Block == "prologue":
		return "embed"
	case op.Kind == specs.OpMatmul && op.Block == "epilogue" && *lmHead:
		*lmHead = false
		return "logits"
	}
	return name
}

func clone[T any](s []T) []T { return append([]T(nil), s...) }
