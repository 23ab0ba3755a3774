package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akunu-dev/akunu/plans"
)

// TestEveryLoadPathRefusesABadVocabularyInOneLine: a plan whose tokenizer
// the runtime refuses (a token repeated: what akunuc compile now refuses
// too, written here around the compiler) is the runtime's one-line error,
// exit 1, in every command that loads a plan; never a panic of a half-made
// model's cleanup (issue 18.1).
func TestEveryLoadPathRefusesABadVocabularyInOneLine(t *testing.T) {
	good, model := storiesPlan(t, "cpu-avx2:2")
	p, err := plans.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	p.Model.Tokenizer.Tokens[17] = p.Model.Tokenizer.Tokens[5]
	plan := filepath.Join(t.TempDir(), "dup.plan")
	if err := plans.WriteFile(plan, p); err != nil {
		t.Fatal(err)
	}
	const want = "tokenizer.ggml.tokens: token 17 "
	for _, args := range [][]string{
		{"run", plan, "--model", model, "-p", "Once", "-n", "2", "--threads", "2"},
		{"chat", plan, "--model", model, "--threads", "2"},
		{"bench", plan, "--model", model, "--threads", "2"},
		{"verify", plan, "--backend", "cpu", "--model", model, "--threads", "2"},
		{"tokenize", plan, "Once upon a time"},
		{"serve", plan, "--model", model, "--port", "0", "--threads", "2"},
	} {
		t.Run("akunu "+args[0], func(t *testing.T) {
			var out, errOut bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- runIO(args, strings.NewReader("hello\n"), &out, &errOut) }()
			var code int
			select {
			case code = <-done:
			case <-time.After(time.Minute):
				t.Fatalf("akunu %s did not return within a minute", args[0])
			}
			lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
			last := lines[len(lines)-1]
			if code != 1 || !strings.Contains(last, want) || strings.Contains(errOut.String(), "panic") {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and a last line naming %q", code, errOut.String(), want)
			}
		})
	}
}
