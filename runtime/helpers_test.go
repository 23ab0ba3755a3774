package runtime

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/synth"
	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/specs"
	"github.com/akunu-dev/akunu/specs/chips"
)

func stories(t testing.TB) string {
	t.Helper()
	return proof.Shared(t, "models", "stories260K.gguf")
}

// compile compiles model for chip and writes the plan next to it.
func compile(t testing.TB, model, chip string) string {
	t.Helper()
	return compileWith(t, model, chip, compiler.Options{})
}

// compileWith is compile with other options (o.Chip is chip's profile).
func compileWith(t testing.TB, model, chip string, o compiler.Options) string {
	t.Helper()
	prof, err := chips.Resolve(chip, 0)
	if err != nil {
		t.Fatal(err)
	}
	o.Chip = prof
	p, err := compiler.Compile(model, o)
	if err != nil {
		t.Fatalf("compile %s for %s: %v", model, chip, err)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(model)+"."+chip+"."+o.KVType+".plan")
	if err := plans.WriteFile(out, p); err != nil {
		t.Fatal(err)
	}
	return out
}

// testSeqs are the sequence slots test models have: room for the sessions
// one test holds at once.
const testSeqs = 8

func load(t testing.TB, plan, model string, threads int) *Model {
	t.Helper()
	m, err := Load(plan, Options{Model: model, Threads: threads, Seqs: testSeqs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// sess is a new session of m, closed when the test ends.
func sess(t testing.TB, m *Model) *Session {
	t.Helper()
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

var (
	synthMu    sync.Mutex
	synthCache = map[string]string{}
	synthDir   string
)

// synthModel writes (once per test binary) a small random model.
func synthModel(t testing.TB, arch string, dt dtype.Type) string {
	t.Helper()
	return synthMix(t, arch, dt, "")
}

// synthMix is synthModel with one of synth's dtype recipes (q4_k_m,
// q3_k_m); "" for none.
func synthMix(t testing.TB, arch string, dt dtype.Type, recipe string) string {
	t.Helper()
	key := arch + "." + dt.String()
	if recipe != "" {
		key = arch + "." + recipe
	}
	return synthWith(t, key, synth.Options{Arch: arch, Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 512, CtxTrain: 256,
		DType: dt, Recipe: recipe, Seed: 7})
}

// synthCopier writes (once per test binary) a small copier (synth's
// induction-head model, whose greedy text copies its context) with the
// llama-bpe tokenizer of ../shared, three layers: the third passes the
// residual through.
func synthCopier(t testing.TB, dt dtype.Type) string {
	t.Helper()
	v, err := synth.VocabFromGGUF(proof.Shared(t, "vocab", "ggml-vocab-llama-bpe.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	return synthWith(t, "copier."+dt.String(), synth.Options{Arch: "llama", Dim: 256, Layers: 3, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 512,
		CtxTrain: 1024, DType: dt, Vocab: v, Copier: true, Seed: 7})
}

// synthWith writes (once per test binary, by key) the model of o.
func synthWith(t testing.TB, key string, o synth.Options) string {
	t.Helper()
	synthMu.Lock()
	defer synthMu.Unlock()
	if p, ok := synthCache[key]; ok {
		return p
	}
	if synthDir == "" {
		d, err := os.MkdirTemp("", "akunu-runtime-test")
		if err != nil {
			t.Fatal(err)
		}
		synthDir = d
	}
	reg, err := specs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	sp, err := synth.Build(reg, o)
	if err != nil {
		t.Fatalf("synth %s: %v", key, err)
	}
	path := filepath.Join(synthDir, key+".gguf")
	if err := sp.Write(path, o.Seed); err != nil {
		t.Fatal(err)
	}
	synthCache[key] = path
	return path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if synthDir != "" {
		os.RemoveAll(synthDir)
	}
	os.Exit(code)
}
