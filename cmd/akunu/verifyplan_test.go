package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/specs/chips"
)

// verifyPlanStories compiles stories260K with o (for cpu-avx2:2 when o names no
// chip) into a plan in a temporary folder; it skips without the model.
func verifyPlanStories(t *testing.T, chip string, o compiler.Options) (plan, model string, p *plans.Plan) {
	t.Helper()
	model = proof.Shared(t, "models", "stories260K.gguf")
	var err error
	if o.Chip, err = chips.Resolve(chip, 0); err != nil {
		t.Fatal(err)
	}
	if p, err = compiler.Compile(model, o); err != nil {
		t.Fatal(err)
	}
	plan = filepath.Join(t.TempDir(), "m.plan")
	if err := plans.WriteFile(plan, p); err != nil {
		t.Fatal(err)
	}
	return plan, model, p
}

// TestVerifyPlanAcceptsAFreshCompile: a plan verifies whatever options it
// was compiled with, which proves each is read back from the plan.
func TestVerifyPlanAcceptsAFreshCompile(t *testing.T) {
	for _, tc := range []struct {
		name, chip string
		o          compiler.Options
	}{
		{"the default context for the CPU", "cpu-avx2:2", compiler.Options{}},
		{"a context of 512", "cpu-avx2:2", compiler.Options{Ctx: 512}},
		{"sampled sums only", "cpu-avx2:2", compiler.Options{Ctx: 64, SampledSumsOnly: true}},
		{"an Apple M1", "m1", compiler.Options{Ctx: 64}},
		{"no template", "cpu-avx2:4", compiler.Options{Ctx: 64, NoTemplate: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, _, p := verifyPlanStories(t, tc.chip, tc.o)
			out, errOut, code := runAkunu("verify-plan", plan)
			want := fmt.Sprintf("plan ok: %d programs, ", len(p.Programs))
			if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "stories260K.gguf") {
				t.Fatalf("verify-plan: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
			}
		})
	}
}

// TestVerifyPlanRefusesAnotherCompiler: a plan of another compiler version
// is refused before anything is compiled, naming both versions.
func TestVerifyPlanRefusesAnotherCompiler(t *testing.T) {
	plan, _, p := verifyPlanStories(t, "cpu-avx2:2", compiler.Options{Ctx: 64})
	p.Header.Compiler = "akunuc 0.0.1-old"
	if err := plans.WriteFile(plan, p); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runAkunu("verify-plan", plan)
	want := `"akunuc 0.0.1-old" compiled it; this akunu carries akunuc ` + compiler.Version + ": recompile"
	if code != 1 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, want) {
		t.Fatalf("verify-plan: exit %d, stdout %q, stderr %q; want one line with %q", code, out, errOut, want)
	}
}

// silentEdits are edits of the kinds the mutation harness (runtime's
// mutate_test.go) records as silent wrong successes: in bounds, so load
// validation passes, but the plan computes something else. Each class
// yields candidates for every command, program by program; the test takes
// the first that still loads.
var silentEdits = []struct {
	class string
	edits func(p *plans.Plan, c *plans.Command) []func(c *plans.Command)
}{
	{"an input rebound to another buffer of its kind and size", func(p *plans.Plan, c *plans.Command) []func(c *plans.Command) {
		var es []func(c *plans.Command)
		for bi, b := range c.Bindings {
			from := p.Buffers[b.Buffer]
			for j, to := range p.Buffers {
				if uint32(j) != b.Buffer && to.Kind == from.Kind && to.Size == from.Size {
					es = append(es, func(c *plans.Command) { c.Bindings[bi].Buffer = uint32(j) })
				}
			}
		}
		return es
	}},
	{"an offset shifted within its buffer", func(p *plans.Plan, c *plans.Command) []func(c *plans.Command) {
		var es []func(c *plans.Command)
		for bi := range c.Bindings {
			es = append(es, func(c *plans.Command) { c.Bindings[bi].Offset += 4 })
		}
		return es
	}},
	{"an integer parameter shrunk", func(p *plans.Plan, c *plans.Command) []func(c *plans.Command) {
		var es []func(c *plans.Command)
		for w := 0; w+4 <= len(c.Params); w += 4 {
			if v := binary.LittleEndian.Uint32(c.Params[w:]); v > 1 && v < 1<<20 {
				es = append(es, func(c *plans.Command) { binary.LittleEndian.PutUint32(c.Params[w:], v/2) })
			}
		}
		return es
	}},
	{"a patch moved", func(p *plans.Plan, c *plans.Command) []func(c *plans.Command) {
		var es []func(c *plans.Command)
		for k := range c.Patches {
			es = append(es, func(c *plans.Command) { c.Patches[k].At += 4 }, func(c *plans.Command) { c.Patches[k].Base += 4 })
		}
		return es
	}},
	{"a pipeline swapped", func(p *plans.Plan, c *plans.Command) []func(c *plans.Command) {
		// Another command's pipeline whose bindings and parameters have
		// the shape of this one's. Load validation refuses most (a kernel
		// of another geometry rule or binding roles); one with the same
		// launch, roles and extents (an elementwise op for another, say)
		// still loads.
		var es []func(c *plans.Command)
		seen := map[uint32]bool{c.Pipeline: true}
		for _, pr := range p.Programs {
			for _, o := range pr.Commands {
				if !seen[o.Pipeline] && len(o.Bindings) == len(c.Bindings) && len(o.Params) == len(c.Params) {
					seen[o.Pipeline] = true
					es = append(es, func(c *plans.Command) { c.Pipeline = o.Pipeline })
				}
			}
		}
		return es
	}},
}

