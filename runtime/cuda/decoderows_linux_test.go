//go:build linux

package cuda

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/synth"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/device"
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
		dt          dtype.Type
		want, split int
	}{{dtype.Q4_0, 1, 8}, {dtype.Q8_0, DefaultDecodeRows, 0}} {
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
		if got := b.SplitRows(p); got != tc.split {
			t.Errorf("%v: replays of 9 to 16 rows cut at %d; want %d", tc.dt, got, tc.split)
		}
		b.opt.DecodeRows, b.opt.SplitRows = 3, -1
		if got := b.DecodeRows(p); got != 3 {
			t.Errorf("%v: Options.DecodeRows 3 gives %d", tc.dt, got)
		}
		if got := b.SplitRows(p); got != 0 {
			t.Errorf("%v: Options.SplitRows -1 gives %d", tc.dt, got)
		}
	}
}

// A step's graph key follows its binding patches' values, read in one
// pass into the program's reused slice: two sequence slots give two keys,
// the same slot the same values, and a step reads them without
// allocating once the slice has grown.
func TestGraphKeysFollowTheBindingValues(t *testing.T) {
	kv := device.Patch{Kind: plans.PatchSeq, Binding: true, Stride: 1 << 20}
	pos := device.Patch{Kind: plans.PatchPosition, At: 4, Width: 4, Stride: 1} // a parameter: not in the key
	p := &program{cmds: []*command{{patches: []device.Patch{pos, kv}}, {patches: []device.Patch{kv}}}}
	at := func(seq, position uint32) ([]uint64, uint64) {
		v := slices.Clone(p.bindingValues(plans.Step{Seq: seq, Pos: position}))
		return v, sigHash(v)
	}
	v0, h0 := at(0, 5)
	v1, h1 := at(1, 5)
	v0b, h0b := at(0, 9)
	if !slices.Equal(v0, []uint64{0, 0}) || !slices.Equal(v1, []uint64{1 << 20, 1 << 20}) {
		t.Fatalf("binding values %v, %v", v0, v1)
	}
	if h0 == h1 || h0 != h0b || !slices.Equal(v0, v0b) {
		t.Fatalf("keys %x and %x for two slots; %x and %x for one slot at two positions", h0, h1, h0, h0b)
	}
	if a := testing.AllocsPerRun(10, func() { sigHash(p.bindingValues(plans.Step{Seq: 1})) }); a != 0 {
		t.Fatalf("a step's key allocates %v times", a)
	}
}
