package specs_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/archs"
	"github.com/akunu-dev/akunu/specs"
)

// UPDATE_GOLDEN=1 rewrites the golden files (and the expected sections of
// txtar bundles) from what the code produces; review them in the diff.
var update = os.Getenv("UPDATE_GOLDEN") != ""

// txtarFile is one file of a txtar bundle.
type txtarFile struct {
	name string
	data []byte
}

// parseTxtar reads the txtar format: a comment, then files introduced by
// "-- name --" lines.
func parseTxtar(data []byte) (comment []byte, files []txtarFile) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	cur := -1
	for _, l := range lines {
		s := strings.TrimRight(string(l), "\r\n")
		if strings.HasPrefix(s, "-- ") && strings.HasSuffix(s, " --") && len(s) > 6 {
			files = append(files, txtarFile{name: strings.TrimSpace(s[3 : len(s)-3])})
			cur = len(files) - 1
			continue
		}
		if cur < 0 {
			comment = append(comment, l...)
		} else {
			files[cur].data = append(files[cur].data, l...)
		}
	}
	return comment, files
}

func formatTxtar(comment []byte, files []txtarFile) []byte {
	var b bytes.Buffer
	b.Write(comment)
	for _, f := range files {
		b.WriteString("-- " + f.name + " --\n")
		b.Write(f.data)
		if len(f.data) > 0 && !bytes.HasSuffix(f.data, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// builtinFiles returns archs/*.yaml as Load's input.
func builtinFiles(t *testing.T) map[string][]byte {
	t.Helper()
	names, err := fs.Glob(archs.FS, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, n := range names {
		b, err := fs.ReadFile(archs.FS, n)
		if err != nil {
			t.Fatal(err)
		}
		files["archs/"+n] = b
	}
	return files
}

// golden compares got with a golden file, or rewrites it under UPDATE_GOLDEN.
func golden(t *testing.T, path string, got string) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with UPDATE_GOLDEN=1 to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (UPDATE_GOLDEN=1 to accept):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

func builtin(t *testing.T) *specs.Registry {
	t.Helper()
	r, err := specs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return r
}
