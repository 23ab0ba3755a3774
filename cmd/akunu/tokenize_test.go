package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
	"github.com/akunu-dev/akunu/specs/chips"
)

func runAkunu(args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// compileShared compiles a ../shared GGUF file for the CPU into a plan in a
// temporary folder.
func compileShared(t *testing.T, elem ...string) string {
	t.Helper()
	src, err := llamacpp.SharedPath(elem...)
	if err != nil {
		t.Fatal(err)
	}
	prof, err := chips.Resolve("cpu-avx2", 2)
	if err != nil {
		t.Fatal(err)
	}
	p, err := compiler.Compile(src, compiler.Options{Chip: prof, Ctx: 256})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "m.plan")
	if err := plans.WriteFile(out, p); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTokenizePlanMatchesTheVectors: the tokenizer a plan carries gives
// llama.cpp's test vectors, as the one built from the GGUF file does.
func TestTokenizePlanMatchesTheVectors(t *testing.T) {
	plan := compileShared(t, "models", "stories260K.gguf")
	vocab, _ := llamacpp.SharedPath("vocab", "ggml-vocab-llama-spm.gguf.inp")
	// The stories vocabulary is not llama-spm's: compare with akunuc's
	// GGUF path on the same model instead of the .out file.
	lib := llamacpp.Require(t)
	src, _ := llamacpp.SharedPath("models", "stories260K.gguf")
	m, err := lib.LoadModel(src)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	data, err := os.ReadFile(vocab)
	if err != nil {
		t.Fatal(err)
	}
	inputs := tokenizer.SplitVectorInputs(string(data))
	out, se, code := runAkunu("tokenize", plan, "--no-special", "--vectors", vocab)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(inputs) {
		t.Fatalf("%d lines for %d inputs", len(lines), len(inputs))
	}
	for i, in := range inputs {
		want, err := m.Tokenize(in, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if w := tokenizer.FormatVectorLine(want); lines[i] != w {
			t.Errorf("input %d %q: got %q, llama.cpp %q", i, in, lines[i], w)
		}
	}
}

func TestTokenizeThenDetokenizeGivesTheTextBack(t *testing.T) {
	plan := compileShared(t, "models", "stories260K.gguf")
	ids, se, code := runAkunu("tokenize", plan, "Once upon a time, there was a cat.")
	if code != 0 {
		t.Fatalf("tokenize: exit %d: %s", code, se)
	}
	if !strings.HasPrefix(ids, "1 ") {
		t.Errorf("ids %q do not start with BOS 1", ids)
	}
	for _, flag := range []string{"--no-special", "--special=false"} {
		text, se, code := runAkunu("detokenize", plan, flag, strings.TrimSpace(ids))
		if code != 0 {
			t.Fatalf("detokenize: exit %d: %s", code, se)
		}
		if text != "Once upon a time, there was a cat.\n" {
			t.Errorf("detokenize %s: %q", flag, text)
		}
	}
	if _, se, code := runAkunu("detokenize", plan, "99999"); code != 2 || !strings.Contains(se, "not a token id") {
		t.Errorf("an id outside the vocabulary: exit %d, %q", code, se)
	}
}

// TestDetokenizeDropsWhatTokenizeAdds: tokenize | detokenize gives the
// text back, byte for byte: llama_detokenize with remove_special, less the
// prefix space llama.cpp keeps; --special shows the BOS, as llama.cpp's
// unparse_special does.
func TestDetokenizeDropsWhatTokenizeAdds(t *testing.T) {
	plan := compileShared(t, "models", "stories260K.gguf")
	lib := llamacpp.Require(t)
	src, _ := llamacpp.SharedPath("models", "stories260K.gguf")
	m, err := lib.LoadModel(src)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, text := range []string{"Hello", "Hello world", " leading space", "Lily said, \"hi!\" and ran.\nThe end.", "x"} {
		ids, se, code := runAkunu("tokenize", plan, text)
		if code != 0 {
			t.Fatalf("tokenize %q: exit %d: %s", text, code, se)
		}
		var out, errOut bytes.Buffer
		if code := runIO([]string{"detokenize", plan}, strings.NewReader(ids), &out, &errOut); code != 0 {
			t.Fatalf("detokenize %q: exit %d: %s", ids, code, errOut.String())
		}
		if got := strings.TrimSuffix(out.String(), "\n"); got != text {
			t.Errorf("%q: tokenize | detokenize gives %q", text, got)
		}
		special, se, code := runAkunu("detokenize", plan, "--special", strings.TrimSpace(ids))
		if code != 0 {
			t.Fatalf("detokenize --special: exit %d: %s", code, se)
		}
		var toks []int32
		for _, f := range strings.Fields(ids) {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			toks = append(toks, int32(n))
		}
		for _, c := range []struct {
			got             string
			remove, unparse bool
		}{{out.String(), true, false}, {special, false, true}} {
			want, err := m.Detokenize(toks, c.remove, c.unparse)
			if err != nil {
				t.Fatal(err)
			}
			if c.remove {
				// llama.cpp keeps the space SentencePiece put before the
				// first word when it drops the BOS; the text had none.
				want = strings.TrimPrefix(want, " ")
			}
			if got := strings.TrimSuffix(c.got, "\n"); got != want {
				t.Errorf("%q: detokenize (remove_special %v, unparse_special %v) %q, llama.cpp %q", text, c.remove, c.unparse, got, want)
			}
		}
	}
}
