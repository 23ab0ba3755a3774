package specs

import (
	"fmt"
	"strings"
)

// ValueID indexes Program.Values.
type ValueID int32

// ValueInfo is one activation: a vector of Width elements per token.
type ValueInfo struct {
	Name  string // the spec's name ("q", "x"); "" for the result of a nested op
	Width int
	Layer int // -1 outside the layers
	// Route is, for a route's result, its k (Width is then 2k: k expert
	// ids and k gate weights, 4 bytes each); 0 for an activation.
	Route int
}

// Op is one operation of a Program: plain data, the fields an op's kind
// does not use left zero.
type Op struct {
	Kind  OpKind
	Layer int    // -1 in the prologue and the epilogue
	Block string // "prologue", "epilogue", or a layer block ("attn", "ffn")
	// Label names the op for plan renderings: the block and the weight's
	// logical name or the op ("attn.attn_q", "attn.rope"); the compiler puts
	// the layer before it.
	Label string
	In    []ValueID
	Out   []ValueID

	Weight string // tensor name in the file: matmul weight, norm weight, embedding table
	Bias   string // matmul and layernorm, "" when absent
	Eps    float64

	Scale  float64 // scale: the factor; attention: multiplies q·k
	Cap    float64 // softcap: the cap; attention: the score softcap (0 = none)
	Window int     // attention: 0 = causal over the whole context, else sliding window
	// Causal: attention sees the keys up to the query's position; false:
	// every key of the query's input (an encoder).
	Causal bool
	// Ids: what an embedding looks up: IdsTokens, IdsPositions, IdsZeros.
	Ids     string
	KVLayer int // attention: the layer whose KV cache it writes and reads

	Heads    int // rope: heads in x; attention: query heads
	KVHeads  int // attention
	HeadDim  int // rope, head_rmsnorm, attention (of q and k)
	HeadDimV int // attention

	RopeStyle       RopeStyle
	RopeBase        float64
	RopeFreqScale   float64
	RopeDim         int
	RopeFactors     string // tensor or ""
	RopeLongFactors string // used instead of RopeFactors beyond the original context

	Sizes []int // split

	// Mixture of experts: route's k (Slots) and renormalization (Norm);
	// matmul_id's slots, experts and whether each slot has its own x.
	Slots, Experts int
	Norm, PerSlot  bool

	Pos Pos // where the op is written
}

// Program is a model's forward pass for one token position, in the order
// the ops must run. The residual stream enters each layer as the value the
// previous layer (or the prologue) last bound to x.
type Program struct {
	Values   []ValueInfo
	Prologue []Op
	Layers   [][]Op
	Epilogue []Op
	Logits   ValueID // -1 for an encoder (output: embedding)
	// Embedding is the value an embedding program pools: the epilogue's
	// "embedding" when it defines one, else x after the epilogue (a
	// decoder's: its final norm's output, the LM head's input).
	Embedding ValueID
}

// What an embedding op looks up, per token.
const (
	IdsTokens    = "tokens"
	IdsPositions = "positions"
	IdsZeros     = "zeros"
)

// lowering is the state of Program's construction.
type lowering struct {
	a       *Arch
	hp      *HParams
	ev      *evaluator
	p       *Program
	tensors map[string]Tensor // by file name, from Tensors
	byLog   map[string]map[int]Tensor
	c       errs
}

// Program lowers the spec's graph for a model: conditions evaluated, op
// arguments computed, tensor names concrete (absent optional tensors
// dropped or replaced by their fallback), and every activation's width
// checked against the tensors' shapes.
func (a *Arch) Program(hp *HParams) (*Program, error) {
	ts, err := a.Tensors(hp)
	if err != nil {
		return nil, err
	}
	lw := &lowering{a: a, hp: hp, ev: a.hpEvaluator(hp), p: &Program{Logits: -1},
		tensors: map[string]Tensor{}, byLog: map[string]map[int]Tensor{}}
	for _, t := range ts {
		lw.tensors[t.Name] = t
		if lw.byLog[t.Logical] == nil {
			lw.byLog[t.Logical] = map[int]Tensor{}
		}
		lw.byLog[t.Logical][t.Layer] = t
	}
	env := map[string]ValueID{}
	lw.p.Prologue = lw.part(a.prologue, "prologue", -1, env)
	x, ok := env["x"]
	if !ok && lw.c.empty() {
		lw.c.add(ErrInvalid, Pos{File: a.File}, "prologue", "x is not defined after the prologue")
	}
	for l := 0; l < hp.Layers && lw.c.empty(); l++ {
		env = map[string]ValueID{"x": x}
		var ops []Op
		for _, b := range a.layer {
			ops = append(ops, lw.part(b.stmts, b.name, l, env)...)
		}
		lw.p.Layers = append(lw.p.Layers, ops)
		x = env["x"]
	}
	env = map[string]ValueID{"x": x}
	if lw.c.empty() {
		lw.p.Epilogue = lw.part(a.epilogue, "epilogue", -1, env)
	}
	if err := lw.c.err(); err != nil {
		return nil, err
	}
	lw.p.Logits = -1
	if v, ok := env["logits"]; ok {
		lw.p.Logits = v
	}
	lw.p.Embedding = env["x"]
	if v, ok := env["embedding"]; ok {
		lw.p.Embedding = v
	}
	return lw.p, nil
}

