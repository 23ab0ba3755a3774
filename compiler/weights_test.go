package compiler

import (
	"path/filepath"
	"testing"

	"github.com/akunu-dev/akunu/compiler/gguf"
)

func TestTheWeightsPassRecordsSumsAndThePath(t *testing.T) {
	model := sharedFile(t, "models", "stories260K.gguf")
	abs, err := filepath.Abs(model)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("Compile records every tensor's sums and the absolute path", func(t *testing.T) {
		t.Chdir(filepath.Dir(model))
		p := compile(t, filepath.Base(model), Options{Chip: chip(t, "cpu-avx2:2"), Ctx: 64})
		m := p.Header.Model
		if m.Path != abs || m.Weights.Scheme != gguf.SumScheme || !m.Weights.Full || len(m.Weights.Tensors) != len(f.Tensors) {
			t.Fatalf("path %q, scheme %q, full %v, %d sums for %d tensors", m.Path, m.Weights.Scheme, m.Weights.Full, len(m.Weights.Tensors), len(f.Tensors))
		}
		for i, s := range m.Weights.Tensors {
			// A tensor of at most SampleBlocks blocks is sampled whole: its
			// two sums are one.
			sampledWhole := f.Tensors[i].Size <= gguf.SampleBlocks*gguf.SampleBlock
			if s.Name != f.Tensors[i].Name || (s.Sampled == s.Full) != sampledWhole || s.Full == [32]byte{} {
				t.Errorf("tensor %d: %s, sums %x %x", i, s.Name, s.Sampled[:4], s.Full[:4])
			}
		}
	})
	t.Run("SampledSumsOnly leaves the full sums out", func(t *testing.T) {
		p := compile(t, model, Options{Chip: chip(t, "cpu-avx2:2"), Ctx: 64, SampledSumsOnly: true})
		w := p.Header.Model.Weights
		if w.Full || len(w.Tensors) != len(f.Tensors) || w.Tensors[0].Full != [32]byte{} || w.Tensors[0].Sampled == [32]byte{} {
			t.Fatalf("full %v, %d sums, the first %+v", w.Full, len(w.Tensors), w.Tensors[0])
		}
	})
	t.Run("CompileFile, from a header alone, records neither", func(t *testing.T) {
		p, err := CompileFile(f, model, Options{Chip: chip(t, "cpu-avx2:2"), Ctx: 64})
		if err != nil {
			t.Fatal(err)
		}
		if m := p.Header.Model; m.Path != "" || m.Weights.Scheme != "" || m.Weights.Tensors != nil {
			t.Fatalf("path %q, weights %+v", m.Path, m.Weights.Scheme)
		}
	})
}
