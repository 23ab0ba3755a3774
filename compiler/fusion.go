package compiler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/specs"
)

// fusePass applies the rules of fusion.rules to every graph.
//
// Assumes: graphs as lower leaves them.
// Guarantees: no rule of the file matches any more; every node a rule made
// carries the rule's ID (file:line name); the graph is still in a valid
// order (each rewrite is checked before it is applied); attention nodes
// read the KV cache (a rope_kv rule fired), or the pass fails.
func fusePass(s *state) (string, error) {
	rules, err := Rules()
	if err != nil {
		return "", err
	}
	counts := map[string]int{}
	for _, g := range s.graphs {
		n := fuse(s, g, rules)
		if g == s.graphs[0] {
			counts = n
		}
		for _, nd := range g.Nodes {
			if a, ok := nd.(*Attention); ok && !a.Cached {
				return "", fmt.Errorf("%s: %w: no rule writes its KV cache", a.Label, ErrUnsupported)
			}
		}
	}
	var parts []string
	for _, r := range rules {
		if counts[r.Name] > 0 {
			parts = append(parts, fmt.Sprintf("%s×%d", r.Name, counts[r.Name]))
		}
	}
	return fmt.Sprintf("%s: %d nodes; %s", s.graphs[0].Form, len(s.graphs[0].Nodes), strings.Join(parts, " ")), nil
}

// fuse rewrites g to a fixpoint: each rule in file order over every node,
// again from the first rule while any fired. It returns how often each rule
// fired.
func fuse(s *state, g *Graph, rules []*Rule) map[string]int {
	counts := map[string]int{}
	ix := g.index()
	for {
		fired := false
		for _, r := range rules {
			for i := 0; i < len(g.Nodes); i++ {
				if !slices.Contains(r.Root.Kinds, g.Nodes[i].Kind()) {
					continue
				}
				if apply(s, g, ix, r, i) {
					counts[r.Name]++
					fired = true
					ix = g.index()
				}
			}
		}
		if !fired {
			return counts
		}
	}
}

// match is one match of a rule's pattern.
type match struct {
	rule  *Rule
	root  int
	nodes []int // node indices in pattern pre-order, root first
	vars  map[string]ValueID
}

func (m *match) has(i int) bool { return slices.Contains(m.nodes, i) }

// fuseCtx is what conditions and results see.
type fuseCtx struct {
	s  *state
	g  *Graph
	ix *index
}

func (c *fuseCtx) node(i int) Node { return c.g.Nodes[i] }

// dtypeOf is the weight type of a tensor (F32 for an unknown name: the
// tests' hand-built graphs name no file).
func (c *fuseCtx) dtypeOf(tensor string) dtype.Type {
	if c.s == nil || c.s.tensors == nil {
		return dtype.F32
	}
	if t, ok := c.s.tensors[tensor]; ok {
		return t.Type
	}
	return dtype.F32
}

// apply tries rule r rooted at node i and rewrites the graph if it matches,
// its conditions hold and the rewrite keeps the graph valid.
func apply(s *state, g *Graph, ix *index, r *Rule, i int) bool {
	root := g.Nodes[i].base()
	if root.fired&(1<<r.index) != 0 {
		return false
	}
	c := &fuseCtx{s: s, g: g, ix: ix}
	m := &match{rule: r, root: i, vars: map[string]ValueID{}}
	if !c.match(r.Root, i, m) {
		return false
	}
	for _, cd := range r.Conds {
		v, ok := m.vars[cd.Var]
		if cd.Var != "" && !ok {
			return false
		}
		if !ruleConds[cd.Name].fn(c, m, v) {
			return false
		}
	}
	repl := ruleResults[r.Result](c, m)
	if repl == nil || !c.valid(m, repl) {
		return false
	}
	id := r.ID()
	for _, n := range repl {
		if n != g.Nodes[i] && n.base().Rule == "" {
			n.base().Rule = id
		}
	}
	g.Nodes[i].base().fired |= 1 << r.index
	var out []Node
	for j, n := range g.Nodes {
		switch {
		case j == i:
			out = append(out, repl...)
		case !m.has(j):
			out = append(out, n)
		}
	}
	g.Nodes = out
	return true
}

