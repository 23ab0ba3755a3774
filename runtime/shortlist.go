package runtime

import (
	"errors"
	"fmt"

	"github.com/akunu-dev/akunu/runtime/cpu"
	"github.com/akunu-dev/akunu/runtime/device"
)

// outputRows is a Backend that can compute only some output rows of a GEMV
// or GEMM command (the CPU's OutputRows): at least the rows of spans, and
// -inf in every other row, so that an argmax or a softmax over the output
// sees only the rows computed; nil spans computes every row again. A
// backend without it computes every row (ADR 0014, "The draft's
// shortlist").
type outputRows interface {
	OutputRows(p device.Program, cmd int, spans []device.Span) error
}

// lmHead is one program's LM head command: the plan's "logits" node.
type lmHead struct {
	p   device.Program
	cmd int
}

// setLogitRows has every program's LM head compute the logits of the
// token ids of spans only (sorted, disjoint, below the vocabulary's size),
// -inf for the rest; nil computes every logit again. It reports false,
// every head whole, where the backend or a head's kernel cannot. owner and
// ver name the list, so that the same list set again costs nothing.
func (m *Model) setLogitRows(spans []device.Span, owner any, ver uint64) (bool, error) {
	or, ok := m.be.(outputRows)
	if !ok {
		return false, nil
	}
	lr := &m.logitRows
	if owner != nil && lr.owner == owner && lr.ver == ver {
		return lr.on, nil
	}
	last := int32(0)
	for _, s := range spans {
		if s.Lo < last || s.Hi <= s.Lo || s.Hi > int32(m.vocab) {
			return false, fmt.Errorf("runtime: logit rows %d..%d after %d of %d: not sorted, disjoint ids", s.Lo, s.Hi, last, m.vocab)
		}
		last = s.Hi
	}
	if lr.heads == nil {
		lr.heads = []lmHead{}
		for pi := range m.Plan.Programs {
			for ci, c := range m.Plan.Programs[pi].Commands {
				if c.Label == "logits" {
					lr.heads = append(lr.heads, lmHead{m.progs[pi], ci})
				}
			}
		}
	}
	lr.owner, lr.ver, lr.on = owner, ver, spans != nil && len(lr.heads) > 0
	for i, h := range lr.heads {
		if err := or.OutputRows(h.p, h.cmd, spans); err != nil {
			for _, h := range lr.heads[:i] {
				_ = or.OutputRows(h.p, h.cmd, nil) // every row again: nothing to refuse
			}
			lr.on = false
			if errors.Is(err, cpu.ErrUnsupported) {
				return false, nil
			}
			return false, fmt.Errorf("runtime: the LM head's rows: %w", err)
		}
	}
	return lr.on, nil
}
