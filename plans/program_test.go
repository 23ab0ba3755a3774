package plans

import (
	"slices"
	"strings"
	"testing"
)

// TestPatchValues pins what each patch kind writes: the runtimes' replay
// loops are tested against Values.
func TestPatchValues(t *testing.T) {
	decode := Step{Index: 2, Pos: 40, Batch: 1}
	prefill := Step{Pos: 16, Batch: 8}
	tests := []struct {
		name string
		p    Patch
		s    Step
		want []uint64
	}{
		{"token slot i as a binding offset", Patch{Kind: PatchToken, Stride: 4, Base: 64}, decode, []uint64{72}},
		{"argmax writes slot i+1", Patch{Kind: PatchArgmaxSlot, Stride: 4}, decode, []uint64{12}},
		{"position", Patch{Kind: PatchPosition, Stride: 1}, decode, []uint64{40}},
		{"KV length in decode is position+1", Patch{Kind: PatchKVLength, Stride: 1}, decode, []uint64{41}},
		{"position and KV length", Patch{Kind: PatchPositionKV, Stride: 1}, decode, []uint64{40, 41}},
		{"KV length in prefill is start+batch", Patch{Kind: PatchKVLength, Stride: 1}, prefill, []uint64{24}},
		{"batch length", Patch{Kind: PatchBatchLength, Stride: 1}, prefill, []uint64{8}},
		{"start position", Patch{Kind: PatchStartPosition, Stride: 1}, prefill, []uint64{16}},
		{"a byte offset into a position table", Patch{Kind: PatchPosition, Base: 256, Stride: 2}, decode, []uint64{336}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Values(tt.s); !slices.Equal(got, tt.want) {
				t.Errorf("Values = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestEveryPatchKindIsNamed keeps the names, the renderer and the
// validator's step bounds in step with the enum.
func TestEveryPatchKindIsNamed(t *testing.T) {
	for k := PatchKind(1); k < patchKindEnd; k++ {
		if strings.HasPrefix(k.String(), "patch(") {
			t.Errorf("kind %d has no name: %s", k, k)
		}
		if d := (Patch{Kind: k, Target: PatchParam, Width: 4}).describe(); strings.Contains(d, "?") {
			t.Errorf("kind %s renders as %s", k, d)
		}
	}
}

func TestBuckets(t *testing.T) {
	p := &Plan{Programs: []Program{{Name: "decode", Batch: 1}, {Name: "prefill.64", Batch: 64}, {Name: "prefill.8", Batch: 8}, {Name: "prefill.512", Batch: 512},
		{Name: "batch.4", Batch: 4, Kind: KindBatch}, {Name: "batch.32", Batch: 32, Kind: KindBatch}}}
	for _, tt := range []struct {
		kind ProgramKind
		n    uint32
		want string
	}{{KindPrefill, 1, "prefill.8"}, {KindPrefill, 8, "prefill.8"}, {KindPrefill, 9, "prefill.64"}, {KindPrefill, 512, "prefill.512"},
		{KindPrefill, 5000, "prefill.512"}, {KindBatch, 1, "batch.4"}, {KindBatch, 5, "batch.32"}, {KindBatch, 33, "batch.32"}} {
		if got := p.Bucket(tt.kind, tt.n); got == nil || got.Name != tt.want {
			t.Errorf("Bucket(%s, %d) = %v, want %s", tt.kind, tt.n, got, tt.want)
		}
	}
	if (&Plan{}).Bucket(KindBatch, 1) != nil {
		t.Error("a plan without batch programs returned one")
	}
}

// A format-1 plan's programs have no kind: their names give it.
func TestKindOfAFormat1Program(t *testing.T) {
	for name, want := range map[string]ProgramKind{"decode": KindDecode, "sampled": KindSampled, "prefill.8": KindPrefill, "other": 0} {
		if got := (&Program{Name: name}).KindOf(); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if got := (&Program{Name: "decode", Kind: KindBatch}).KindOf(); got != KindBatch {
		t.Errorf("the kind field loses to the name: %s", got)
	}
}

func TestAddPipeline(t *testing.T) {
	p := &Plan{}
	a := p.AddPipeline("gemv", U32(2, 7), Bool(0, true))
	b := p.AddPipeline("gemv", Bool(0, true), U32(2, 7))
	c := p.AddPipeline("gemv", F32(1, 0.5), I32(0, -1))
	if a != 0 || b != 0 || c != 1 || len(p.Pipelines) != 2 {
		t.Fatalf("indices %d %d %d, %d pipelines", a, b, c, len(p.Pipelines))
	}
	if k := p.Pipelines[0].Key; k != "gemv|0:bool=true|2:u32=7" {
		t.Errorf("key %s", k)
	}
	if k := p.Pipelines[1].Key; k != "gemv|0:i32=-1|1:f32=0.5" {
		t.Errorf("key %s", k)
	}
	if p.AddPipeline("plain"); p.Pipelines[2].Constants != nil {
		t.Error("no constants should stay nil, as they decode")
	}
}