// ruleLabel is the label a rule gives the node it makes: its label clause
// after the layer, or dflt.
func ruleLabel(m *match, layer int, dflt string) string {
	if m.rule.Label == "" {
		return dflt
	}
	return layerLabel(layer, m.rule.Label)
}

func layerLabel(layer int, l string) string {
	if layer < 0 {
		return l
	}
	return fmt.Sprintf("L%d.%s", layer, l)
}

// match matches term t against node i.
func (c *fuseCtx) match(t *Term, i int, m *match) bool {
	n := c.g.Nodes[i]
	b := n.base()
	if !slices.Contains(t.Kinds, n.Kind()) || len(t.Args) != len(b.In) || m.has(i) {
		return false
	}
	m.nodes = append(m.nodes, i)
	for k, a := range t.Args {
		v := b.In[k]
		switch {
		case a.Term != nil:
			d := c.ix.def[v]
			if d < 0 || !c.match(a.Term, d, m) {
				return false
			}
		case a.Var == "_":
		default:
			if w, ok := m.vars[a.Var]; ok && w != v {
				return false
			}
			m.vars[a.Var] = v
		}
	}
	return true
}

// valid checks the rewrite of m into repl (placed where the root was):
// values only the matched nodes made and repl does not are read by no one
// else, repl reads only values defined before it, and whatever repl
// defines is read by no node before it.
func (c *fuseCtx) valid(m *match, repl []Node) bool {
	kept := map[ValueID]bool{}
	for _, n := range repl {
		for _, v := range n.base().Out {
			kept[v] = true
		}
	}
	for _, j := range m.nodes {
		for _, v := range c.g.Nodes[j].base().Out {
			if kept[v] {
				continue
			}
			for _, u := range c.ix.uses[v] {
				if !m.has(u) {
					return false
				}
			}
		}
	}
	defined := map[ValueID]bool{}
	for _, n := range repl {
		b := n.base()
		for _, v := range b.In {
			if defined[v] {
				continue
			}
			if int(v) >= len(c.ix.def) {
				return false // a new value no node of repl defines
			}
			if d := c.ix.def[v]; d < 0 || m.has(d) || d > m.root {
				return false
			}
		}
		for _, v := range b.Out {
			defined[v] = true
			if int(v) >= len(c.ix.uses) {
				continue // a value the rewrite made: no one reads it yet
			}
			for _, u := range c.ix.uses[v] {
				if !m.has(u) && u < m.root {
					return false
				}
			}
		}
	}
	return true
}

// condDef is a condition rules may use.
type condDef struct {
	takesVar bool
	doc      string
	fn       func(c *fuseCtx, m *match, v ValueID) bool
}

