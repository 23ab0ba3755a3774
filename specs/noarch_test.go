package specs_test

import (
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
}

// exempt are paths where such a string means something else, each with why.
var exempt = map[string]string{
	"internal/llamacpp/": "names llama.cpp's library and its install directory, not the llama architecture",
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
	fset := token.NewFileSet()
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
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && archNames[strings.ToLower(s)] {
				p := fset.Position(lit.Pos())
				t.Errorf("%s:%d:%d: string literal %s names an architecture; put model knowledge in archs/*.yaml",
					rel, p.Line, p.Column, lit.Value)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("scanned no Go files")
	}
}