func (lw *lowering) newValue(name string, width, layer int) ValueID {
	lw.p.Values = append(lw.p.Values, ValueInfo{Name: name, Width: width, Layer: layer})
	return ValueID(len(lw.p.Values) - 1)
}

func (lw *lowering) part(stmts []*stmt, block string, layer int, env map[string]ValueID) []Op {
	var out []Op
	for _, s := range stmts {
		if !lw.c.empty() {
			return out
		}
		if s.cond != nil {
			v, err := lw.ev.eval(s.cond, layer)
			if err != nil {
				lw.fail(s, layer, ErrBadValue, "%v", err)
				return out
			}
			if !v.Bool {
				continue
			}
		}
		outs := lw.lower(s, s.value.(*callNode), block, layer, env, &out, s.targets)
		for i, t := range s.targets {
			if i < len(outs) {
				env[t] = outs[i]
			}
		}
	}
	return out
}

func (lw *lowering) fail(s *stmt, layer int, kind error, format string, args ...any) {
	lw.failAt(s.pos, s, layer, kind, format, args...)
}

func (lw *lowering) failAt(pos Pos, s *stmt, layer int, kind error, format string, args ...any) {
	path := s.path
	if layer >= 0 {
		path = fmt.Sprintf("%s (layer %d)", s.path, layer)
	}
	lw.c.add(kind, pos, path, format, args...)
}

// lower emits the ops of one call (its nested calls first) and returns its
// outputs.
func (lw *lowering) lower(s *stmt, call *callNode, block string, layer int, env map[string]ValueID, out *[]Op, names []string) []ValueID {
	sig := ops[call.fn]
	op := Op{Kind: sig.kind, Layer: layer, Block: block, Pos: call.p, KVLayer: -1}
	var widths []int
	for i, arg := range call.args {
		if !lw.c.empty() {
			return nil
		}
		p := sig.variadic
		if i < len(sig.pos) {
			p = &sig.pos[i]
		}
		switch p.kind {
		case pkValue:
			var id ValueID
			if nested, ok := arg.(*callNode); ok {
				ids := lw.lower(s, nested, block, layer, env, out, nil)
				if len(ids) != 1 {
					return nil
				}
				id = ids[0]
			} else {
				id = env[arg.(*nameNode).name]
			}
			op.In = append(op.In, id)
			widths = append(widths, lw.p.Values[id].Width)
		case pkTensor:
			t, ok := lw.tensor(s, arg.(*nameNode).name, layer, p.optional)
			if !ok {
				return nil
			}
			lw.setTensor(&op, p.name, t)
		case pkExpr:
			v, ok := lw.expr(s, arg, layer)
			if !ok {
				return nil
			}
			lw.setNum(&op, p.name, v)
		}
	}
	given := map[string]bool{}
	for _, na := range call.named {
		given[na.key] = true
		p := sig.namedParam(na.key)
		switch p.kind {
		case pkTensor:
			t, ok := lw.tensor(s, na.val.(*nameNode).name, layer, p.optional)
			if !ok {
				return nil
			}
			lw.setTensor(&op, p.name, t)
		case pkExpr:
			v, ok := lw.expr(s, na.val, layer)
			if !ok {
				return nil
			}
			lw.setNum(&op, p.name, v)
		}
	}
	for _, p := range sig.named {
		if p.kind == pkExpr && !given[p.name] && p.defNode != nil {
			v, ok := lw.expr(s, p.defNode, layer)
			if !ok {
				return nil
			}
			lw.setNum(&op, p.name, v)
		}
	}
	if op.Kind == OpEmbedding && op.Ids != IdsTokens && op.Ids != IdsPositions && op.Ids != IdsZeros {
		lw.fail(s, layer, ErrBadValue, "embedding ids=%q: want %q, %q or %q", op.Ids, IdsTokens, IdsPositions, IdsZeros)
		return nil
	}
	outWidths, ok := lw.shapes(s, &op, widths, layer)
	if !ok {
		return nil
	}
	for i, w := range outWidths {
		name := ""
		if i < len(names) {
			name = names[i]
		}
		op.Out = append(op.Out, lw.newValue(name, w, layer))
		if op.Kind == OpRoute {
			lw.p.Values[op.Out[i]].Route = op.Slots
		}
	}
	op.Label = block + "." + op.Kind.String()
	if t := lw.labelTensor(&op); t != "" {
		op.Label = block + "." + t
	}
	*out = append(*out, op)
	return op.Out
}

