package compiler

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/synth"
	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/specs"
	"github.com/akunu-dev/akunu/specs/chips"
)

// chip resolves a target name.
func chip(t testing.TB, name string) chips.Profile {
	t.Helper()
	p, err := chips.Resolve(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// synthModel writes a synthetic model into dir and returns its path.
func synthModel(t testing.TB, dir string, o synth.Options) string {
	t.Helper()
	reg, err := specs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	p, err := synth.Build(reg, o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, o.Arch+".gguf")
	if err := p.Write(path, o.Seed); err != nil {
		t.Fatal(err)
	}
	return path
}

// sharedFile finds a file under ../shared. A missing file fails the test:
// the shared data is part of every checkout CI runs, and a skipped golden
// proves nothing.
func sharedFile(t testing.TB, elem ...string) string {
	t.Helper()
	p, err := llamacpp.SharedPath(elem...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return p
}

// llama8B is a Llama-3-8B-shaped Q4_0 model with the Llama 3 vocabulary
// (128256 tokens), sparse, written once per test binary.
var llama8B = struct {
	sync.Mutex
	paths map[int]string
}{paths: map[int]string{}}

func llama8BPath(t testing.TB, layers int) string {
	t.Helper()
	llama8B.Lock()
	defer llama8B.Unlock()
	if p, ok := llama8B.paths[layers]; ok {
		return p
	}
	v, err := synth.VocabFromGGUF(sharedFile(t, "vocab", "ggml-vocab-llama-bpe.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "akunu-compiler-8b")
	if err != nil {
		t.Fatal(err)
	}
	p := synthModel(t, dir, synth.Options{Arch: "llama", Dim: 4096, Layers: layers, Heads: 32, KVHeads: 8, FFN: 14336,
		CtxTrain: 8192, DType: dtype.Q4_0, Vocab: v, Sparse: true, Seed: 1})
	llama8B.paths[layers] = p
	return p
}

func compile(t testing.TB, path string, o Options) *plans.Plan {
	t.Helper()
	llama8B.Lock()
	for _, p := range llama8B.paths {
		// Its full sums would read ~800 MB of holes a compile; what the
		// tests of its plans look at does not depend on them.
		o.SampledSumsOnly = o.SampledSumsOnly || p == path
	}
	llama8B.Unlock()
	p, err := Compile(path, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
