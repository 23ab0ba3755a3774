package gguf

import (
	"io"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/akunu-dev/akunu/internal/llamacpp"
)

// llama.cpp (the pinned reference library) loads what Builder writes: a
// rewrite of stories260K with another alignment, streamed tensors and extra
// metadata of every type generates the same tokens as the original; a
// shape-only rewrite with sparse zero tensors loads with the same parameter
// count. It refuses arrays of arrays, which docs/gguf.md warns about.
func TestLlamaCppLoadsWhatBuilderWrites(t *testing.T) {
	l := llamacpp.Require(t)
	path := storiesPath(t)
	m, err := Map(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	dir := t.TempDir()

	rewrite := func(name string, extra func(b *Builder), tensors func(b *Builder, ti *TensorInfo)) string {
		b := NewBuilder()
		extra(b)
		for _, kv := range m.KVs {
			b.Set(kv.Key, kv.Value)
		}
		for i := range m.Tensors {
			tensors(b, &m.Tensors[i])
		}
		p := filepath.Join(dir, name)
		if err := b.WriteFile(p, true); err != nil {
			t.Fatal(err)
		}
		return p
	}
	streamed := func(b *Builder, ti *TensorInfo) {
		data := m.Data(ti)
		b.AddTensorFunc(ti.Name, ti.Type, ti.Dims, func(w io.Writer) error {
			_, err := w.Write(data)
			return err
		})
	}
	aligned := rewrite("aligned.gguf", func(b *Builder) {
		b.SetAlignment(256)
		for _, kv := range everyType() {
			if kv.Value.ElemType() != TypeArray {
				b.Set("akunu.test."+kv.Key, kv.Value)
			}
		}
	}, streamed)
	if f, err := Open(aligned); err != nil || f.Alignment != 256 || f.DataOffset%256 != 0 {
		t.Fatalf("rewrite: %v", err)
	}

	want := generate(t, l, path)
	t.Logf("stories260K generates %v", want)
	got := generate(t, l, aligned)
	if !slices.Equal(got, want) {
		t.Errorf("the rewrite generates %v, the original %v", got, want)
	}

	shapes := rewrite("shapes.gguf", func(*Builder) {}, func(b *Builder, ti *TensorInfo) {
		b.AddZeroTensor(ti.Name, ti.Type, ti.Dims)
	})
	orig, err := l.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	zero, err := l.LoadModel(shapes)
	if err != nil {
		t.Fatalf("llama.cpp refuses the shape-only rewrite: %v", err)
	}
	defer zero.Close()
	if zero.NParams() != orig.NParams() || zero.NLayer() != 5 {
		t.Errorf("shape-only model: %d parameters, %d layers; want %d, 5", zero.NParams(), zero.NLayer(), orig.NParams())
	}

	nested := rewrite("nested.gguf", func(b *Builder) {
		v, _ := Arrays(Uint8s([]uint8{1}))
		b.Set("akunu.test.nested", v)
	}, streamed)
	if _, err := Open(nested); err != nil {
		t.Fatalf("we cannot read our own nested arrays: %v", err)
	}
	if mdl, err := l.LoadModel(nested); err == nil {
		mdl.Close()
		t.Error("llama.cpp now loads arrays of arrays: update docs/gguf.md")
	}
}

// generate greedily decodes 24 tokens after a prompt.
func generate(t *testing.T, l *llamacpp.Lib, path string) []int32 {
	t.Helper()
	mdl, err := l.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer mdl.Close()
	ctx, err := mdl.NewContext(128, 32, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	prompt, err := mdl.Tokenize("Once upon a time", true, false)
	if err != nil {
		t.Fatal(err)
	}
	toks, logits, err := ctx.GreedyGenerate(prompt, 24)
	if err != nil {
		t.Fatal(err)
	}
	for _, lg := range logits {
		for _, x := range lg {
			if math.IsNaN(float64(x)) {
				t.Fatalf("%s: NaN logits", filepath.Base(path))
			}
		}
	}
	return toks
}
