package device_test

import (
	"testing"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/device"
	"github.com/akunu-dev/akunu/specs/chips"
)

// In every program of stories260K's plans for a CPU, an Apple GPU and an
// NVIDIA GPU, the one host-only command is the logits' copy for the host,
// where it has no patches; the argmax and the sampler, whose tokens the
// next step's embedding reads, are not.
func TestHostOnlyIsTheLogitsForTheHost(t *testing.T) {
	model := stories(t)
	for _, chip := range []string{"cpu-avx2:2", "m1", "h100-sxm"} {
		p, bufs := compileStories(t, model, chip)
		for _, pr := range p.Programs {
			cmds := resolveAll(t, p, &pr, bufs)
			only := device.HostOnly(cmds)
			n := 0
			for i, c := range cmds {
				want := c.Label == "logits.host" && len(c.Patches) == 0
				if only[i] != want {
					t.Errorf("%s %s [%d] %s: host-only %v, want %v", chip, pr.Name, i, c.String(), only[i], want)
				}
				if only[i] {
					n++
				}
			}
			if pr.Name == plans.ProgDecode && n != 1 {
				t.Errorf("%s decode: %d host-only commands, want the logits' copy", chip, n)
			}
		}
	}
}

// A command that reads its output, or a second writer of it, makes it not
// host-only.
func TestHostOnlyRefusesASharedOutput(t *testing.T) {
	p, bufs := compileStories(t, stories(t), "cpu-avx2:2")
	cmds := resolveAll(t, p, p.Program(plans.ProgDecode), bufs)
	host := -1
	for i := range cmds {
		if cmds[i].Label == "logits.host" {
			host = i
		}
	}
	if host < 0 || !device.HostOnly(cmds)[host] {
		t.Fatal("the control: the logits' copy is not host-only")
	}
	const x, out = 0, 1 // the copy's slots
	other := device.Slot{Buf: device.NewBuffer(len(bufs)+1, 1<<20), Kind: plans.BufScratch}
	for _, c := range []struct {
		name   string
		x, out device.Slot
	}{
		{"a reader of its output", cmds[host].Slots[out], other},
		{"a second writer of its output", other, cmds[host].Slots[out]},
	} {
		d := cmds[host]
		d.Slots = append([]device.Slot(nil), d.Slots...)
		d.Slots[x], d.Slots[out] = c.x, c.out
		if device.HostOnly(append(append([]device.Command(nil), cmds...), d))[host] {
			t.Errorf("host-only with %s", c.name)
		}
	}
}

func stories(t *testing.T) string {
	t.Helper()
	return proof.Shared(t, "models", "stories260K.gguf")
}

// compileStories compiles model for chip, with a buffer handle for each
// of the plan's buffers (Resolve needs their sizes only).
func compileStories(t *testing.T, model, chip string) (*plans.Plan, []device.Buffer) {
	t.Helper()
	prof, err := chips.Resolve(chip, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := compiler.Compile(model, compiler.Options{Chip: prof})
	if err != nil {
		t.Fatal(err)
	}
	bufs := make([]device.Buffer, len(p.Buffers))
	for i, b := range p.Buffers {
		bufs[i] = device.NewBuffer(i+1, int(b.Size))
	}
	return p, bufs
}

// resolveAll resolves every command of pr, as the runtime does at load.
func resolveAll(t *testing.T, p *plans.Plan, pr *plans.Program, bufs []device.Buffer) []device.Command {
	t.Helper()
	cmds := make([]device.Command, len(pr.Commands))
	for i := range pr.Commands {
		var err error
		if cmds[i], err = device.Resolve(p, pr, i, bufs, p.Bounds(pr, 1)); err != nil {
			t.Fatalf("%s [%d]: %v", pr.Name, i, err)
		}
	}
	return cmds
}
