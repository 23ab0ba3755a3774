package server

import (
	"encoding/json"
	"fmt"
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
	// The last: each slot's drafter with its shortlist (the ids below 64
	// and its conversation's) over the one draft model they share.
	for _, sp := range []Spec{{Mode: "ngram", Max: 6}, {Mode: "draft", DraftPlan: plan, DraftModel: gguf, Max: 4},
		{Mode: "draft", DraftPlan: plan, DraftModel: gguf, Max: 4, Vocab: 64}} {
		t.Run(fmt.Sprintf("%s vocab %d", sp.Mode, sp.Vocab), func(t *testing.T) {
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

// Speculation is a per-model setting: with two models of one server, the
// one given a Spec drafts (its /v1/metrics count verify passes and
// drafts) and the other does not, whether the other has no entry or
// opts out of a default ("" key) with an empty mode.
func TestSpeculationIsPerModel(t *testing.T) {
	paths, models := planCopies(t, "a", "b")
	prompt := "Lily and Tom went to the park. Lily and Tom went to the park. Lily and Tom went to the"
	for name, spec := range map[string]map[string]Spec{
		"only a":                  {paths[0]: {Mode: "ngram"}},
		"a default, b opting out": {"": {Mode: "ngram"}, paths[1]: {}},
	} {
		t.Run(name, func(t *testing.T) {
			ts := startServer(t, Config{Plans: paths, Models: models, Spec: spec})
			for _, id := range []string{"a", "b"} {
				var r completionResponse
				ts.postOK(t, "/v1/completions", completionBody(prompt, map[string]any{"model": id, "max_tokens": 40, "temperature": 0, "ignore_eos": true}), &r)
			}
			_, b := ts.get(t, "/v1/metrics")
			var out struct {
				Models []struct {
					ID      string `json:"id"`
					Passes  uint64 `json:"spec_passes"`
					Drafted uint64 `json:"spec_drafted"`
				} `json:"models"`
			}
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			got := map[string][2]uint64{}
			for _, m := range out.Models {
				got[m.ID] = [2]uint64{m.Passes, m.Drafted}
			}
			if a := got["a"]; a[0] == 0 || a[1] == 0 {
				t.Errorf("model a: %d passes, %d drafts; want some", a[0], a[1])
			}
			if b := got["b"]; b != [2]uint64{} {
				t.Errorf("model b: %d passes, %d drafts; want none", b[0], b[1])
			}
		})
	}
}
