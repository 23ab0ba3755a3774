package main

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/synth"
	"github.com/akunu-dev/akunu/internal/llamacpp"
)

// chatPlan is a small qwen3 model with the built-in byte-level vocabulary:
// it ships no chat template, so the plan carries the family's (ChatML).
func chatPlan(t *testing.T) string {
	t.Helper()
	return synthCPUPlan(t, synth.Options{Arch: "qwen3", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 128, DType: dtype.F32, Seed: 3}, 512)
}

var fedRE = regexp.MustCompile(`fed (\d+) of (\d+) prompt tokens`)

func TestChatKeepsTheCacheBetweenTurns(t *testing.T) {
	plan := chatPlan(t)
	var out, errOut bytes.Buffer
	in := strings.NewReader("Hello there\nHow are you?\n/exit\n")
	code := runIO([]string{"chat", plan, "--backend", "cpu", "-n", "6", "--temp", "0", "--system", "Be brief."}, in, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	turns := fedRE.FindAllStringSubmatch(errOut.String(), -1)
	if len(turns) != 2 {
		t.Fatalf("want 2 turns reported, stderr:\n%s", errOut.String())
	}
	fed2, _ := strconv.Atoi(turns[1][1])
	all2, _ := strconv.Atoi(turns[1][2])
	if fed2 >= all2 {
		t.Errorf("the second turn fed %d of %d tokens: the cache was not reused", fed2, all2)
	}
	if strings.Count(out.String(), "> ") != 3 {
		t.Errorf("want three prompts (two turns and /exit), stdout:\n%s", out.String())
	}
}

// TestChatWithoutATemplateTalksInPlainTurns: a model whose file has no
// chat template (stories260K: llama, no single format) chats in plain
// User:/Assistant: turns after one notice that names --template; a
// template name that is not a built-in is still refused.
func TestChatWithoutATemplateTalksInPlainTurns(t *testing.T) {
	plan := compileShared(t, "models", "stories260K.gguf")
	model, _ := llamacpp.SharedPath("models", "stories260K.gguf")
	var out, errOut bytes.Buffer
	code := runIO([]string{"chat", plan, "--model", model, "--backend", "cpu", "-n", "24", "--temp", "0"},
		strings.NewReader("Tell me a story about a cat.\nAnd then?\n/exit\n"), &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if n := strings.Count(errOut.String(), "--template"); n != 1 || !strings.Contains(errOut.String(), "no chat template") {
		t.Errorf("want one notice naming --template, stderr:\n%s", errOut.String())
	}
	if turns := fedRE.FindAllStringSubmatch(errOut.String(), -1); len(turns) != 2 {
		t.Errorf("want 2 turns answered, stderr:\n%s", errOut.String())
	}
	answers := strings.TrimPrefix(out.String(), "> ")
	if strings.Contains(answers, "User:") || len(strings.TrimSpace(strings.ReplaceAll(answers, ">", ""))) == 0 {
		t.Errorf("answers %q: empty, or running on into the user's turn", answers)
	}
	errOut.Reset()
	code = runIO([]string{"chat", plan, "--model", model, "--backend", "cpu", "--template", "vicuna"}, strings.NewReader("hi\n"), &out, &errOut)
	if code == 0 || !strings.Contains(errOut.String(), "--template") || !strings.Contains(errOut.String(), "vicuna") {
		t.Errorf("--template vicuna: exit %d, stderr %q; want a refusal naming it", code, errOut.String())
	}
}
