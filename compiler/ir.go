package compiler

import (
	"fmt"
	"strings"

	"github.com/akunu-dev/akunu/specs"
)

// The graph IR: one graph per program form, each a flat list of nodes in
// the order they run, over a flat list of values, everything referred to by
// integer id. Nodes are a sealed sum type (the unexported marker method):
// the passes switch over the closed set below.

// ValueID indexes Graph.Values.
type ValueID = specs.ValueID

// Form is the shape of the programs a graph is emitted for.
type Form uint8

const (
	// FormDecode: one token, ending in argmax into the next token slot.
	FormDecode Form = iota
	// FormSampled: one token, Gumbel-max sampling before argmax.
	FormSampled
	// FormBatch: a batch of up to N rows (N fixed per program), each row
	// with its own position and sequence slot; logits for the rows the
	// runtime lists (gathered before the LM head).
	FormBatch
	// FormEmbed: a batch's rows as in FormBatch, packed inputs each in a
	// sequence slot of its own, without the LM head: the last hidden
	// states pooled per input (pool) into the io buffer the host reads.
	FormEmbed
)

func (f Form) String() string { return [...]string{"decode", "sampled", "batch", "embed"}[f] }

// Batched reports whether the form's rows each have their own position
// and sequence slot (batch and embed).
func (f Form) Batched() bool { return f == FormBatch || f == FormEmbed }

// Value is one activation: Width elements per row.
type Value struct {
	Name  string // the spec's name ("x", "q"), or "" for an unnamed result
	Width int
	Layer int // -1 outside the layers
	// Out: in a batch graph, the value has the batch's output rows, not
	// its rows (after gather).
	Out bool
	// Route is, for a route's result, its k: the value holds, for all its
	// rows, k u32 expert ids a row and then k f32 gate weights a row, and
	// Width is that many bytes in activation elements.
	Route int
}

// Graph is a model's forward pass in one form.
type Graph struct {
	Form   Form
	Values []Value
	Nodes  []Node
	// Layers is the number of transformer layers; a node's Layer is -1 in
	// the prologue and epilogue.
	Layers int
}

// Base holds what every node has.
type Base struct {
	Layer int
	// Label names the node in the plan: "L3.attn.qkv", "embed", "logits".
	Label string
	// Rule is the fusion or lowering rule that made the node,
	// "fusion.rules:12 qkv_concat", or "" when lowered one to one.
	Rule    string
	In, Out []ValueID
	// fired: the rules (by index) that already fired with this node as
	// their root, so that a rule that keeps its root (group, concat) does
	// not fire on it again.
	fired uint64
}

func (b *Base) base() *Base { return b }

// Node is a node of the graph IR: one of the types below.
type Node interface {
	base() *Base
	// Kind is the op's name in fusion.rules: "matmul", "residual_rmsnorm".
	Kind() string
	node()
}

// Embed looks up the rows of Table for the current tokens (or, with Ids,
// their positions, or row 0 for every token), times Scale (1: none).
type Embed struct {
	Base
	Table string
	Scale float64
	Ids   string // specs.IdsTokens, IdsPositions or IdsZeros
}

// Norm is rmsnorm or layernorm of In[0]; with Residual, In = [d, x]: x += d
// in place, then Out = [x, norm(x)].
type Norm struct {
	Base
	LN       bool // LayerNorm rather than RMSNorm
	Residual bool
	Weight   string
	Bias     string
	Eps      float64
}

// HeadNorm is an RMSNorm of each head of In[0], one weight for all heads.
type HeadNorm struct {
	Base
	Weight  string
	Eps     float64
	Heads   int
	HeadDim int
}

// MatMul multiplies In[0] by one weight, or by several whose rows are
// concatenated (Concat: one derived weight, one output per source, side by
// side in one row). With SiLU, In = [gate, up] and the input is
// silu(gate)·up, computed by the kernel.
type MatMul struct {
	Base
	Weights []string // tensor names; more than one only when Concat
	Biases  []string // empty, or one per weight
	Ns      []int    // output rows per weight
	K       int
	Concat  bool
	SiLU    bool
	// GLU: a concat of a gate and an up weight whose product is gated:
	// Out = [silu(gate)·up], N()/2 wide (the glu_fold rule; the GEMV reads
	// the two weights' rows interleaved).
	GLU bool
	// The norm_fold rule: a residual norm between two GEMVs. Residual:
	// In = [x, res], Out = [res, y]: res += W·x in place, y = res·NormW,
	// the norm's weight, without its scale, and the threadgroups' Σres²
	// in the plan's norm partials. Norm (NormW empty): In = [x], x that
	// y; the product is scaled by 1/sqrt(Σ partials / K + NormEps).
	Residual bool
	Norm     bool
	NormW    string
	NormEps  float64
}