// ruleConds are the conditions of fusion.rules.
var ruleConds = map[string]condDef{
	"decode": {false, "the graph is a one-token program (decode, sampled)",
		func(c *fuseCtx, _ *match, _ ValueID) bool { return !c.g.Form.Batched() }},
	"batch": {false, "the graph is a batch (prefill, or an embedding program)",
		func(c *fuseCtx, _ *match, _ ValueID) bool { return c.g.Form.Batched() }},
	"fuse_weights": {false, "the chip's tuning fuses weights (tuning.fuse_weights)",
		func(c *fuseCtx, _ *match, _ ValueID) bool { return c.s != nil && c.s.tuning.FuseWeights }},
	"same_weights": {false, "the matmuls the root reads are single weights of one dtype and K, all with a bias or none",
		func(c *fuseCtx, m *match, _ ValueID) bool { return sameWeights(c, argMatmuls(c, m)) }},
	"gemv_silu": {false, "the catalog has the SiLU-fused GEMV for the root's weight, shape and tuning, and the tuning does not split SiLU (tuning.split_silu)",
		func(c *fuseCtx, m *match, _ ValueID) bool {
			mm, ok := c.node(m.root).(*MatMul)
			if !ok || len(mm.Weights) != 1 || c.s == nil {
				return c.s == nil && ok
			}
			if c.s.tuning.SplitSiLU {
				return false
			}
			_, err := kernels.SelectGEMV(c.s.tuning, c.dtypeOf(mm.Weights[0]), mm.N(), mm.K, true, c.s.act)
			return err == nil
		}},
	"kernel_bias": {false, "the matmul's GEMV and GEMM kernels add a bias (a has_bias constant)",
		func(c *fuseCtx, m *match, _ ValueID) bool {
			for _, mm := range argMatmuls(c, m) {
				act := dtype.F16
				if c.s != nil {
					act = c.s.act
				}
				k, ok := kernels.Lookup(kernels.GEMVName(c.dtypeOf(mm.Weights[0]), 0, act))
				if !ok || !slices.ContainsFunc(k.Constants, func(k kernels.Constant) bool { return k.Name == "has_bias" }) {
					return false
				}
			}
			return true
		}},
	"fold_norms": {false, "the chip's tuning folds norms of this width and residual adds into the GEMVs (tuning.fold_norms_max_dim)",
		func(c *fuseCtx, m *match, _ ValueID) bool {
			mm, ok := c.node(m.root).(*MatMul)
			return c.s != nil && ok && mm.K <= c.s.tuning.FoldNormsMaxDim
		}},
	"rope_in_attention": {false, "the chip's tuning rotates q and k in the decode attention (tuning.rope_in_attention)",
		func(c *fuseCtx, _ *match, _ ValueID) bool { return c.s != nil && c.s.tuning.RopeInAttention }},
	"neox": {false, "the ropes of the match rotate NeoX pairs",
		func(c *fuseCtx, m *match, _ ValueID) bool {
			for _, j := range m.nodes {
				if r, ok := c.node(j).(*Rope); ok && r.Style != specs.RopeNeox {
					return false
				}
			}
			return true
		}},
	"dies": {true, "no node after the root reads the variable's value (it is updated in place)",
		func(c *fuseCtx, m *match, v ValueID) bool {
			for _, u := range c.ix.uses[v] {
				if !m.has(u) && u > m.root {
					return false
				}
			}
			return true
		}},
}

// foldable reports whether the GEMV the matmul will get has the form with
// variant v (kernels.Norm, kernels.Residual): the planar GEMVs have them.
func (c *fuseCtx) foldable(mm *MatMul, v kernels.Variant) bool {
	if c.s == nil || len(mm.Weights) == 0 || c.s.planarOf(mm) == "" {
		return false
	}
	_, err := kernels.Find(kernels.Spec{Op: kernels.OpGEMV, DType: c.dtypeOf(mm.Weights[0]), Variant: kernels.Planar | forms(mm) | v, Act: c.s.act})
	return err == nil
}

// argMatmuls are the matmul nodes the root reads directly (its argument
// terms), in argument order.
func argMatmuls(c *fuseCtx, m *match) []*MatMul {
	var out []*MatMul
	root := c.node(m.root).base()
	for _, v := range root.In {
		d := c.ix.def[v]
		if d < 0 || !m.has(d) {
			continue
		}
		if mm, ok := c.node(d).(*MatMul); ok && !slices.ContainsFunc(out, func(x *MatMul) bool { return x == mm }) {
			out = append(out, mm)
		}
	}
	return out
}

func sameWeights(c *fuseCtx, ms []*MatMul) bool {
	if len(ms) < 2 {
		return false
	}
	for _, mm := range ms {
		if mm.Concat || mm.SiLU || len(mm.Weights) != 1 ||
			mm.K != ms[0].K || len(mm.Biases) != len(ms[0].Biases) ||
			c.dtypeOf(mm.Weights[0]) != c.dtypeOf(ms[0].Weights[0]) {
			return false
		}
	}
	return true
}

