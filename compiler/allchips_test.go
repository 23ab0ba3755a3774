package compiler

import (
	"testing"

	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/specs/chips"
)

// TestEveryChipCompiles compiles stories260K and the 8B-shaped model for
// every chip profile: each plan is valid, and the bins of one Apple chip
// (which share their tuning) differ only in the target's core count.
func TestEveryChipCompiles(t *testing.T) {
	stories := sharedFile(t, "models", "stories260K.gguf")
	big := llama8BPath(t, 2)
	byChip := map[string]*plans.Plan{}
	for _, prof := range chips.All() {
		if prof.Kind == chips.CPU {
			var err error
			if prof, err = chips.Resolve(prof.Name, 4); err != nil {
				t.Fatal(err)
			}
		}
		for _, model := range []string{stories, big} {
			p, err := Compile(model, Options{Chip: prof})
			if err != nil {
				t.Errorf("%s: %s: %v", prof, model, err)
				continue
			}
			if err := p.Validate(); err != nil {
				t.Errorf("%s: %v", prof, err)
			}
			if model == big && prof.Vendor == chips.Apple {
				byChip[prof.Name] = p
			}
		}
	}
	compared := 0
	for _, prof := range chips.All() {
		if prof.Vendor != chips.Apple {
			continue
		}
		top, _ := chips.Resolve(prof.Chip, 0)
		if top.Name == prof.Name || byChip[top.Name] == nil || byChip[prof.Name] == nil {
			continue
		}
		compared++
		for _, d := range plans.Diff(byChip[top.Name], byChip[prof.Name]) {
			switch d.Path {
			case "header.target.chip", "header.target.gpu_cores", "header.target.bandwidth_gbs":
			default:
				t.Errorf("%s vs %s: %v (bins of one chip should share their plan)", top.Name, prof.Name, d)
			}
		}
	}
	if compared < 10 {
		t.Errorf("compared the plans of %d binned chips, want every lower bin (at least 10)", compared)
	}
}
