package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/internal/schemacheck"
)

// TestRunConstrained: akunu run under --json-schema, --json-object and
// --grammar prints text in the language (the schema's, any object's, the
// grammar's), greedy and sampled.
func TestRunConstrained(t *testing.T) {
	plan := compileShared(t, "models", "stories260K.gguf")
	model, err := llamacpp.SharedPath("models", "stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	schemaPath := filepath.Join("..", "..", "runtime", "testdata", "schemas", "16-array-of-objects.json")
	schema, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	gbnf := filepath.Join(dir, "pet.gbnf")
	if err := os.WriteFile(gbnf, []byte("root ::= \"My \" pet \".\"\npet ::= \"cat\" | \"dog\" | \"fish\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, seed := range []string{"0", "1", "2"} {
		temp := "0.9"
		if seed == "0" {
			temp = "0"
		}
		for _, c := range []struct {
			name  string
			args  []string
			check func(text string) error
		}{
			{"json-schema", []string{"--json-schema", schemaPath}, func(s string) error { return schemacheck.Validate(schema, []byte(s)) }},
			{"json-object", []string{"--json-object"}, func(s string) error {
				var obj map[string]any
				return json.Unmarshal([]byte(s), &obj)
			}},
			{"grammar", []string{"--grammar", gbnf}, func(s string) error {
				if s != "My cat." && s != "My dog." && s != "My fish." {
					return os.ErrInvalid
				}
				return nil
			}},
		} {
			t.Run(c.name+" seed "+seed, func(t *testing.T) {
				args := append([]string{"run", plan, "--model", model, "--backend", "cpu", "-p", "Once", "-n", "200", "--json", "--temp", temp, "--seed", seed}, c.args...)
				var out, errOut bytes.Buffer
				if code := runIO(args, strings.NewReader(""), &out, &errOut); code != 0 {
					t.Fatalf("exit %d: %s", code, errOut.String())
				}
				var res struct {
					Text  string `json:"text"`
					Stats struct {
						Stop string `json:"stop"`
					} `json:"stats"`
				}
				if err := json.Unmarshal(out.Bytes(), &res); err != nil {
					t.Fatal(err)
				}
				if res.Stats.Stop != "eos" {
					t.Fatalf("stop %q after %q, want eos where the language ends", res.Stats.Stop, res.Text)
				}
				if err := c.check(res.Text); err != nil {
					t.Fatalf("%q is not in the language: %v", res.Text, err)
				}
			})
		}
	}
}

// TestRunConstraintFiles: a constraint file's faults are one line naming
// the file and the place (line:col for GBNF, a JSON pointer or line:col
// for a schema), before the model loads; a grammar's warnings go to
// stderr and the run goes on.
func TestRunConstraintFiles(t *testing.T) {
	plan := compileShared(t, "models", "stories260K.gguf")
	model, err := llamacpp.SharedPath("models", "stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	typo := write("typo.gbnf", "root ::= \"a\" valeu\nvalue ::= \"b\"\n")
	unused := write("unused.gbnf", "root ::= \"x\"\nunused ::= \"y\"\n")
	keyword := write("keyword.json", `{"type": "integer", "multipleOf": 3}`)
	broken := write("broken.json", "{\"type\":\n  \"object\",,}")
	missing := filepath.Join(dir, "missing.gbnf")
	for _, c := range []struct {
		name, flag, file string
		code             int
		stderr           []string // substrings, in order
	}{
		{"a typo in a rule name is placed and corrected", "--grammar", typo, 1, []string{typo + ":1:14: ", `undefined rule "valeu"`, "value"}},
		{"an unsupported keyword is named with its pointer", "--json-schema", keyword, 1, []string{keyword + ": /multipleOf: ", "multipleOf"}},
		{"malformed JSON is placed by line and column", "--json-schema", broken, 1, []string{broken + ":2:"}},
		{"a missing file is named", "--grammar", missing, 1, []string{"--grammar: ", missing}},
		{"an unused rule is a warning, and the run goes on", "--grammar", unused, 0, []string{unused + ":2:1: warning: ", `"unused"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := []string{"run", plan, "--model", model, "--backend", "cpu", "-p", "Once", "-n", "8", c.flag, c.file}
			code := runIO(args, strings.NewReader(""), &out, &errOut)
			e := errOut.String()
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, c.code, e)
			}
			rest := e
			for _, s := range c.stderr {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Fatalf("stderr %q lacks %q (in order)", e, s)
				}
				rest = rest[i+len(s):]
			}
			if c.code != 0 && strings.Count(e, "\n") != 1 {
				t.Fatalf("stderr %q is not one line", e)
			}
			if c.code == 0 && !strings.HasPrefix(out.String(), "Oncex") {
				t.Fatalf("stdout %q, want the prompt and the grammar's one sentence", out.String())
			}
		})
	}
}
