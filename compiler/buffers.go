package compiler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/specs"
)

// storage is where a value lives: a column offset into the rows of a
// scratch buffer (elements), and the row stride (elements) of its root.
type storage struct {
	slot   int // index into scratchPlan.slots
	col    int
	stride int
}

// slot is one scratch buffer.
type slot struct {
	name  string
	elems int // capacity in activation elements
	buf   uint32
}

// scratchPlan is the result of buffer planning.
type scratchPlan struct {
	slots   []*slot
	byName  map[string]*slot
	values  map[*Graph][]storage // per graph, per value
	kv      map[int][2]uint32
	tokens  uint32
	pos     uint32 // io.positions: each batch row's position
	seqs    uint32 // io.seqs: each batch row's sequence slot
	outRows uint32 // io.out_rows: the rows a batch produces outputs for
	argmax  uint32 // io.argmax: a batch's output rows' argmax
	logits  uint32 // io.logits, F32, out rows × vocab (language models)
	// Embedding programs: io.seq_last (non-causal attention: each row's
	// last position of its input), io.pool_ranges (a start and an end row
	// per input), io.embeddings (F32, inputs × dim).
	seqLast, poolRanges, embeddings uint32
	// zeros is an io buffer of u32 zeros (the runtime zeroes it at load), a
	// row's worth per batch row: the ids of an embedding of row 0
	// (ids="zeros").
	zeros   uint32
	parts   uint32 // the parallel attention's partials; valid when hasPart
	hasPart bool
	// normParts: the norm_fold GEMVs' partial sums (a _res GEMV's
	// threadgroups', read by the _norm GEMV after it); valid when some
	// matmul has Residual.
	normParts uint32
	slots0    int // tokens slots
}

