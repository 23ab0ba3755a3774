package grammar

// Reading llama.cpp's C++ grammar tests as data (internal/cppcases reads
// the C++). Shared by the parser's and the machine's tests; nothing of
// llama.cpp is copied, its files are read at test time.

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/akunu-dev/akunu/internal/cppcases"
	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/internal/proof"
)

// llamaFile reads a file of llama.cpp's pinned source (rel to its root),
// or reports the missing source through proof.Missing and returns "".
func llamaFile(t testing.TB, rel string) string {
	t.Helper()
	src, err := llamacpp.SourceFile(rel)
	if errors.Is(err, llamacpp.ErrNotInstalled) {
		proof.Missing(t, "llama.cpp source "+rel, err.Error())
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// llamaGrammarFiles are llama.cpp's grammars/*.gbnf: name -> text.
func llamaGrammarFiles(t testing.TB) map[string]string {
	t.Helper()
	dir, err := llamacpp.SourceDir()
	if err != nil {
		proof.Missing(t, "llama.cpp grammars/*.gbnf", err.Error()+" (run scripts/fetch-llama-src.sh)")
		return nil
	}
	paths, err := filepath.Glob(filepath.Join(dir, "grammars", "*.gbnf"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = string(b)
	}
	return out
}

// llamaFileCalls reads a llama.cpp test file and returns the calls of fn
// in every function, with that function's string variables resolved.
func llamaFileCalls(t testing.TB, rel, fn string) []cppcases.Call {
	t.Helper()
	src := llamaFile(t, rel)
	if src == "" {
		return nil
	}
	out, err := cppcases.FileCalls(src, fn)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return out
}

// llamaFuncVars returns the string variables of each function of a
// llama.cpp test file (function name -> variable -> value).
func llamaFuncVars(t testing.TB, rel string) map[string]map[string]cppcases.Val {
	t.Helper()
	src := llamaFile(t, rel)
	if src == "" {
		return nil
	}
	out, err := cppcases.FuncVars(src)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return out
}

// atLeast fails t when an extractor found fewer cases than it found when
// the test was written: a broken extractor must not pass by finding none.
func atLeast(t testing.TB, what string, got, want int) {
	t.Helper()
	if got < want {
		t.Fatalf("%s: extracted %d cases, fewer than the %d found when this test was written: the extractor or the file changed", what, got, want)
	}
}

// GrammarCase is one test_grammar call of test-grammar-integration.cpp.
type grammarCase struct {
	Name    string
	Line    int
	Grammar string
	Pass    []string // may hold token(N) encodings (see cppcases.Val.HasToken)
	Fail    []string
	Tokens  bool // some string or the grammar uses token(N)
}

// llamaIntegrationGrammars are the test_grammar cases of
// tests/test-grammar-integration.cpp (nil when the source is missing).
func llamaIntegrationGrammars(t testing.TB) []grammarCase {
	t.Helper()
	var out []grammarCase
	for _, c := range llamaFileCalls(t, "tests/test-grammar-integration.cpp", "test_grammar") {
		if len(c.Args) != 4 || !c.Args[0].IsStr || !c.Args[1].IsStr || !c.Args[2].IsList || !c.Args[3].IsList {
			t.Fatalf("test-grammar-integration.cpp:%d: test_grammar call not of the shape (name, grammar, {pass}, {fail})", c.Line)
		}
		gc := grammarCase{Name: c.Args[0].Str, Line: c.Line, Grammar: c.Args[1].Str}
		for k, list := range []*[]string{&gc.Pass, &gc.Fail} {
			for _, s := range c.Args[2+k].List {
				if !s.IsStr {
					t.Fatalf("test-grammar-integration.cpp:%d: a test string that is not a string expression", s.Line)
				}
				*list = append(*list, s.Str)
				gc.Tokens = gc.Tokens || s.HasToken
			}
		}
		out = append(out, gc)
	}
	return out
}
