package compiler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
)

// layoutPass creates the weight buffers and the derived ones.
//
// Assumes: fused graphs.
// Guarantees: one weight buffer per tensor a graph reads, in first-use
// order (decode graph first), pointing into the file (offset =
// FileOffset, size = the tensor's bytes); one derived concat_rows buffer per
// concat matmul (and one for its biases), its sources of one dtype (the
// fusion condition same_weights) and sizes adding up; one derived repack
// buffer ("<tensor>.x16") per single-weight matmul whose type the target
// repacks (tuning.repack; N a multiple of 16), which every program then
// reads instead of the tensor; one derived planar buffer ("<tensor>.planar",
// "<label>.planar" for a concat) per matmul of the decode graph whose type
// has a planar layout the target reads (tuning.repack: q4_0_planar), which
// the GEMVs read (the GEMMs keep the file's layout). A tied LM head reads
// the token embedding's buffer (or its repacked copy). No weight byte is
// read.
func layoutPass(s *state) (string, error) {
	s.plan = &plans.Plan{}
	s.weights = map[string]uint32{}
	s.derived = map[string]uint32{}
	weight := func(name string) (uint32, error) {
		if i, ok := s.weights[name]; ok {
			return i, nil
		}
		t, ok := s.tensors[name]
		if !ok {
			return 0, fmt.Errorf("%s: %w: the program reads a tensor the file lacks", name, ErrUnsupported)
		}
		shape := make([]uint64, len(t.Dims))
		copy(shape, t.Dims)
		i := s.plan.AddBuffer(plans.Buffer{Name: name, Kind: plans.BufWeight, Size: uint64(t.Size),
			DType: dtypeName(t.Type), Shape: shape, Tensor: name, Offset: uint64(t.FileOffset)})
		s.weights[name] = i
		return i, nil
	}
	var derived, repacks, planars []*MatMul
	for gi, g := range s.graphs {
		for _, n := range g.Nodes {
			for _, name := range tensorsOf(n) {
				if _, err := weight(name); err != nil {
					return "", err
				}
			}
			if mm, ok := n.(*MatMul); ok {
				if mm.Concat {
					derived = append(derived, mm)
				} else if r := s.repackOf(mm); r != "" {
					repacks = append(repacks, mm)
				}
				if gi == 0 && s.planarOf(mm) != "" { // the decode graph's GEMVs
					planars = append(planars, mm)
				}
			}
		}
	}
	nw := len(s.plan.Buffers)
	for _, mm := range derived {
		for _, part := range []struct {
			names  []string
			suffix string
		}{{mm.Weights, ".weight"}, {mm.Biases, ".bias"}} {
			if len(part.names) == 0 {
				continue
			}
			name := mm.Label + part.suffix
			if _, ok := s.derived[name]; ok {
				continue
			}
			b := plans.Buffer{Name: name, Kind: plans.BufDerived, Recipe: plans.RecipeConcatRows}
			var rows uint64
			for j, src := range part.names {
				w := &s.plan.Buffers[s.weights[src]]
				if j == 0 {
					b.DType = w.DType
				} else if w.DType != b.DType {
					return "", fmt.Errorf("%s: %w: concat_rows of %s and %s", name, ErrUnsupported, b.DType, w.DType)
				}
				b.Sources = append(b.Sources, s.weights[src])
				b.Size += w.Size
				rows += w.Shape[len(w.Shape)-1]
			}
			if part.suffix == ".weight" {
				b.Shape = []uint64{uint64(mm.K), rows}
			} else {
				b.Shape = []uint64{rows}
			}
			s.derived[name] = s.plan.AddBuffer(b)
		}
	}
	for _, mm := range repacks {
		name := mm.Weights[0] + ".x16"
		if _, ok := s.derived[name]; ok {
			continue
		}
		w := &s.plan.Buffers[s.weights[mm.Weights[0]]]
		s.derived[name] = s.plan.AddBuffer(plans.Buffer{Name: name, Kind: plans.BufDerived, Recipe: s.repackOf(mm),
			DType: w.DType, Size: w.Size, Shape: append([]uint64(nil), w.Shape...), Sources: []uint32{s.weights[mm.Weights[0]]}})
	}
	for _, mm := range planars {
		name := planarName(mm)
		if _, ok := s.derived[name]; ok {
			continue
		}
		w := &s.plan.Buffers[s.weights[mm.Weights[0]]]
		b := plans.Buffer{Name: name, Kind: plans.BufDerived, Recipe: s.planarOf(mm), DType: w.DType,
			Shape: []uint64{uint64(mm.K), uint64(mm.N())}}
		for _, src := range mm.Weights {
			b.Sources = append(b.Sources, s.weights[src])
			b.Size += s.plan.Buffers[s.weights[src]].Size
		}
		s.derived[name] = s.plan.AddBuffer(b)
	}
	tied := ""
	if s.hp.TiedOutput {
		tied = ", LM head tied to the token embedding"
	}
	return fmt.Sprintf("%d weight buffers, %d derived%s", nw, len(s.plan.Buffers)-nw, tied), nil
}