func (lw *lowering) labelTensor(op *Op) string {
	if op.Weight == "" {
		return ""
	}
	return lw.tensors[op.Weight].Logical
}

// tensor resolves a logical tensor for a layer: the tensor itself, its
// fallback when it is absent, or nothing (ok, empty name) for an absent
// optional argument.
func (lw *lowering) tensor(s *stmt, logical string, layer int, optionalArg bool) (Tensor, bool) {
	d := lw.a.tensorIx[logical]
	if !d.perLayer {
		layer = -1
	}
	t, ok := lw.byLog[logical][layer]
	if !ok {
		if optionalArg {
			return Tensor{}, true
		}
		lw.fail(s, layer, ErrInvalid, "%s does not exist in this layer (its condition %s is false)", logical, exprString(d.cond))
		return Tensor{}, false
	}
	if t.Present {
		return t, true
	}
	if t.Fallback != "" {
		return lw.tensors[t.Fallback], true
	}
	return Tensor{}, optionalArg
}

func (lw *lowering) expr(s *stmt, n node, layer int) (Value, bool) {
	v, err := lw.ev.eval(n, layer)
	if err != nil {
		lw.fail(s, layer, ErrBadValue, "%v", err)
		return Value{}, false
	}
	return v, true
}

func (lw *lowering) setTensor(op *Op, param string, t Tensor) {
	switch param {
	case "table", "weight":
		op.Weight = t.Name
	case "bias":
		op.Bias = t.Name
	case "factors":
		op.RopeFactors = t.Name
	case "long_factors":
		op.RopeLongFactors = t.Name
	}
}

func (lw *lowering) setNum(op *Op, param string, v Value) {
	switch param {
	case "eps":
		op.Eps = v.AsFloat()
	case "s":
		op.Scale = v.AsFloat()
	case "cap":
		op.Cap = v.AsFloat()
	case "scale":
		op.Scale = v.AsFloat()
	case "softcap":
		op.Cap = v.AsFloat()
	case "window":
		op.Window = int(v.Int)
	case "causal":
		op.Causal = v.Bool
	case "k":
		op.Slots = int(v.Int)
	case "norm":
		op.Norm = v.Bool
	case "ids":
		op.Ids = v.Str
	case "head_dim":
		op.HeadDim = int(v.Int)
	case "head_dim_v":
		op.HeadDimV = int(v.Int)
	case "base":
		op.RopeBase = v.AsFloat()
	case "freq_scale":
		op.RopeFreqScale = v.AsFloat()
	case "dim":
		op.RopeDim = int(v.Int)
	case "sizes":
		op.Sizes = append(op.Sizes, int(v.Int))
	}
}

