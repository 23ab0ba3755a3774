package cpu

import "unsafe"

// gemvGroup is GEMVs that follow one another in a program and read the
// same x (a layer's q, k and v; gate and up where the plan keeps them
// apart) run as one: x prepared once (loaded, quantized, packed), and
// their rows split over the workers in one pool run rather than one run
// each. Every row gets the dot products it gets alone, so the outputs
// are the members' bits. Encode runs the group in place of its members;
// each member still runs alone through Exec.Run (verify, tests).
type gemvGroup struct {
	members []*gemv
	execs   []*Exec
	ends    []int // items before the end of each member (x16: groups of 16 rows)
	x16     bool
}

// groupGEMVs finds the groups among a program's commands and marks them:
// the first member's Exec holds the group, the others are skipped by
// Encode.
func groupGEMVs(execs []*Exec) {
	for i := 0; i < len(execs); {
		j := i + 1
		for j < len(execs) && joins(execs[i:j], execs[j]) {
			j++
		}
		if j-i >= 2 {
			gg := &gemvGroup{execs: execs[i:j:j]}
			items := 0
			for _, e := range gg.execs {
				g := e.impl.(*gemv)
				gg.x16 = g.x16 != nil
				n := int(g.p.N)
				if gg.x16 {
					n /= x16Rows
				}
				items += n
				gg.members = append(gg.members, g)
				gg.ends = append(gg.ends, items)
				e.grouped = true
			}
			execs[i].group = gg
		}
		i = j
	}
}

// groupable is a GEMV whose run is x's dot products and nothing more: no
// SiLU of two inputs, no fold of a norm or residual, no planar rows, and
// no patches (a group's bindings stay where they were bound).
func groupable(e *Exec) (*gemv, bool) {
	g, ok := e.impl.(*gemv)
	if !ok || g.silu || g.glu || g.norm || g.res || g.planar || len(e.patches) != 0 {
		return nil, false
	}
	return g, true
}

// joins reports whether e can run in one group with the GEMVs of group:
// the same weight type, activation type, layout and K, the same x (buffer
// and offset), and no output that another member reads or writes, so that
// running them together equals running them in turn.
func joins(group []*Exec, e *Exec) bool {
	g, ok := groupable(e)
	if !ok {
		return false
	}
	f, ok := groupable(group[0])
	if !ok || f.wt != g.wt || f.act != g.act || f.x16 != g.x16 || f.p.K != g.p.K {
		return false
	}
	x, fx := e.buf(1), group[0].buf(1)
	if len(x) == 0 || len(fx) == 0 || unsafe.SliceData(x) != unsafe.SliceData(fx) {
		return false
	}
	all := append(group[:len(group):len(group)], e)
	for _, a := range all {
		ya := a.impl.(*gemv).yBytes(a)
		for _, b := range all {
			if a != b && overlapBytes(ya, b.impl.(*gemv).yBytes(b)) {
				return false
			}
			for _, r := range b.impl.(*gemv).reads(b) {
				if overlapBytes(ya, r) {
					return false
				}
			}
		}
	}
	return true
}

// yBytes is what a plain GEMV writes: n rows of y.
func (g *gemv) yBytes(e *Exec) []byte {
	y := e.buf(g.y)
	return y[:min(len(y), int(g.p.N)*g.act.size())]
}

// reads is what a plain GEMV reads: x, W and the bias.
func (g *gemv) reads(e *Exec) [][]byte {
	n, k := int(g.p.N), int(g.p.K)
	x, w := e.buf(1), e.buf(0)
	r := [][]byte{x[:min(len(x), k*g.act.size())], w[:min(len(w), n*g.wt.rowBytes(k))]}
	if g.bias {
		b := e.buf(g.bslot)
		r = append(r, b[:min(len(b), 4*n)])
	}
	return r
}

// run prepares x once (the first member's input, which is every member's),
// then runs every member's rows in one pool run.
func (gg *gemvGroup) run() {
	e0 := gg.execs[0]
	x := gg.members[0].input(e0)
	for i, g := range gg.members {
		g.bindRun(gg.execs[i], x)
	}
	items, ib, align := gg.ends[len(gg.ends)-1], gg.members[0].rb, 4
	if gg.x16 {
		ib, align = x16Rows*ib, 1
	}
	p := e0.b.pool
	p.run(gg, items, p.gemvGrain(items, ib, align), ib)
	e0.b.last = gg.execs[len(gg.execs)-1]
}

// do runs items [i0, i1) of the group: each member's share of them.
func (gg *gemvGroup) do(w, i0, i1 int) {
	lo := 0
	for j, end := range gg.ends {
		if i0 < end && i1 > lo {
			gg.members[j].do(w, max(i0, lo)-lo, min(i1, end)-lo)
		}
		if end >= i1 {
			return
		}
		lo = end
	}
}
