package cpu

import (
	"fmt"
	"math"

	"github.com/akunu-dev/akunu/runtime/device"
)

// rowSubset is a GEMV's or GEMM's restriction to some of its output rows
// (OutputRows): the pool runs only the items (rows, or x16 groups of 16)
// that hold a listed row, and every other row of each output row is -inf.
// Its slices keep their capacity from one restriction to the next, so a
// drafter that moves its shortlist allocates only when it grows.
type rowSubset struct {
	on    bool
	items []device.Span // in items, sorted, merged
	ends  []int         // ends[i]: the items in items[:i+1]
	t     task          // the command's own items
}

// set restricts to spans (rows, sorted, disjoint) of n rows, the command's
// items per rows each; the items are taken in whole quads of rows (an x16
// group is one), as the unrestricted run's chunks start, so that a listed
// row gets the same bits. nil lifts the restriction.
func (s *rowSubset) set(spans []device.Span, per, n int) error {
	s.on = spans != nil
	s.items, s.ends = s.items[:0], s.ends[:0]
	last, q, ip, ni := int32(-1), int32(max(4, per)), int32(per), int32(n/per)
	for _, sp := range spans {
		if sp.Lo < 0 || sp.Hi > int32(n) || sp.Lo >= sp.Hi || sp.Lo < last {
			s.on = false
			s.items = s.items[:0]
			return fmt.Errorf("rows %d..%d of %d, after %d: not sorted, disjoint spans of the output: %w", sp.Lo, sp.Hi, n, last, ErrUnsupported)
		}
		last = sp.Hi
		lo, hi := sp.Lo/q*q/ip, min(ni, (sp.Hi+q-1)/q*q/ip)
		if k := len(s.items) - 1; k >= 0 && lo <= s.items[k].Hi {
			s.items[k].Hi = max(s.items[k].Hi, hi)
			continue
		}
		s.items = append(s.items, device.Span{Lo: lo, Hi: hi})
	}
	total := 0
	for _, it := range s.items {
		total += int(it.Hi - it.Lo)
		s.ends = append(s.ends, total)
	}
	return nil
}

// task is what a GEMV's or GEMM's pool runs: t over its n items, or,
// restricted, the restriction over the listed ones.
func (s *rowSubset) task(t task, n int) (task, int) {
	switch {
	case !s.on:
		return t, n
	case len(s.ends) == 0:
		return s, 0
	}
	return s, s.ends[len(s.ends)-1]
}

// do runs the restriction's items [i0, i1) as the command's own items.
func (s *rowSubset) do(w, i0, i1 int) {
	lo, hi := 0, len(s.ends) // the first span whose end is past i0
	for lo < hi {
		if m := (lo + hi) / 2; s.ends[m] > i0 {
			hi = m
		} else {
			lo = m + 1
		}
	}
	for j := lo; j < len(s.items) && i0 < i1; j++ {
		start := s.ends[j] - int(s.items[j].Hi-s.items[j].Lo)
		end := min(i1, s.ends[j])
		s.t.do(w, int(s.items[j].Lo)+i0-start, int(s.items[j].Lo)+end-start)
		i0 = end
	}
}

// fill writes -inf to the rows of each output row (rows of them, ldc
// apart, n wide) that no item of the restriction computed, per rows an
// item.
func (s *rowSubset) fill(a act, y []byte, rows, ldc, n, per int) {
	for i := range rows {
		r := 0
		for _, it := range s.items {
			fillInf(a, y, i*ldc+r, i*ldc+int(it.Lo)*per)
			r = min(n, int(it.Hi)*per)
		}
		fillInf(a, y, i*ldc+r, i*ldc+n)
	}
}

// fillInf writes -inf to elements [lo, hi) of y. F32 outputs (a CPU
// plan's) are copied from the first in doubling runs, at memmove's rate:
// element by element the fill of a 151936-token head's unlisted 119168
// took longer on the 16-core host than the listed rows' GEMV (685 against
// 515 µs for the head over every row).
func fillInf(a act, y []byte, lo, hi int) {
	inf := float32(math.Inf(-1))
	if a != actF32 {
		for r := lo; r < hi; r++ {
			a.set(y, r, inf)
		}
		return
	}
	if lo >= hi {
		return
	}
	f := f32s(y)[lo:hi]
	f[0] = inf
	for k := 1; k < len(f); k *= 2 {
		copy(f[k:], f[:k])
	}
}

// OutputRows restricts command cmd of program p, a GEMV or GEMM, to the
// output rows of spans (sorted, disjoint; nil: every row again): each run
// computes at least those rows (with the rest of their x16 group of 16) and
// writes -inf to every other row, so that an argmax or a softmax over the
// output sees only the rows computed. A draft model's LM head over a
// shortlist of its vocabulary (ADR 0014). ErrUnsupported for another
// kernel, a fused GEMV form whose rows are not independent (gate|up pairs,
// a residual's), or a GEMV that runs in a group.
func (b *Backend) OutputRows(p device.Program, cmd int, spans []device.Span) error {
	if p.ID() < 1 || p.ID() > len(b.progs) || b.progs[p.ID()-1] == nil || cmd < 0 || cmd >= len(b.progs[p.ID()-1]) {
		return fmt.Errorf("cpu: OutputRows: no command %d of program %d: %w", cmd, p.ID(), ErrUnsupported)
	}
	e := b.progs[p.ID()-1][cmd]
	switch g := e.impl.(type) {
	case *gemv:
		if g.glu || g.res || e.group != nil || e.grouped {
			return fmt.Errorf("cpu: %s: a GEMV whose rows run with others: %w", e.Label, ErrUnsupported)
		}
		g.sub.t = g
		return g.sub.set(spans, itemRows(g.x16), int(g.p.N))
	case *gemm:
		if g.pairs {
			return fmt.Errorf("cpu: %s: a gate|up GEMM: %w", e.Label, ErrUnsupported)
		}
		g.sub.t = g
		return g.sub.set(spans, itemRows(g.x16), int(g.p.N))
	}
	return fmt.Errorf("cpu: %s (%s): not a GEMV or GEMM: %w", e.Label, e.Kernel.Name, ErrUnsupported)
}

// itemRows is the rows an item of a GEMV's or GEMM's pool run covers: an
// x16 group of an x16 layout l, a row otherwise (whose chunks start at
// whole quads: itemAlign).
func itemRows(l *x16Layout) int {
	if l != nil {
		return x16Rows
	}
	return 1
}

// itemAlign is the items a chunk of that run holds a multiple of.
func itemAlign(l *x16Layout) int { return max(1, 4/itemRows(l)) }