// bufferPass plans every buffer that is not a weight.
//
// Assumes: selected kernels.
// Guarantees: every value of every graph has a storage: views (split,
// concat outputs) and in-place results (residual, head norm, rope q,
// bias_add) share their root's; roots get a scratch buffer by linear scan
// over the node order, a buffer reused once the values in it are dead
// (preferring one that held a value of the same name, so names stay
// readable: act.x, act.h, act.qkv); a buffer's size is the most any
// program puts in it (one row in decode, the bucket's rows, or its output
// rows after the gather, in a batch program).
// KV: two f16 buffers per attention layer, [head_dim, ctx, kv_heads] for
// one sequence slot; the runtime allocates as many slots as it uses, up to
// tuning.max_seqs, back to back (sliding-window layers keep the whole
// context for now). io.tokens holds max(chain_chunk + 1, the largest
// bucket) u32 slots; io.positions and io.seqs a u32 per row of the largest
// bucket; io.out_rows and io.argmax a u32 per output row; io.logits the
// output rows' vocab f32 each.
func bufferPass(s *state) (string, error) {
	sp := &scratchPlan{byName: map[string]*slot{}, kv: map[int][2]uint32{}, values: map[*Graph][]storage{}}
	s.scratch = sp
	actBytes := s.act.BlockBytes()
	maxRows, maxOut := map[*Graph]int{}, map[*Graph]int{}
	outRows, inputs := 1, 0 // logits rows; inputs of an embedding replay
	for _, p := range s.progs {
		maxRows[p.g] = max(maxRows[p.g], p.rows)
		maxOut[p.g] = max(maxOut[p.g], p.outRows)
		if p.kind == plans.KindEmbed {
			inputs = max(inputs, p.outRows)
		} else {
			outRows = max(outRows, p.outRows)
		}
	}
	for _, g := range s.graphs {
		st, err := sp.allocate(g, maxRows[g], maxOut[g])
		if err != nil {
			return "", err
		}
		sp.values[g] = st
	}
	p := s.plan
	for _, sl := range sp.slots {
		n := uint64(sl.elems)
		sl.buf = p.AddBuffer(plans.Buffer{Name: sl.name, Kind: plans.BufScratch, Size: n * uint64(actBytes),
			DType: dtypeName(s.act), Shape: []uint64{n}})
	}
	// The parallel decode attention's partial results.
	parts := 0
	for _, pr := range s.progs {
		for i, ks := range pr.kernels {
			if len(ks) == 2 {
				a := pr.g.Nodes[i].(*Attention)
				l, err := ks[0].Geometry(attnShape(s, pr, a), s.tuning)
				if err != nil {
					return "", fmt.Errorf("%s: %w", a.Label, err)
				}
				parts = max(parts, a.Heads*l.Grid[1]*(a.HeadDimV+2))
			}
		}
	}
	// The norm_fold GEMVs' partial sums: a _res GEMV's threadgroups.
	normParts := 0
	for _, pr := range s.progs {
		for i, ks := range pr.kernels {
			if mm, ok := pr.g.Nodes[i].(*MatMul); ok && mm.Residual {
				l, err := ks[0].Geometry(kernels.Shape{Tokens: 1, N: mm.N(), K: mm.K, Bias: len(mm.Biases) > 0}, s.tuning)
				if err != nil {
					return "", fmt.Errorf("%s: %w", mm.Label, err)
				}
				normParts = max(normParts, l.Grid[0])
			}
		}
	}
	if normParts > 0 {
		sp.normParts = p.AddBuffer(plans.Buffer{Name: "norm.partials", Kind: plans.BufScratch, Size: uint64(normParts) * 4,
			DType: "f32", Shape: []uint64{uint64(normParts)}})
	}
	if parts > 0 {
		sp.hasPart = true
		sp.parts = p.AddBuffer(plans.Buffer{Name: "attn.partials", Kind: plans.BufScratch, Size: uint64(parts) * 4,
			DType: "f32", Shape: []uint64{uint64(parts)}})
	}
	// KV, per layer that attends, in layer order.
	var kvBytes uint64
	nonCausal := false
	for _, n := range s.graphs[0].Nodes {
		a, ok := n.(*Attention)
		if ok && a.NonCausal {
			nonCausal = true
		}
		if !ok {
			continue
		}
		if _, done := sp.kv[a.KVLayer]; done {
			continue
		}
		var pair [2]uint32
		for h, half := range []plans.KVHalf{plans.KVKey, plans.KVValue} {
			hd := a.HeadDim
			if half == plans.KVValue {
				hd = a.HeadDimV
			}
			shape := []uint64{uint64(hd), uint64(s.ctx), uint64(a.KVHeads)}
			row, err := kvRowBytes(s.kv, hd)
			if err != nil {
				return "", err
			}
			size := row * shape[1] * shape[2]
			kvBytes += size
			pair[h] = p.AddBuffer(plans.Buffer{Name: fmt.Sprintf("kv.L%d.%s", a.KVLayer, strings.ToLower(half.String())),
				Kind: plans.BufKV, Size: size, DType: strings.ToLower(s.kv.String()), Shape: shape, Layer: uint32(a.KVLayer), Half: half})
		}
		sp.kv[a.KVLayer] = pair
	}
	sp.slots0 = s.tuning.ChainChunk + 1
	for _, b := range s.buckets {
		sp.slots0 = max(sp.slots0, b)
	}
	u32s := func(name string, n int, role string) uint32 {
		return p.AddBuffer(plans.Buffer{Name: name, Kind: plans.BufIO, Size: 4 * uint64(n), DType: "u32",
			Shape: []uint64{uint64(n)}, Role: role})
	}
	sp.tokens = u32s("io.tokens", sp.slots0, "tokens")
	if len(s.buckets) > 0 {
		rows := slices.Max(s.buckets)
		sp.pos = u32s("io.positions", rows, "positions")
		sp.seqs = u32s("io.seqs", rows, "seqs")
		sp.outRows = u32s("io.out_rows", outRows, "out_rows")
		sp.argmax = u32s("io.argmax", outRows, "argmax")
	}
	if s.graph(FormDecode) != nil {
		vocab := uint64(s.hp.Vocab)
		sp.logits = p.AddBuffer(plans.Buffer{Name: "io.logits", Kind: plans.BufIO, Size: 4 * vocab * uint64(outRows), DType: "f32",
			Shape: []uint64{vocab, uint64(outRows)}, Role: "logits"})
	}
	for _, g := range s.graphs {
		for _, n := range g.Nodes {
			if e, ok := n.(*Embed); ok && e.Ids == specs.IdsZeros && sp.zeros == 0 {
				sp.zeros = u32s("io.zeros", slices.Max(s.buckets), "zeros")
			}
		}
	}
	if g := s.graph(FormEmbed); g != nil {
		if nonCausal {
			sp.seqLast = u32s("io.seq_last", slices.Max(s.buckets), "seq_last")
		}
		sp.poolRanges = u32s("io.pool_ranges", 2*inputs, "pool_ranges")
		dim := uint64(g.Values[g.Nodes[len(g.Nodes)-1].base().In[0]].Width)
		sp.embeddings = p.AddBuffer(plans.Buffer{Name: "io.embeddings", Kind: plans.BufIO, Size: 4 * dim * uint64(inputs), DType: "f32",
			Shape: []uint64{dim, uint64(inputs)}, Role: "embeddings"})
	}
	var scratchBytes uint64
	for _, sl := range sp.slots {
		scratchBytes += uint64(sl.elems * actBytes)
	}
	return fmt.Sprintf("%d scratch buffers (%d bytes), KV %d bytes for %d positions, %d token slots",
		len(sp.slots), scratchBytes, kvBytes, s.ctx, sp.slots0), nil
}