// repackOf is the repack recipe of a single-weight matmul's weight when the
// target repacks its type (tuning.repack), its shape allows it (whole
// 16-row groups, whole blocks) and, for the LM head, the layout pays at
// one row (kernels.RepackOneRow); "" otherwise.
func (s *state) repackOf(mm *MatMul) string {
	if mm.Concat || len(mm.Weights) != 1 {
		return ""
	}
	t := s.tensors[mm.Weights[0]]
	r := kernels.RepackRecipe(t.Type)
	if r == "" || !slices.Contains(s.tuning.Repack, strings.TrimPrefix(r, plans.RecipeRepackPrefix)) {
		return ""
	}
	if mm.Label == "logits" && !kernels.RepackOneRow(t.Type) { // the LM head meets one row at a time
		return ""
	}
	if bs := t.Type.BlockSize(); mm.N()%16 != 0 || bs == 0 || mm.K%int(bs) != 0 {
		return ""
	}
	return r
}

// planarOf is the planar recipe of a matmul's weight (its sources stacked
// when it is a concat) when the target reads that layout (tuning.repack)
// and the matmul is not SiLU-fused (the planar GEMV has no _silu form); ""
// otherwise.
func (s *state) planarOf(mm *MatMul) string {
	if mm.SiLU || len(mm.Weights) == 0 {
		return ""
	}
	t := s.tensors[mm.Weights[0]]
	r := kernels.PlanarRecipe(t.Type)
	if r == "" || !slices.Contains(s.tuning.Repack, strings.TrimPrefix(r, plans.RecipeRepackPrefix)) {
		return ""
	}
	if bs := t.Type.BlockSize(); bs == 0 || mm.K%int(bs) != 0 {
		return ""
	}
	if mm.GLU { // its gate and up rows interleaved
		return kernels.PlanarPairsRecipe(t.Type)
	}
	return r
}

// planarName is the name of a matmul's planar buffer: its label's for a
// concat (the stacked rows are the matmul's own), else its tensor's (a
// tied LM head and the embedding share one).
func planarName(mm *MatMul) string {
	if mm.Concat {
		return mm.Label + ".planar"
	}
	return mm.Weights[0] + ".planar"
}

// planar is the derived planar buffer of a matmul's weight, if the layout
// pass made one.
func (s *state) planar(mm *MatMul) (uint32, bool) {
	i, ok := s.derived[planarName(mm)]
	return i, ok
}

// repacked is the derived repack buffer of a matmul's weight, if the layout
// pass made one.
func (s *state) repacked(mm *MatMul) (uint32, bool) {
	if mm.Concat || len(mm.Weights) != 1 {
		return 0, false
	}
	i, ok := s.derived[mm.Weights[0]+".x16"]
	return i, ok
}

// tensorsOf lists the tensors a node reads, in binding order.
func tensorsOf(n Node) []string {
	var out []string
	add := func(names ...string) {
		for _, s := range names {
			if s != "" {
				out = append(out, s)
			}
		}
	}
	switch n := n.(type) {
	case *Embed:
		add(n.Table)
	case *Norm:
		add(n.Weight, n.Bias)
	case *HeadNorm:
		add(n.Weight)
	case *MatMul:
		add(n.Weights...)
		add(n.Biases...)
	case *Elementwise:
		add(n.Bias)
	case *Rope:
		add(n.Factors, n.LongFactors)
	case *RopeKV:
		add(n.QNorm, n.KNorm, n.Factors, n.LongFactors)
	case *MatMulID:
		add(n.Weight)
	case *Attention, *Split, *Tail, *Route, *MoESum:
	}
	return out
}

// dtypeName is the GGML type name in lower case, as plans write it.
func dtypeName(t dtype.Type) string { return strings.ToLower(t.String()) }
