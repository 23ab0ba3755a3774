package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/specs/chips"
)

// TestDamagedWeightsEndTheCommand runs the CLI over a copy of stories260K
// whose data is rewritten behind its header after compiling: a load refuses
// a flipped tensor in one line naming it (exit 1, no output), a byte the
// sampled check misses is refused by --verify-weights and verify-model.
func TestDamagedWeightsEndTheCommand(t *testing.T) {
	src := proof.Shared(t, "models", "stories260K.gguf")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(t.TempDir(), "stories260K.gguf")
	if err := os.WriteFile(model, data, 0o644); err != nil {
		t.Fatal(err)
	}
	prof, err := chips.Resolve("cpu-avx2:2", 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := compiler.Compile(model, compiler.Options{Chip: prof, Ctx: 64})
	if err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(t.TempDir(), "m.plan") // another folder: found by its recorded path
	if err := plans.WriteFile(plan, p); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runAkunu("verify-model", plan); code != 0 || !strings.Contains(out, "every byte of its 48 tensors") {
		t.Fatalf("verify-model of the intact model: %d\n%s%s", code, out, errOut)
	}
	f, err := gguf.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	ti, _ := f.Tensor("output.weight")
	rewrite := func(fn func(b []byte)) {
		t.Helper()
		d := append([]byte(nil), data...)
		fn(d[ti.FileOffset : ti.FileOffset+ti.Size])
		if err := os.WriteFile(model, d, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(what string, args ...string) {
		t.Helper()
		out, errOut, code := runAkunu(args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		t.Logf("%s: akunu %s: exit %d: %s", what, args[0], code, strings.TrimSpace(errOut))
		if code != 1 || out != "" || len(lines) != 1 || !strings.Contains(errOut, `"output.weight"`) || !strings.Contains(errOut, "recompile") {
			t.Errorf("%s: akunu %v: exit %d, stdout %q, stderr %q; want exit 1 and one line naming output.weight", what, args, code, out, errOut)
		}
	}
	rewrite(func(b []byte) {
		for i := 0; i+4 <= len(b); i += 4 {
			binary.LittleEndian.PutUint32(b[i:], binary.LittleEndian.Uint32(b[i:])^1<<31)
		}
	})
	refused("signs flipped", "run", plan, "-p", "Once", "-n", "2", "--backend", "cpu")
	refused("signs flipped", "verify-model", plan)

	spans := gguf.SampleSpans(ti.Size)
	rewrite(func(b []byte) { b[(spans[0][1]+spans[1][0])/2] ^= 0x40 })
	if _, errOut, code := runAkunu("run", plan, "-p", "Once", "-n", "2", "--backend", "cpu"); code != 0 {
		t.Fatalf("a byte between the sampled blocks was expected to pass the sampled check: %s", errOut)
	}
	refused("one byte changed", "run", plan, "-p", "Once", "-n", "2", "--backend", "cpu", "--verify-weights")
	refused("one byte changed", "verify-model", plan)
}
