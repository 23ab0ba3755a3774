package runtime

import (
	"fmt"

	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/device"
)

// Command-at-a-time access, for akunu verify: it replays one plan on two
// backends side by side and compares the buffers after every command. The
// replay loop does not use these; they change nothing of its behaviour.

// ReadBuffer returns a copy of the plan's buffer i as the backend holds it
// (a KV buffer with every sequence slot). Nothing may be in flight.
func (m *Model) ReadBuffer(i int) ([]byte, error) {
	h, err := m.buffer(i)
	if err != nil {
		return nil, err
	}
	out := make([]byte, h.Size())
	return out, m.be.Read(out, h, 0)
}

// WriteBuffer writes data into the plan's buffer i from byte off.
func (m *Model) WriteBuffer(i, off int, data []byte) error {
	h, err := m.buffer(i)
	if err != nil {
		return err
	}
	return m.be.Write(h, off, data)
}

// buffer is the backend's handle of the plan's buffer i: one of the plan's,
// and not a weight freed at load (freeSourceOnly).
func (m *Model) buffer(i int) (device.Buffer, error) {
	if i < 0 || i >= len(m.bufs) {
		return device.Buffer{}, fmt.Errorf("runtime: buffer %d of %d", i, len(m.bufs))
	}
	if !m.bufs[i].Valid() {
		return device.Buffer{}, fmt.Errorf("runtime: buffer %q was freed at load: no command reads it", m.Plan.Buffers[i].Name)
	}
	return m.bufs[i], nil
}

// ChainSteps is the most decode steps one submission may hold (the plan's
// chain chunk, bounded by the token slots).
func (m *Model) ChainSteps() int { return m.chainChunk() }

// RunCommand runs command ci of program prog alone for step s: bound on
// its own (once), encoded, committed and waited for. Errors name the
// program, the index and the label.
func (m *Model) RunCommand(prog string, ci int, s plans.Step) error {
	pr := m.Plan.Program(prog)
	if pr == nil {
		return fmt.Errorf("runtime: the plan has no program %q", prog)
	}
	if ci < 0 || ci >= len(pr.Commands) {
		return fmt.Errorf("runtime: %s has %d commands, not %d", prog, len(pr.Commands), ci+1)
	}
	key := fmt.Sprintf("%s[%d]", prog, ci)
	h, ok := m.single[key]
	if !ok {
		c, err := device.Resolve(m.Plan, pr, ci, m.bufs, m.Plan.Bounds(pr, uint32(m.kv.seqs)))
		if err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
		if h, err = m.be.Bind([]device.Command{c}); err != nil {
			return fmt.Errorf("runtime: %s: %w", key, err)
		}
		if m.single == nil {
			m.single = map[string]device.Program{}
		}
		m.single[key] = h
		m.progs = append(m.progs, h)
	}
	m.step[0] = s
	m.be.Encode(h, m.step[:])
	m.be.Commit()
	if err := m.wait(); err != nil {
		return fmt.Errorf("runtime: %s %s: %w", key, pr.Commands[ci].Label, err)
	}
	return nil
}