// N is the total output rows.
func (m *MatMul) N() int {
	n := 0
	for _, x := range m.Ns {
		n += x
	}
	return n
}

// Elementwise ops, by their names in fusion.rules.
const (
	EwAdd      = "add"
	EwMul      = "mul"
	EwScale    = "scale"
	EwSiLU     = "silu"
	EwGELU     = "gelu"
	EwSoftcap  = "softcap"
	EwBiasAdd  = "bias_add"
	EwSiLUGate = "silu_gate"
	EwGELUGate = "gelu_gate"
)

// Elementwise is an op over rows: binary (add, mul, the gates: In has two
// values), unary (scale, silu, gelu, softcap), or bias_add (In[0] + Bias).
type Elementwise struct {
	Base
	Op    string
	Alpha float64 // scale: the factor; softcap: the cap
	Bias  string  // bias_add: the tensor
}

// RopeArgs are the rotary embedding's parameters, as the spec gave them.
type RopeArgs struct {
	Style       specs.RopeStyle
	Base        float64
	FreqScale   float64
	Dim         int
	Factors     string
	LongFactors string
}

// Rope rotates each head of In[0] by its position.
type Rope struct {
	Base
	RopeArgs
	Heads   int
	HeadDim int
}

// Attention attends In[0] (q) over its layer's KV cache. Before fusion In
// is [q, k, v] and k, v must still be written to the cache; once a rule has
// fused the write (RopeKV), Cached is set and In is [q].
type Attention struct {
	Base
	Heads, KVHeads    int
	HeadDim, HeadDimV int
	Scale, Softcap    float64
	Window            int
	KVLayer           int
	Cached            bool
	// NonCausal: each row sees every key of its input (its sequence's rows
	// of this batch), not only those up to its position.
	NonCausal bool
	// Rope (the attn_rope rule, decode): the rope_kv_write this attention
	// absorbed; In = [q, k, v] unrotated, and the attention rotates q and
	// k and writes k and v into the cache itself.
	Rope *RopeKV
}

// RopeKV rotates q (In[0]) and k (In[1]), writes k and v (In[2]) into the
// KV cache of KVLayer and the rotated q to Out[0]; with QNorm and KNorm it
// first RMS-normalizes each head of q and k.
type RopeKV struct {
	Base
	RopeArgs
	Heads, KVHeads    int
	HeadDim, HeadDimV int
	KVLayer           int
	QNorm, KNorm      string
	Eps               float64
}

// Route picks the experts of each row: softmax of the router logits In[0]
// (Experts of them), the K largest, renormalized when Norm; Out[0] is a
// route value.
type Route struct {
	Base
	K, Experts int
	Norm       bool
}

// MatMulID applies, for each of the route's Slots, the routed expert's
// N×K matrix of Weight (Experts of them stacked) to x (In = [x, route]):
// the row's one x, or with PerSlot the slot's K values of it. Out[0] is
// Slots·N wide.
type MatMulID struct {
	Base
	Weight         string
	N, K           int
	Slots, Experts int
	PerSlot        bool
}

// MoESum weights the route's Slots slots of In[0] (Slots·N wide) by its
// gate weights and sums them (In = [y, route]).
type MoESum struct {
	Base
	N, Slots int
}

// Split gives consecutive slices of In[0]: views, no command.
type Split struct {
	Base
	Sizes []int
}

// Tail ops end a program.
const (
	TailGather = "gather"  // Out[0] = the rows of In[0] the runtime asks outputs of (batch)
	TailToHost = "to_host" // the logits, F32, into the io buffer the host reads
	TailSample = "sample"  // Gumbel-max noise on the logits, in place
	TailArgmax = "argmax"  // the next token id into the token slot
	TailPool   = "pool"    // each input's rows pooled and L2-normalized, F32, into the io buffer the host reads (embed)
)

// Tail is one of the ops that end a program.
type Tail struct {
	Base
	Op string
	// Pooling (pool): llama.cpp's llama_pooling_type, 1 mean, 2 CLS, 3 last.
	Pooling int
}