// allocate assigns storage to the values of g, whose batch values have
// rows rows, and those after the gather outRows.
func (sp *scratchPlan) allocate(g *Graph, rows, outRows int) ([]storage, error) {
	n := len(g.Values)
	root := make([]ValueID, n)
	col := make([]int, n)
	width := make([]int, n) // of roots
	for v := range root {
		root[v] = ValueID(v)
		width[v] = g.Values[v].Width
	}
	alias := func(v, of ValueID, off int) {
		root[v], col[v] = root[of], col[of]+off
	}
	for _, nd := range g.Nodes {
		b := nd.base()
		switch nd := nd.(type) {
		case *Split:
			off := 0
			for k, v := range b.Out {
				alias(v, b.In[0], off)
				off += nd.Sizes[k]
			}
		case *MatMul:
			if nd.Residual { // Out = [res, y]: res is updated in place
				alias(b.Out[0], b.In[1], 0)
			}
			if nd.Concat && !nd.GLU { // a GLU's one output is its own value
				width[b.Out[0]] = nd.N()
				off := 0
				for k, v := range b.Out {
					if k > 0 {
						alias(v, b.Out[0], off)
					}
					off += nd.Ns[k]
				}
			}
		case *Norm:
			if nd.Residual {
				alias(b.Out[0], b.In[1], 0)
			}
		case *HeadNorm, *RopeKV:
			alias(b.Out[0], b.In[0], 0)
		case *Elementwise:
			if nd.Op == EwBiasAdd {
				alias(b.Out[0], b.In[0], 0)
			}
		}
	}
	// Liveness of roots over node indices.
	first := make([]int, n)
	last := make([]int, n)
	for v := range first {
		first[v], last[v] = -1, -1
	}
	for i, nd := range g.Nodes {
		b := nd.base()
		for _, v := range b.Out {
			r := root[v]
			if first[r] < 0 {
				first[r] = i
			}
			last[r] = max(last[r], i)
		}
		for _, v := range b.In {
			last[root[v]] = max(last[root[v]], i)
		}
	}
	tagOf := func(r ValueID, i int) string {
		if nm := g.Values[r].Name; nm != "" {
			return nm
		}
		l := g.Nodes[i].base().Label
		return l[strings.LastIndexByte(l, '.')+1:]
	}
	slotOf := make([]int, n)
	busy := map[int]bool{} // slots in use (local indices into sp.slots)
	held := make([]int, 0) // slots used by this graph, for release bookkeeping
	var lastTag = map[int]string{}
	for i, nd := range g.Nodes {
		for _, v := range nd.base().Out {
			if root[v] != ValueID(v) {
				continue
			}
			r := ValueID(v)
			tag := tagOf(r, i)
			need := width[r] * rows
			if g.Values[r].Out {
				need = width[r] * outRows
			}
			pick := -1
			for _, k := range held {
				if !busy[k] && lastTag[k] == tag {
					pick = k
					break
				}
			}
			if pick < 0 {
				for _, k := range held {
					if !busy[k] {
						pick = k
						break
					}
				}
			}
			if pick < 0 {
				pick = sp.slotNamed(tag, held)
				held = append(held, pick)
			}
			busy[pick] = true
			lastTag[pick] = tag
			slotOf[r] = pick
			sp.slots[pick].elems = max(sp.slots[pick].elems, need)
		}
		// Release the roots whose last use is this node (after its outputs
		// are placed, so that no output overlaps an input).
		for _, v := range append(append([]ValueID{}, nd.base().In...), nd.base().Out...) {
			r := root[v]
			if last[r] == i && busy[slotOf[r]] {
				busy[slotOf[r]] = false
			}
		}
	}
	st := make([]storage, n)
	for v := range st {
		r := root[v]
		st[v] = storage{slot: slotOf[r], col: col[v], stride: width[r]}
	}
	return st, nil
}

// slotNamed returns a slot for tag that this graph does not hold yet: the
// existing one of that name (another graph's), or a new one.
func (sp *scratchPlan) slotNamed(tag string, held []int) int {
	for k := 0; ; k++ {
		name := "act." + tag
		if k > 0 {
			name = fmt.Sprintf("act.%s.%d", tag, k)
		}
		sl, ok := sp.byName[name]
		if !ok {
			sl = &slot{name: name}
			sp.byName[name] = sl
			sp.slots = append(sp.slots, sl)
		}
		idx := indexOf(sp.slots, sl)
		taken := false
		for _, h := range held {
			if h == idx {
				taken = true
			}
		}
		if !taken {
			return idx
		}
	}
}

func indexOf(ss []*slot, s *slot) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

// attnShape is the kernel shape of an attention node in program p.
func attnShape(s *state, p *program, a *Attention) kernels.Shape {
	return kernels.Shape{Tokens: p.rows, Heads: a.Heads, KVHeads: a.KVHeads, HeadDim: a.HeadDim, HeadDimV: a.HeadDimV,
		MaxCtx: s.ctx, Softcap: a.Softcap > 0, Window: a.Window > 0}
}