// TestVerifyPlanCatchesSilentEdits: for each class of in-bounds edit, a
// resealed plan that a load accepts is refused by verify-plan (and by
// --verify-plan), in one line naming the edited command: the first such
// edit through the CLI, then one edit per command (the first of its
// candidates that loads) up to a sample of each class.
func TestVerifyPlanCatchesSilentEdits(t *testing.T) {
	plan, model, p := verifyPlanStories(t, "cpu-avx2:2", compiler.Options{Ctx: 64})
	base := plans.Encode(p)
	const (
		maxTries = 250 // loads tried per class, to keep the test fast
		sample   = 12  // edits verified per class
	)
	for _, ec := range silentEdits {
		t.Run(ec.class, func(t *testing.T) {
			tries, caught := 0, 0
			for pi := range p.Programs {
				pr := &p.Programs[pi]
				for ci := range pr.Commands {
					for _, edit := range ec.edits(p, &pr.Commands[ci]) {
						if tries++; tries > maxTries || caught == sample {
							t.Logf("%d edits that load caught (%d tried)", caught, tries-1)
							if caught == 0 {
								t.Fatalf("no edit of this class among %d tried still loads", maxTries)
							}
							return
						}
						q, err := plans.Decode("", base)
						if err != nil {
							t.Fatal(err)
						}
						edit(&q.Programs[pi].Commands[ci])
						if q, err = plans.Decode("edited.plan", plans.Encode(q)); err != nil { // resealed
							continue
						}
						m, err := runtime.New(q, runtime.Options{Model: model, Threads: 1})
						if err != nil {
							continue // refused at load: not a silent edit
						}
						m.Close()
						if err := plans.WriteFile(plan, q); err != nil {
							t.Fatal(err)
						}
						at := fmt.Sprintf("%s[%d] %s", pr.Name, ci, pr.Commands[ci].Label)
						if caught++; caught == 1 {
							for _, args := range [][]string{{"verify-plan", plan}, {"run", plan, "-p", "Once", "-n", "1", "--backend", "cpu", "--verify-plan"}} {
								out, errOut, code := runAkunu(args...)
								t.Logf("%s: akunu %s: exit %d: %s", at, args[0], code, strings.TrimSpace(errOut))
								if code != 1 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 ||
									!strings.Contains(errOut, at) || !strings.Contains(errOut, "a fresh compile") {
									t.Errorf("akunu %v: exit %d, stdout %q, stderr %q; want exit 1 and one line naming %s", args, code, out, errOut, at)
								}
							}
						} else if _, err := verifyPlan(plan, ""); !errors.Is(err, errPlanDiffers) || !strings.Contains(err.Error(), at+" (") {
							t.Errorf("verifyPlan of %s edited: %v; want errPlanDiffers naming %s", at, err, at)
						}
						break // the next command
					}
				}
			}
			if caught == 0 {
				t.Fatalf("no edit of this class still loads (%d tried)", tries)
			}
			t.Logf("%d edits that load caught (%d tried)", caught, tries)
		})
	}
}
