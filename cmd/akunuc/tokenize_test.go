package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
)

func tokenizeCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(append([]string{"tokenize"}, args...), &out, &errOut)
	return out.String(), errOut.String(), code
}

// TestTokenizeVectorsReproduceOutFiles: `akunuc tokenize --vectors X.inp
// --no-special` prints X.out byte for byte, for every shared vocabulary.
func TestTokenizeVectorsReproduceOutFiles(t *testing.T) {
	dir, err := llamacpp.SharedPath("vocab")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.gguf.inp"))
	if len(files) == 0 {
		t.Fatalf("no test vectors in %s", dir)
	}
	for _, inp := range files {
		model := strings.TrimSuffix(inp, ".inp")
		t.Run(filepath.Base(model), func(t *testing.T) {
			want, err := os.ReadFile(model + ".out")
			if err != nil {
				t.Fatal(err)
			}
			out, errOut, code := tokenizeCmd(t, model, "--vectors", inp, "--no-special")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if out != string(want) {
				gl, wl := strings.Split(out, "\n"), strings.Split(string(want), "\n")
				for i := range min(len(gl), len(wl)) {
					if gl[i] != wl[i] {
						t.Fatalf("line %d:\n got %q\nwant %q", i+1, gl[i], wl[i])
					}
				}
				t.Fatalf("%d lines, want %d", len(gl), len(wl))
			}
		})
	}
}

func storiesModel(t *testing.T) string {
	t.Helper()
	p, err := llamacpp.SharedPath("models", "stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTokenizeTextMatchesLlamaCpp: a TEXT argument (or stdin) is tokenized
// with BOS added and special tokens parsed, as llama_tokenize does; with
// --no-special, neither.
func TestTokenizeTextMatchesLlamaCpp(t *testing.T) {
	lib := llamacpp.Require(t)
	path := storiesModel(t)
	m, err := lib.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	format := func(ids []int32) string { return strings.TrimPrefix(tokenizer.FormatVectorLine(ids), " ") + "\n" }
	for _, text := range []string{"Once upon a time", "<s>Lily said </s> hi", " ", "🦙 ok"} {
		for _, special := range []bool{true, false} {
			want, err := m.Tokenize(text, special, special)
			if err != nil {
				t.Fatal(err)
			}
			args := []string{path, text}
			if !special {
				args = append(args, "--no-special")
			}
			out, errOut, code := tokenizeCmd(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if out != format(want) {
				t.Errorf("tokenize %q (special %v): %q, want %q", text, special, out, format(want))
			}
		}
	}
	// Several words are one text; no text means stdin.
	out, _, _ := tokenizeCmd(t, path, "Once", "upon", "a", "time")
	want, _ := m.Tokenize("Once upon a time", true, true)
	if out != format(want) {
		t.Errorf("words as arguments: %q, want %q", out, format(want))
	}
	var o, e bytes.Buffer
	runIO([]string{"tokenize", path}, strings.NewReader("Once upon\na time\n"), &o, &e)
	out = o.String()
	want, _ = m.Tokenize("Once upon\na time\n", true, true)
	if out != format(want) {
		t.Errorf("stdin: %q, want %q", out, format(want))
	}
}

func TestTokenizeErrors(t *testing.T) {
	if _, errOut, code := tokenizeCmd(t); code != 2 || !strings.Contains(errOut, "usage: akunuc tokenize") {
		t.Errorf("no arguments: exit %d, %q", code, errOut)
	}
	if _, errOut, code := tokenizeCmd(t, storiesModel(t), "x", "--vectors", "y.inp"); code != 2 {
		t.Errorf("TEXT with --vectors: exit %d, %q", code, errOut)
	}
	if _, errOut, code := tokenizeCmd(t, filepath.Join(t.TempDir(), "missing.gguf"), "x"); code != 1 || errOut == "" {
		t.Errorf("missing model: exit %d, %q", code, errOut)
	}
}
