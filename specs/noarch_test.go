package specs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// archNames are the architecture names no Go code may spell: model
// knowledge lives in archs/*.yaml, and code that branched on a name would
// make a new architecture more than a new YAML file.
var archNames = map[string]bool{
	"llama": true, "mistral": true, "qwen2": true, "qwen3": true,
	"gemma": true, "gemma2": true, "gemma3": true, "phi3": true,
	"bert": true, "qwen3moe": true, "mixtral": true,
}

// exempt are paths where such a string means something else, each with why.
var exempt = map[string]string{
	"internal/llamacpp/": "names llama.cpp's library and its install directory, not the llama architecture",
}

// optOut is the comment that marks, on the literal's line, a string that is
// not an architecture's name though it spells one: "llama" as the value of
// tokenizer.ggml.model (the SentencePiece tokenizer) is the usual case.
const optOut = "akunu:not-arch"

// archLiterals returns "file:line:col: literal" for each string literal of
// src that names an architecture without the opt-out comment on its line.
func archLiterals(name string, src any) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	allowed := map[int]bool{}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if strings.Contains(c.Text, optOut) {
				allowed[fset.Position(c.Pos()).Line] = true
			}
		}
	}
	var hits []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		p := fset.Position(lit.Pos())
		if err == nil && archNames[strings.ToLower(s)] && !allowed[p.Line] {
			hits = append(hits, fmt.Sprintf("%s:%d:%d: %s", name, p.Line, p.Column, lit.Value))
		}
		return true
	})
	return hits, nil
}

func TestTheArchitectureNameScanSeesOnlyStringLiterals(t *testing.T) {
	src := "package p\n\n" +
		"// llama and gemma3 in a comment are fine.\n" +
		"var a = \"llama\"\n" +
		"var b = `Gemma3`\n" +
		"var c = \"llama.cpp\"\n" +
		"var d = \"llama\" // akunu:not-arch: tokenizer.ggml.model\n" +
		"func f(s string) bool { return s == \"qwen3\" }\n" +
		"var llama = 1\n"
	hits, err := archLiterals("p.go", src)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`p.go:4:9: "llama"`, "p.go:5:9: `Gemma3`", `p.go:8:37: "qwen3"`}
	if strings.Join(hits, "\n") != strings.Join(want, "\n") {
		t.Errorf("hits:\n%s\nwant:\n%s", strings.Join(hits, "\n"), strings.Join(want, "\n"))
	}
}

func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// TestNoGoCodeNamesAnArchitecture scans the string literals of every
// non-test Go file of the repository (comments are free to name models).
func TestNoGoCodeNamesAnArchitecture(t *testing.T) {
	root := repoRoot(t)
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".cache", ".git", "testdata", "vendor", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "archs/") {
			return nil
		}
		for prefix := range exempt {
			if strings.HasPrefix(rel, prefix) {
				return nil
			}
		}
		files++
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		hits, err := archLiterals(rel, src)
		if err != nil {
			t.Errorf("%v", err)
			return nil
		}
		for _, h := range hits {
			t.Errorf("%s names an architecture; put model knowledge in archs/*.yaml "+
				"(or, if it is not an architecture's name, say so with a // %s comment on its line)", h, optOut)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("scanned no Go files")
	}
}
