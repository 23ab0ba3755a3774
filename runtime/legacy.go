package runtime

import (
	"context"
	"fmt"

	"github.com/akunu-dev/akunu/plans"
)

// forwardPrefill is Forward for a format-1 plan, which has no batch
// programs: its prefill programs take rows of one sequence at consecutive
// positions from a start position and give the last row's logits only, so
// that is all such a plan can do (one sequence slot, outputs for the last
// row). Without prefill programs, one decode step a token.
func (m *Model) forwardPrefill(ctx context.Context, b *Batch) error {
	n := len(b.Tokens)
	for i := range n {
		if b.Seq[i] != 0 || b.Out[i] && i != n-1 {
			return fmt.Errorf("runtime: this plan (format 1) runs one sequence and gives the logits of a batch's last row only; recompile it with this akunuc for batches: %w", ErrUnsupportedPlan)
		}
	}
	for i := 0; i < n; {
		if err := ctx.Err(); err != nil {
			return err
		}
		pos := m.kv.len[0]
		pr := m.prefillFor(n - i)
		if pr == nil { // one decode step
			if err := m.writeRows(m.io.tokens, 1, func(int) uint32 { return uint32(b.Tokens[i]) }); err != nil {
				return err
			}
			m.step[0] = plans.Step{Pos: uint32(pos), Batch: 1}
			if err := m.replay(m.decode); err != nil {
				return err
			}
			m.kv.len[0]++
			i++
			if i == n && b.Out[n-1] {
				return m.readLegacy(1) // the decode program's argmax writes slot 1
			}
			continue
		}
		k := min(n-i, int(pr.p.Batch))
		if err := m.writeRows(m.io.tokens, k, func(r int) uint32 { return uint32(b.Tokens[i+r]) }); err != nil {
			return err
		}
		m.step[0] = plans.Step{Pos: uint32(pos), Batch: uint32(k)}
		if err := m.replay(pr); err != nil {
			return err
		}
		m.kv.len[0] += k
		i += k
		if i == n && b.Out[n-1] {
			return m.readLegacy(0) // a prefill program's argmax writes slot 0
		}
	}
	return nil
}

// replay runs prog for m.step and waits for it.
func (m *Model) replay(prog *program) error {
	m.be.Encode(prog.h, m.step[:])
	m.be.Commit()
	if err := m.wait(); err != nil {
		return fmt.Errorf("runtime: %s at position %d: %w", prog.p.Name, m.step[0].Pos, err)
	}
	return nil
}

// readLegacy reads a format-1 program's one output: its argmax from token
// slot, its logits from io.logits.
func (m *Model) readLegacy(slot int) error {
	st := m.stage[:4]
	if err := m.be.Read(st, m.io.tokens, 4*slot); err != nil {
		return err
	}
	m.out.ids[0] = int32(u32At(st, 0))
	if m.out.read {
		if err := m.be.Read(f32Bytes(m.out.logits[:m.vocab]), m.io.logits, 0); err != nil {
			return err
		}
	}
	m.out.n = 1
	return nil
}

// prefillFor is the prefill program for n remaining tokens: the smallest
// bucket that holds them, else the largest up to PrefillChunk; nil when
// the plan has none.
func (m *Model) prefillFor(n int) *program {
	var largest *program
	limit := int(m.Plan.Header.Target.Tuning.PrefillChunk)
	for _, b := range m.prefill {
		bb := int(b.p.Batch)
		if bb > m.tokenSlots || (limit > 0 && bb > limit && largest != nil) {
			continue
		}
		if bb >= n {
			return b
		}
		largest = b
	}
	return largest
}
