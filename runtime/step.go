package runtime

import (
	"fmt"

	"github.com/akunu-dev/akunu/plans"
)

// Command-at-a-time access, for akunu verify: it replays one plan on two
// backends side by side and compares the buffers after every command. The
// replay loop does not use these; they change nothing of its behaviour.

// Buffers are the plan's buffers by index, as the backend holds them
// (host-visible: read or write them only between submissions).
func (m *Model) Buffers() [][]byte { return m.bufs }

// TokenSlots is the io "tokens" buffer: slot i is the token step i of a
// chain embeds, slot i+1 the id its argmax writes.
func (m *Model) TokenSlots() []uint32 { return m.tokens }

// ChainSteps is the most decode steps one submission may hold (the plan's
// chain chunk, bounded by the token slots).
func (m *Model) ChainSteps() int { return m.chainChunk() }

// RunCommand runs command ci of program prog alone for step s: encoded,
// committed and waited for. Errors name the program, the index and the
// label.
func (m *Model) RunCommand(prog string, ci int, s plans.Step) error {
	b := m.program(prog)
	if b == nil {
		return fmt.Errorf("runtime: the plan has no program %q", prog)
	}
	if ci < 0 || ci >= len(b.cmds) {
		return fmt.Errorf("runtime: %s has %d commands, not %d", prog, len(b.cmds), ci+1)
	}
	m.be.Encode(b.cmds[ci:ci+1], []plans.Step{s})
	m.be.Commit()
	if err := m.be.Wait(); err != nil {
		return fmt.Errorf("runtime: %s[%d] %s: %w", prog, ci, b.prog.Commands[ci].Label, err)
	}
	return nil
}

// program is the bound program named name, or nil.
func (m *Model) program(name string) *bound {
	switch {
	case name == plans.ProgDecode:
		return m.decode
	case name == plans.ProgSampled:
		return m.sampled
	}
	for _, b := range m.prefill {
		if b.prog.Name == name {
			return b
		}
	}
	return nil
}