// shapes checks an op's input widths against its tensors and parameters
// and returns the widths of its outputs.
func (lw *lowering) shapes(s *stmt, op *Op, in []int, layer int) ([]int, bool) {
	bad := func(format string, args ...any) ([]int, bool) {
		lw.failAt(op.Pos, s, layer, ErrShape, "%s: %s", op.Kind, fmt.Sprintf(format, args...))
		return nil, false
	}
	shape := func(name string) []int64 { return lw.tensors[name].Shape }
	if op.Kind != OpMatmulID && op.Kind != OpMoESum {
		for i, v := range op.In {
			if lw.p.Values[v].Route > 0 {
				return bad("argument %d is a route's result, which only matmul_id and moe_sum read, as their last argument", i+1)
			}
		}
	}
	switch op.Kind {
	case OpEmbedding:
		sh := shape(op.Weight)
		if len(sh) != 2 {
			return bad("table %s is %s, not a matrix", op.Weight, shapeString(sh))
		}
		return []int{int(sh[0])}, true
	case OpRMSNorm, OpLayerNorm:
		if sh := shape(op.Weight); len(sh) != 1 || int(sh[0]) != in[0] {
			return bad("weight %s is %s, x has %d", op.Weight, shapeString(sh), in[0])
		}
		if op.Bias != "" {
			if sh := shape(op.Bias); len(sh) != 1 || int(sh[0]) != in[0] {
				return bad("bias %s is %s, x has %d", op.Bias, shapeString(sh), in[0])
			}
		}
		return in[:1], true
	case OpHeadRMSNorm:
		if op.HeadDim <= 0 || in[0]%op.HeadDim != 0 {
			return bad("x has %d, not a multiple of head_dim %d", in[0], op.HeadDim)
		}
		if sh := shape(op.Weight); len(sh) != 1 || int(sh[0]) != op.HeadDim {
			return bad("weight %s is %s, head_dim is %d", op.Weight, shapeString(sh), op.HeadDim)
		}
		op.Heads = in[0] / op.HeadDim
		return in[:1], true
	case OpMatmul:
		sh := shape(op.Weight)
		if len(sh) != 2 || int(sh[0]) != in[0] {
			return bad("weight %s is %s, x has %d", op.Weight, shapeString(sh), in[0])
		}
		if op.Bias != "" {
			if b := shape(op.Bias); len(b) != 1 || b[0] != sh[1] {
				return bad("bias %s is %s, the output has %d", op.Bias, shapeString(b), sh[1])
			}
		}
		return []int{int(sh[1])}, true
	case OpAdd, OpMul:
		if in[0] != in[1] {
			return bad("widths differ: %d and %d", in[0], in[1])
		}
		return in[:1], true
	case OpScale, OpSilu, OpGelu, OpSoftcap:
		return in[:1], true
	case OpRope:
		op.RopeStyle = lw.a.RopeStyle()
		if op.HeadDim <= 0 || in[0]%op.HeadDim != 0 {
			return bad("x has %d, not a multiple of head_dim %d", in[0], op.HeadDim)
		}
		if op.RopeDim <= 0 || op.RopeDim > op.HeadDim || op.RopeDim%2 != 0 {
			return bad("dim %d: want an even number in 2..head_dim (%d)", op.RopeDim, op.HeadDim)
		}
		op.Heads = in[0] / op.HeadDim
		return in[:1], true
	case OpAttention:
		q, k, v := in[0], in[1], in[2]
		if op.HeadDim <= 0 || q%op.HeadDim != 0 || k%op.HeadDim != 0 {
			return bad("q has %d and k %d, not multiples of head_dim %d", q, k, op.HeadDim)
		}
		op.Heads, op.KVHeads = q/op.HeadDim, k/op.HeadDim
		if op.KVHeads == 0 || op.Heads%op.KVHeads != 0 {
			return bad("%d query heads cannot share %d KV heads", op.Heads, op.KVHeads)
		}
		if op.HeadDimV <= 0 || v != op.KVHeads*op.HeadDimV {
			return bad("v has %d, want %d KV heads × head_dim_v %d", v, op.KVHeads, op.HeadDimV)
		}
		if op.Window < 0 {
			return bad("window %d < 0", op.Window)
		}
		op.KVLayer = layer
		return []int{op.Heads * op.HeadDimV}, true
	case OpRoute, OpMatmulID, OpMoESum:
		return lw.moeShapes(op, in, bad)
	case OpSplit:
		sum := 0
		for _, n := range op.Sizes {
			if n <= 0 {
				return bad("size %d", n)
			}
			sum += n
		}
		if sum != in[0] {
			return bad("sizes %v add up to %d, x has %d", op.Sizes, sum, in[0])
		}
		return op.Sizes, true
	}
	return bad("no shape rule")
}

// normKind is the kind of the first norm of the first layer.
func (p *Program) normKind() NormKind {
	if len(p.Layers) > 0 {
		for _, op := range p.Layers[0] {
			switch op.Kind {
			case OpRMSNorm, OpHeadRMSNorm:
				return NormRMS
			case OpLayerNorm:
				return NormLayer
			}
		}
	}
	return NormRMS
}

// tiedOutput reports whether the last matmul of the epilogue uses the
// prologue's embedding table.
func (p *Program) tiedOutput() bool {
	table := ""
	for _, op := range p.Prologue {
		if op.Kind == OpEmbedding {
			table = op.Weight
		}
	}
	for i := len(p.Epilogue) - 1; i >= 0; i-- {
		if p.Epilogue[i].Kind == OpMatmul {
			return table != "" && p.Epilogue[i].Weight == table
		}
	}
	return false
}

