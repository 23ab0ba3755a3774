package server

import (
	"strings"
	"sync"
	"testing"
)

// A server that speculates (n-gram drafts, or stories260K drafting for
// itself) answers greedy completions with the text of one that does not,
// several requests at once in one batched step (their drafts rows of it);
// a bad mode is refused (a draft of another vocabulary is runtime's
// TestDraftModelEqualsPlain).
func TestSpeculatingServerAnswersAsAPlainOne(t *testing.T) {
	plan, gguf := storiesPlan(t)
	prompts := []string{
		"Lily and Tom went to the park. Lily and Tom went to the park. Lily and Tom went to the",
		"Once upon a time",
		"The little dog ran to the park and",
	}
	complete := func(ts *testServer) []string {
		out := make([]string, len(prompts))
		var wg sync.WaitGroup
		for i, p := range prompts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var r completionResponse
				ts.postOK(t, "/v1/completions", completionBody(p, map[string]any{"max_tokens": 60, "temperature": 0, "ignore_eos": true}), &r)
				if len(r.Choices) == 1 {
					out[i] = r.Choices[0].Text
				}
			}()
		}
		wg.Wait()
		return out
	}
	want := complete(startServer(t, Config{}))
	for _, sp := range []Spec{{Mode: "ngram", Max: 6}, {Mode: "draft", DraftPlan: plan, DraftModel: gguf, Max: 4}} {
		t.Run(sp.Mode, func(t *testing.T) {
			got := complete(startServer(t, Config{Spec: map[string]Spec{"": sp}}))
			for i := range prompts {
				if got[i] != want[i] || got[i] == "" {
					t.Fatalf("prompt %d: speculating %q\nplain %q", i, got[i], want[i])
				}
			}
		})
	}
	t.Run("a bad mode is refused", func(t *testing.T) {
		if _, err := New(Config{Plans: []string{plan}, Spec: map[string]Spec{"": {Mode: "lookahead"}}}); err == nil || !strings.Contains(err.Error(), "ngram or draft") {
			t.Fatalf("mode lookahead: %v", err)
		}
	})
}