// ruleResults are the rewrites of fusion.rules: each builds the nodes that
// replace a match (nil: the match does not fit after all).
var ruleResults = map[string]func(c *fuseCtx, m *match) []Node{
	"embedding_scaled": func(c *fuseCtx, m *match) []Node {
		sc := c.node(m.root).(*Elementwise)
		e := *c.node(m.nodes[1]).(*Embed)
		e.Out = clone(sc.Out)
		e.Scale *= sc.Alpha
		e.fired = 0
		return []Node{&e}
	},
	"matmul_bias": func(c *fuseCtx, m *match) []Node {
		ba := c.node(m.root).(*Elementwise)
		mm := *c.node(m.nodes[1]).(*MatMul)
		if len(mm.Weights) != 1 || len(mm.Biases) != 0 || mm.SiLU {
			return nil
		}
		mm.Biases = []string{ba.Bias}
		mm.Out = clone(ba.Out)
		mm.fired = 0
		return []Node{&mm}
	},
	"rope_kv_write": func(c *fuseCtx, m *match) []Node {
		at := *c.node(m.root).(*Attention)
		if at.Cached { // its cache is written already (attn_rope: by the attention itself)
			return nil
		}
		var ropes []*Rope
		var norms []*HeadNorm
		for _, j := range m.nodes[1:] {
			switch n := c.node(j).(type) {
			case *Rope:
				ropes = append(ropes, n)
			case *HeadNorm:
				norms = append(norms, n)
			}
		}
		rk := &RopeKV{Base: Base{Layer: at.Layer, Label: ruleLabel(m, at.Layer, at.Label)},
			Heads: at.Heads, KVHeads: at.KVHeads, HeadDim: at.HeadDim, HeadDimV: at.HeadDimV, KVLayer: at.KVLayer}
		rk.In = []ValueID{m.vars["q"], m.vars["k"], m.vars["v"]}
		switch len(ropes) {
		case 2:
			q, k := ropes[0], ropes[1]
			if q.RopeArgs != k.RopeArgs {
				return nil
			}
			rk.RopeArgs, rk.Out = q.RopeArgs, []ValueID{q.Out[0]}
		case 0:
			// No RoPE (an encoder's absolute positions): rope_dim 0
			// rotates nothing, and q goes through to a new value. A q or
			// k that a rope made is rope_kv's, never written unrotated.
			for _, v := range rk.In[:2] {
				if d := c.ix.def[v]; d >= 0 {
					if _, ok := c.node(d).(*Rope); ok {
						return nil
					}
				}
			}
			q := c.g.Values[m.vars["q"]]
			q.Name = ""
			c.g.Values = append(c.g.Values, q)
			rk.Out = []ValueID{ValueID(len(c.g.Values) - 1)}
		default:
			return nil
		}
		if len(norms) == 2 {
			if norms[0].Eps != norms[1].Eps {
				return nil
			}
			rk.QNorm, rk.KNorm, rk.Eps = norms[0].Weight, norms[1].Weight, norms[0].Eps
		}
		at.Cached = true
		at.In = []ValueID{rk.Out[0]}
		at.fired = 0
		return []Node{rk, &at}
	},
	"attention_rope": func(c *fuseCtx, m *match) []Node {
		at := *c.node(m.root).(*Attention)
		rk := *c.node(m.nodes[1]).(*RopeKV)
		if at.Rope != nil || at.NonCausal || rk.RopeArgs.Dim == 0 || len(c.ix.uses[rk.Out[0]]) != 1 || c.s == nil || c.s.kvVar != 0 {
			return nil
		}
		if k, err := kernels.SelectDecodeAttention(c.s.tuning, c.s.ctx, c.s.act); err != nil || k.Variant&kernels.Parallel == 0 {
			return nil // the rotating attention is the parallel one
		}
		if _, err := kernels.Find(kernels.Spec{Op: kernels.OpAttentionDecodeRoPE, Variant: attnRoPEVariant(&rk), Act: c.s.act}); err != nil {
			return nil
		}
		at.Rope = &rk
		at.In = clone(rk.In)
		at.Label = ruleLabel(m, at.Layer, at.Label)
		at.fired = 0
		return []Node{&at}
	},
	"matmul_silu": func(c *fuseCtx, m *match) []Node {
		mm := *c.node(m.root).(*MatMul)
		if len(mm.Weights) != 1 {
			return nil
		}
		mm.SiLU = true
		mm.Label = ruleLabel(m, mm.Layer, mm.Label)
		mm.In = []ValueID{m.vars["g"], m.vars["u"]}
		mm.fired = 0
		return []Node{&mm}
	},
	"gate": func(c *fuseCtx, m *match) []Node {
		mul := c.node(m.root).(*Elementwise)
		op := EwSiLUGate
		if c.node(m.nodes[1]).(*Elementwise).Op == EwGELU {
			op = EwGELUGate
		}
		return []Node{&Elementwise{Base: Base{Layer: mul.Layer, Label: ruleLabel(m, mul.Layer, mul.Label), In: []ValueID{m.vars["g"], m.vars["u"]}, Out: clone(mul.Out)}, Op: op}}
	},
	"matmul_glu": func(c *fuseCtx, m *match) []Node {
		gate := c.node(m.root).(*Elementwise)
		mm := *c.node(m.nodes[1]).(*MatMul)
		g, u := gate.In[0], gate.In[1]
		if !mm.Concat || mm.GLU || mm.SiLU || len(mm.Weights) != 2 || len(mm.Out) != 2 || mm.Out[0] != g || mm.Out[1] != u ||
			len(c.ix.uses[g]) != 1 || len(c.ix.uses[u]) != 1 || c.s == nil || c.s.planarOf(&mm) == "" {
			return nil
		}
		if _, err := kernels.Find(kernels.Spec{Op: kernels.OpGEMV, DType: c.dtypeOf(mm.Weights[0]), Variant: kernels.Planar | forms(&mm) | kernels.GLU, Act: c.s.act}); err != nil {
			return nil
		}
		mm.GLU, mm.Out, mm.fired = true, clone(gate.Out), 0
		return []Node{&mm}
	},
	"concat": func(c *fuseCtx, m *match) []Node {
		ms := argMatmuls(c, m)
		if !sameWeights(c, ms) {
			return nil
		}
		f := &MatMul{Base: Base{Layer: ms[0].Layer, Label: layerLabel(ms[0].Layer, m.rule.Label), In: clone(ms[0].In)},
			K: ms[0].K, Concat: true}
		for _, mm := range ms {
			f.Weights = append(f.Weights, mm.Weights...)
			f.Biases = append(f.Biases, mm.Biases...)
			f.Ns = append(f.Ns, mm.Ns...)
			f.Out = append(f.Out, mm.Out...)
		}
		return []Node{f, c.node(m.root)}
	},
	"group": func(c *fuseCtx, m *match) []Node {
		var out []Node
		for _, mm := range argMatmuls(c, m) {
			cp := *mm
			cp.Label = layerLabel(mm.Layer, m.rule.Label)
			cp.Rule = m.rule.ID()
			out = append(out, &cp)
		}
		return append(out, c.node(m.root))
	},
	"matmul_norm_fold": func(c *fuseCtx, m *match) []Node {
		cons := *c.node(m.root).(*MatMul)
		n := c.node(m.nodes[1]).(*Norm)
		prod := *c.node(m.nodes[2]).(*MatMul)
		if n.LN || n.Bias != "" || len(c.ix.uses[n.Out[1]]) != 1 || cons.SiLU || prod.SiLU || prod.GLU || prod.Concat ||
			cons.Norm || cons.Residual || prod.Norm || prod.Residual ||
			!c.foldable(&prod, kernels.Residual) || !c.foldable(&cons, kernels.Norm) {
			return nil
		}
		prod.Residual, prod.NormW, prod.NormEps = true, n.Weight, n.Eps
		prod.In = []ValueID{m.vars["a"], m.vars["x"]}
		prod.Out = []ValueID{n.Out[0], n.Out[1]}
		prod.fired = 0
		cons.Norm, cons.NormEps = true, n.Eps
		cons.In = []ValueID{n.Out[1]}
		cons.fired = 0
		return []Node{&prod, &cons}
	},
	"residual_norm": func(c *fuseCtx, m *match) []Node {
		n := *c.node(m.root).(*Norm)
		add := c.node(m.nodes[1]).(*Elementwise)
		n.Residual = true
		n.In = []ValueID{m.vars["d"], m.vars["x"]}
		n.Out = []ValueID{add.Out[0], n.Out[0]}
		n.fired = 0
		return []Node{&n}
	},
}
