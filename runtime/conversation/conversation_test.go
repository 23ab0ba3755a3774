package conversation

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/synth"
	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/runtime/chat"
	"github.com/akunu-dev/akunu/specs"
	"github.com/akunu-dev/akunu/specs/chips"
)

// chatModel is a small qwen3 with the synthetic byte-level vocabulary
// (its plan carries the family's ChatML template), on the CPU.
func chatModel(t *testing.T) *runtime.Model {
	t.Helper()
	reg, err := specs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gg := filepath.Join(dir, "m.gguf")
	sp, err := synth.Build(reg, synth.Options{Arch: "qwen3", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 128, DType: dtype.F32, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.Write(gg, 3); err != nil {
		t.Fatal(err)
	}
	prof, _ := chips.Resolve("cpu-avx2", 2)
	p, err := compiler.Compile(gg, compiler.Options{Chip: prof, Ctx: 1024})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "m.plan")
	if err := plans.WriteFile(out, p); err != nil {
		t.Fatal(err)
	}
	m, err := runtime.Load(out, runtime.Options{Threads: 2, Seqs: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func session(t *testing.T, m *runtime.Model) *runtime.Session {
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// A second turn feeds only what the cache lacks, and answers what a fresh
// session fed the whole rendered conversation answers; the conversation
// keeps the answers as messages.
func TestTurnsReuseTheCache(t *testing.T) {
	m := chatModel(t)
	tmpl, err := chat.Select(m.Plan.Model.Tokenizer.ChatTemplate, "")
	if err != nil {
		t.Fatal(err)
	}
	o := runtime.GenerateOptions{MaxTokens: 8}
	c := New(m, session(t, m), tmpl, "Be brief.")
	ctx := context.Background()
	r1, err := c.Turn(ctx, "Hello there", o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Fed != r1.Rendered || len(r1.Result.Tokens) == 0 {
		t.Fatalf("first turn: fed %d of %d, %d tokens", r1.Fed, r1.Rendered, len(r1.Result.Tokens))
	}
	var streamed strings.Builder
	r2, err := c.Turn(ctx, "How are you?", o, func(d Delta) bool { streamed.WriteString(d.Content); return true })
	if err != nil {
		t.Fatal(err)
	}
	if r2.Fed >= r2.Rendered {
		t.Fatalf("second turn fed %d of %d tokens: the cache was not reused", r2.Fed, r2.Rendered)
	}
	if streamed.String() != r2.Content {
		t.Fatalf("streamed %q, reply %q", streamed.String(), r2.Content)
	}
	msgs := c.Messages()
	if len(msgs) != 5 || msgs[2].Role != "assistant" || msgs[2].Content != r1.Content || msgs[4].Content != r2.Content {
		t.Fatalf("messages %+v", msgs)
	}
	// The same second turn from scratch.
	fresh := session(t, m)
	text, err := tmpl.Render(chat.Context{Messages: msgs[:4], AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	ids := m.Tokenizer.Tokenize(text, false, true)
	if len(ids) != r2.Rendered {
		t.Fatalf("rendered %d tokens, the turn %d", len(ids), r2.Rendered)
	}
	want, err := fresh.Generate(ctx, ids, o)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r2.Result.Tokens, want.Tokens) {
		t.Fatalf("second turn %v, fresh %v", r2.Result.Tokens, want.Tokens)
	}
	c.Reset()
	if len(c.Messages()) != 1 {
		t.Fatalf("after Reset: %d messages", len(c.Messages()))
	}
}

// With Qwen3's template (which has <think>), answers are split into
// reasoning and content, and neither shows a tag.
func TestThinkingTemplateSplitsTheAnswer(t *testing.T) {
	path, err := llamacpp.SharedPath("templates", "Qwen-Qwen3-0.6B.jinja")
	if err != nil {
		t.Skip(err)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("the shared templates: %v", err)
	}
	tmpl, err := chat.Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	m := chatModel(t)
	c := New(m, session(t, m), tmpl, "")
	if !c.thinks {
		t.Fatal("Qwen3's template was not recognised as thinking")
	}
	r, err := c.Turn(context.Background(), "Hi", runtime.GenerateOptions{MaxTokens: 30, Sampling: runtime.Sampling{Temperature: 1, Seed: 4}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{r.Content, r.Reasoning} {
		if strings.Contains(s, "<think>") || strings.Contains(s, "</think>") {
			t.Fatalf("a part shows a tag: %q", s)
		}
	}
	if !strings.Contains(r.Result.Text, strings.TrimSpace(r.Content)) {
		t.Fatalf("content %q is not in the answer %q", r.Content, r.Result.Text)
	}
}