// String renders the program one op per line, for tests and debugging.
func (p *Program) String() string {
	var b strings.Builder
	writeOps := func(prefix string, ops []Op) {
		for _, op := range ops {
			fmt.Fprintf(&b, "%s%s\n", prefix, p.opString(op))
		}
	}
	writeOps("", p.Prologue)
	for l, ops := range p.Layers {
		writeOps(fmt.Sprintf("L%d ", l), ops)
	}
	writeOps("", p.Epilogue)
	return b.String()
}

func (p *Program) valueString(id ValueID) string {
	v := p.Values[id]
	name := v.Name
	if name == "" {
		name = "_"
	}
	return fmt.Sprintf("%s%%%d[%d]", name, id, v.Width)
}

func (p *Program) opString(op Op) string {
	var b strings.Builder
	for i, o := range op.Out {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.valueString(o))
	}
	fmt.Fprintf(&b, " = %s(", op.Kind)
	var args []string
	for _, in := range op.In {
		args = append(args, p.valueString(in))
	}
	add := func(cond bool, format string, a ...any) {
		if cond {
			args = append(args, fmt.Sprintf(format, a...))
		}
	}
	add(op.Weight != "", "%s", op.Weight)
	add(op.Bias != "", "bias=%s", op.Bias)
	add(op.Eps != 0, "eps=%g", op.Eps)
	add(op.Kind == OpScale || (op.Kind == OpAttention), "scale=%g", op.Scale)
	add(op.Cap != 0, "cap=%g", op.Cap)
	add(op.Window != 0, "window=%d", op.Window)
	add(op.Kind == OpAttention, "heads=%d/%d head_dim=%d/%d kv_layer=%d", op.Heads, op.KVHeads, op.HeadDim, op.HeadDimV, op.KVLayer)
	add(op.Kind == OpRope, "%s heads=%d head_dim=%d dim=%d base=%g freq_scale=%g", op.RopeStyle, op.Heads, op.HeadDim, op.RopeDim, op.RopeBase, op.RopeFreqScale)
	add(op.RopeFactors != "", "factors=%s", op.RopeFactors)
	add(op.RopeLongFactors != "", "long_factors=%s", op.RopeLongFactors)
	add(op.Kind == OpHeadRMSNorm, "heads=%d head_dim=%d", op.Heads, op.HeadDim)
	add(len(op.Sizes) > 0, "sizes=%v", op.Sizes)
	b.WriteString(strings.Join(args, ", "))
	b.WriteString(")  # " + op.Label)
	return b.String()
}

// moeShapes are the widths of the mixture-of-experts ops: a route value is
// 2k wide (k ids, k weights) and only matmul_id and moe_sum read one, as
// their last argument; matmul_id's weight is [in, out, experts].
func (lw *lowering) moeShapes(op *Op, in []int, bad func(string, ...any) ([]int, bool)) ([]int, bool) {
	route := func(i int) int { return lw.p.Values[op.In[i]].Route }
	for i := range op.In {
		last := i == len(op.In)-1 && op.Kind != OpRoute
		if r := route(i); (r > 0) != last {
			if last {
				return bad("its last argument must be a route's result")
			}
			return bad("argument %d is a route's result, which only matmul_id and moe_sum read, as their last argument", i+1)
		}
	}
	switch op.Kind {
	case OpRoute:
		if op.Slots < 1 || op.Slots > in[0] || op.Slots > 32 {
			return bad("k %d: want 1 to min(32, %d experts)", op.Slots, in[0])
		}
		return []int{2 * op.Slots}, true
	case OpMatmulID:
		sh := lw.tensors[op.Weight].Shape
		k := route(1) // In is [x, route]: the weight is no value
		if len(sh) != 3 {
			return bad("weight %s is %s, not [in, out, experts]", op.Weight, shapeString(sh))
		}
		switch int(sh[0]) {
		case in[0]:
		case in[0] / k:
			op.PerSlot = in[0]%k == 0
		}
		if int(sh[0]) != in[0] && !op.PerSlot {
			return bad("weight %s is %s; x has %d, want %d or %d×%d", op.Weight, shapeString(sh), in[0], sh[0], k, sh[0])
		}
		if int(sh[2]) < k {
			return bad("weight %s has %d experts, fewer than the route's %d", op.Weight, sh[2], k)
		}
		op.Slots, op.Experts = k, int(sh[2])
		return []int{k * int(sh[1])}, true
	case OpMoESum:
		k := route(1)
		if in[0]%k != 0 {
			return bad("y has %d, not a multiple of the route's %d slots", in[0], k)
		}
		op.Slots = k
		return []int{in[0] / k}, true
	}
	return bad("no shape rule")
}
