package device

import (
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
)

// HostOnly reports, for each command of a program, whether what it writes
// only the host reads, so that of several steps encoded at once only the
// last step's run of it is ever seen (the host reads after a submission
// has run, and each step writes the same bytes): the logits copied for
// the host, which a chain of decode steps reads only after its last step.
// Such a command may be left out of every step but the last; in the last
// it runs where it stands.
//
// A command is host-only when it has no patches (every step writes the
// same bytes), writes something, writes only I/O buffers and none of
// them also reads, and no other command of the program reads or writes a
// buffer it writes. Buffers are compared whole, so the answer errs
// towards false.
func HostOnly(cmds []Command) []bool {
	only := make([]bool, len(cmds))
	for i := range cmds {
		only[i] = hostOnly(cmds, i)
	}
	return only
}

func hostOnly(cmds []Command, i int) bool {
	c := &cmds[i]
	if len(c.Patches) != 0 {
		return false
	}
	writes := false
	for s, b := range c.Kernel.Bindings {
		if s >= len(c.Slots) || !c.Slots[s].Buf.Valid() || b.Access == kernels.Read {
			continue
		}
		if c.Slots[s].Kind != plans.BufIO || b.Access == kernels.ReadWrite {
			return false
		}
		writes = true
		for j := range cmds {
			if j != i && binds(&cmds[j], c.Slots[s].Buf) {
				return false
			}
		}
	}
	return writes
}

// binds reports whether c binds buf.
func binds(c *Command, buf Buffer) bool {
	for s := range c.Kernel.Bindings {
		if s < len(c.Slots) && c.Slots[s].Buf == buf {
			return true
		}
	}
	return false
}
