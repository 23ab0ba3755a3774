package tokenizer_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
)

// vocabFiles lists ../shared/vocab/*.gguf.
func vocabFiles(t testing.TB) []string {
	t.Helper()
	dir, err := llamacpp.SharedPath("vocab")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.gguf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no vocabularies in %s (%v)", dir, err)
	}
	return files
}

func vocabName(path string) string {
	return strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "ggml-vocab-"), ".gguf")
}

var (
	tokMu    sync.Mutex
	tokCache = map[string]*tokenizer.Tokenizer{}
)

// load builds (once per process) the tokenizer of a GGUF file.
func load(t testing.TB, path string) *tokenizer.Tokenizer {
	t.Helper()
	tokMu.Lock()
	defer tokMu.Unlock()
	if tk, ok := tokCache[path]; ok {
		return tk
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tk, err := tokenizer.New(v)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tokCache[path] = tk
	return tk
}

var (
	llMu    sync.Mutex
	llCache = map[string]*llamacpp.Model{}
)

// oracle loads a file's vocabulary into llama.cpp (once per process).
func oracle(t testing.TB, path string) *llamacpp.Model {
	t.Helper()
	lib := llamacpp.Require(t)
	llMu.Lock()
	defer llMu.Unlock()
	if m, ok := llCache[path]; ok {
		return m
	}
	p := lib.DefaultModelParams()
	p.VocabOnly = true
	m, err := lib.LoadModelWith(path, p)
	if err != nil {
		t.Fatal(err)
	}
	llCache[path] = m
	return m
}

// vectors reads NAME.gguf.inp and .out.
func vectors(t testing.TB, path string) (inputs, outputs []string) {
	t.Helper()
	inp, err := os.ReadFile(path + ".inp")
	if err != nil {
		proof.Missing(t, "tokenizer test vectors (../shared/vocab)", err.Error())
	}
	out, err := os.ReadFile(path + ".out")
	if err != nil {
		t.Fatal(err)
	}
	inputs = tokenizer.SplitVectorInputs(string(inp))
	outputs = strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(inputs) != len(outputs) {
		t.Fatalf("%d inputs, %d outputs", len(inputs), len(outputs))
	}
	return inputs, outputs
}

var osReadFile = os.ReadFile
