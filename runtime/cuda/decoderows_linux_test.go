//go:build linux

package cuda

import (
	"path/filepath"
	"testing"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/synth"
	"github.com/akunu-dev/akunu/specs"
	"github.com/akunu-dev/akunu/specs/chips"
)

// The plan decides how many sequences' rows step as decode steps: 1 where
// its batch programs' small GEMMs read the planar layout (an NVIDIA plan
// of a Q4_0 model), DefaultDecodeRows where they read the file's (Q8_0);
// Options.DecodeRows (AKUNU_CUDA_DECODE_ROWS) overrides both. The backend
// is not opened: the choice reads the plan only.
func TestThePlanDecidesTheDecodeRows(t *testing.T) {
	reg, err := specs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	prof, err := chips.Resolve("h100-sxm", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dt   dtype.Type
		want int
	}{{dtype.Q4_0, 1}, {dtype.Q8_0, DefaultDecodeRows}} {
		o := synth.Options{Arch: "llama", Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 512, CtxTrain: 256, DType: tc.dt, Seed: 7}
		sp, err := synth.Build(reg, o)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "m.gguf")
		if err := sp.Write(path, o.Seed); err != nil {
			t.Fatal(err)
		}
		p, err := compiler.Compile(path, compiler.Options{Chip: prof})
		if err != nil {
			t.Fatal(err)
		}
		b := &Backend{}
		if got := b.DecodeRows(p); got != tc.want {
			t.Errorf("%v: %d rows as decode steps (planar share %.2f); want %d", tc.dt, got, planarShare(p), tc.want)
		}
		b.opt.DecodeRows = 3
		if got := b.DecodeRows(p); got != 3 {
			t.Errorf("%v: Options.DecodeRows 3 gives %d", tc.dt, got)
		}
	}
}