func (*Embed) node()       {}
func (*Norm) node()        {}
func (*HeadNorm) node()    {}
func (*MatMul) node()      {}
func (*Elementwise) node() {}
func (*Rope) node()        {}
func (*Attention) node()   {}
func (*RopeKV) node()      {}
func (*Split) node()       {}
func (*Route) node()       {}
func (*MatMulID) node()    {}
func (*MoESum) node()      {}
func (*Tail) node()        {}

func (*Embed) Kind() string    { return "embedding" }
func (*HeadNorm) Kind() string { return "head_rmsnorm" }
func (*Rope) Kind() string     { return "rope" }
func (*RopeKV) Kind() string   { return "rope_kv_write" }
func (*Split) Kind() string    { return "split" }
func (*Route) Kind() string    { return "route" }
func (*MatMulID) Kind() string { return "matmul_id" }
func (*MoESum) Kind() string   { return "moe_sum" }
func (*Attention) Kind() string {
	return "attention"
}
func (n *Elementwise) Kind() string { return n.Op }
func (n *Tail) Kind() string        { return n.Op }
func (n *Norm) Kind() string {
	k := "rmsnorm"
	if n.LN {
		k = "layernorm"
	}
	if n.Residual {
		k = "residual_" + k
	}
	return k
}
func (n *MatMul) Kind() string {
	switch {
	case n.SiLU:
		return "matmul_silu"
	case n.GLU:
		return "matmul_glu"
	case n.Norm:
		return "matmul_norm"
	case n.Residual:
		return "matmul_residual"
	}
	return "matmul"
}

// nodeKinds are the kinds a rule may name.
var nodeKinds = []string{
	"embedding", "rmsnorm", "layernorm", "residual_rmsnorm", "residual_layernorm", "head_rmsnorm",
	"matmul", "matmul_silu", "matmul_glu", EwAdd, EwMul, EwScale, EwSiLU, EwGELU, EwSoftcap, EwBiasAdd, EwSiLUGate, EwGELUGate,
	"rope", "rope_kv_write", "attention", "split", "route", "matmul_id", "moe_sum", TailGather, TailToHost, TailSample, TailArgmax, TailPool,
}

// String renders a node on one line, for tests and -v dumps:
// "L0.attn.qkv = matmul(%1) [blk.0.attn_q.weight+...] -> %2 %3".
func (g *Graph) String() string {
	var b strings.Builder
	for _, n := range g.Nodes {
		nb := n.base()
		fmt.Fprintf(&b, "%s = %s(", nb.Label, n.Kind())
		for i, v := range nb.In {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%%%d", v)
		}
		b.WriteString(")")
		if m, ok := n.(*MatMul); ok {
			fmt.Fprintf(&b, " [%s]", strings.Join(m.Weights, "+"))
		}
		if len(nb.Out) > 0 {
			b.WriteString(" ->")
			for _, v := range nb.Out {
				fmt.Fprintf(&b, " %%%d", v)
			}
		}
		if nb.Rule != "" {
			fmt.Fprintf(&b, "  # %s", nb.Rule)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// index is the def-use index of a graph: which node defines each value
// and which nodes read it. Rebuilt after every rewrite (graphs are small).
type index struct {
	def  []int   // node index per value, -1 when defined by nothing (never)
	uses [][]int // node indices per value, ascending
}

func (g *Graph) index() *index {
	ix := &index{def: make([]int, len(g.Values)), uses: make([][]int, len(g.Values))}
	for i := range ix.def {
		ix.def[i] = -1
	}
	for i, n := range g.Nodes {
		b := n.base()
		for _, v := range b.In {
			ix.uses[v] = append(ix.uses[v], i)
		}
		for _, v := range b.Out {
			ix.def[v] = i
		}
	}
	return ix
}

// verify checks that every value is defined once, before every use.
func (g *Graph) verify() error {
	defined := make([]bool, len(g.Values))
	for i, n := range g.Nodes {
		b := n.base()
		for _, v := range b.In {
			if int(v) >= len(g.Values) || !defined[v] {
				return fmt.Errorf("%s graph: node %d %s reads %%%d before it is defined", g.Form, i, b.Label, v)
			}
		}
		for _, v := range b.Out {
			if defined[v] {
				return fmt.Errorf("%s graph: node %d %s defines %%%d again", g.Form, i, b.Label, v)
			}
			defined[v] = true
		}
	}
	return nil
}
