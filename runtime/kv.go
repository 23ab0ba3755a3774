package runtime

import (
	"fmt"

	"github.com/akunu-dev/akunu/plans"
)

// kvSlots is the bookkeeping of the KV cache's sequence slots: how many
// positions each holds, and which a session has taken. Slot s of every
// layer's K and V buffer lies at s times the plan's buffer size.
type kvSlots struct {
	seqs int
	len  []int   // positions slot s holds: entries [0, len) are valid
	busy []bool  // taken by a session
	next []int32 // Forward's scratch: the next position of each slot
}

func (k *kvSlots) init(seqs int) {
	k.seqs, k.len, k.busy, k.next = seqs, make([]int, seqs), make([]bool, seqs), make([]int32, seqs)
}

// Seqs is the number of sequence slots of the KV cache.
func (m *Model) Seqs() int { return m.kv.seqs }

// SeqLen is the number of positions sequence slot s holds.
func (m *Model) SeqLen(s int) int { return m.kv.len[s] }

// acquire takes a free slot.
func (m *Model) acquire() (int, error) {
	for s, b := range m.kv.busy {
		if !b {
			m.kv.busy[s], m.kv.len[s] = true, 0
			return s, nil
		}
	}
	return 0, fmt.Errorf("runtime: all %d sequence slots are in use (close a session, or load with more: Options.Seqs): %w", m.kv.seqs, ErrNoSeq)
}

func (m *Model) release(s int) { m.kv.busy[s], m.kv.len[s] = false, 0 }

// Rewind keeps the first n positions of sequence slot s and forgets the
// rest (entries past n are overwritten before they are read again).
func (m *Model) Rewind(s, n int) {
	m.kv.len[s] = max(0, min(n, m.kv.len[s]))
}

// CopyPrefix copies the first n positions of sequence slot src into slot
// dst, on the device, and makes dst hold exactly those n: a conversation
// that starts with a prefix another slot has computed need not compute it
// again. Nothing may be in flight.
func (m *Model) CopyPrefix(dst, src, n int) error {
	switch {
	case dst < 0 || dst >= m.kv.seqs || src < 0 || src >= m.kv.seqs:
		return fmt.Errorf("runtime: copy of KV slot %d to %d: the cache has %d slots", src, dst, m.kv.seqs)
	case n < 0 || n > m.kv.len[src]:
		return fmt.Errorf("runtime: copy of %d positions of KV slot %d, which holds %d", n, src, m.kv.len[src])
	case dst == src:
		m.kv.len[dst] = n
		return nil
	}
	if n > 0 {
		ctx := int(m.Plan.Model.HParams.Ctx)
		for i := range m.Plan.Buffers {
			b := &m.Plan.Buffers[i]
			if b.Kind != plans.BufKV {
				continue
			}
			// Head-major [kv_heads, ctx, head_dim]: each head's first n
			// rows are one contiguous run.
			slot := int(b.Size)
			heads := int(b.Shape[2])
			row := slot / heads / ctx
			for h := range heads {
				off := h*ctx*row + 0
				m.be.Copy(m.bufs[i], dst*slot+off, m.bufs[i], src*slot+off, n*row)
			}
		}
		m.be.Commit()
		if err := m.wait(); err != nil {
			return fmt.Errorf("runtime: copying KV slot %d to %d: %w", src, dst, err)
		}
	}
	m.kv.len[dst] = n
	return nil
}
