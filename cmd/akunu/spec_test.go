package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/synth"
	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/server"
	"github.com/akunu-dev/akunu/specs"
	"github.com/akunu-dev/akunu/specs/chips"
)

// The speculation flags refuse what means nothing with one line naming
// the flag (exit 2), before any model is loaded.
func TestSpecFlagsAreChecked(t *testing.T) {
	plan := compileShared(t, "models", "stories260K.gguf")
	for _, c := range []struct {
		flag string
		args []string
	}{
		{"spec", []string{"--spec", "lookahead"}},
		{"spec", []string{"--spec", "draft"}},
		{"draft", []string{"--draft", plan}},
		{"draft-max", []string{"--spec", "ngram", "--draft-max", "0"}},
		{"draft-max", []string{"--spec", "ngram", "--draft-max", "32"}},
		{"draft-min", []string{"--spec", "ngram", "--draft-min", "0"}},
		{"draft-min", []string{"--spec", "ngram", "--draft-max", "4", "--draft-min", "5"}},
		{"draft-model", []string{"--draft-model", "x.gguf"}},
		{"draft-vocab", []string{"--spec", "draft", "--draft", plan, "--draft-vocab", "-1"}},
		{"draft-vocab", []string{"--spec", "ngram", "--draft-vocab", "64"}},
	} {
		for _, cmd := range []string{"run", "chat", "bench", "serve"} {
			args := append([]string{cmd, plan, "--backend", "cpu"}, c.args...)
			t.Run(strings.Join(args[3:], " ")+" "+cmd, func(t *testing.T) {
				var out, errOut bytes.Buffer
				code := runIO(args, strings.NewReader(""), &out, &errOut)
				want := "akunu " + cmd + ": --" + c.flag + " "
				if code != 2 || !strings.HasPrefix(errOut.String(), want) || strings.Count(errOut.String(), "\n") != 1 {
					t.Fatalf("exit %d, stderr %q; want exit 2 and one line starting %q", code, errOut.String(), want)
				}
			})
		}
	}
	for _, args := range [][]string{
		{"--temp", "0.5"},                                          // a temperature without --spec
		{"--spec", "ngram", "--temp", "-1"},                        // a negative one
		{"--spec", "ngram", "--prompt", "a", "--prompt-file", "f"}, // both prompts
	} {
		var out, errOut bytes.Buffer
		if code := runIO(append([]string{"bench", plan, "--backend", "cpu"}, args...), strings.NewReader(""), &out, &errOut); code != 2 || strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("bench %v: exit %d, stderr %q", args, code, errOut.String())
		}
	}
}

// akunu run --spec gives the tokens of akunu run (greedy), with n-gram
// drafts and with a draft model (stories260K drafting for itself), and
// reports its passes; a draft of another vocabulary is one clear line.
func TestRunSpecGivesPlainTokens(t *testing.T) {
	plan := compileShared(t, "models", "stories260K.gguf")
	model, err := llamacpp.SharedPath("models", "stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	prompt := "Lily and Tom went to the park. Lily and Tom went to the park. Lily and Tom went to the"
	type out struct {
		Tokens []int32 `json:"tokens"`
		Spec   *struct {
			Passes, Accepted int
		} `json:"spec"`
	}
	run := func(extra ...string) (out, string, int) {
		var o, e bytes.Buffer
		args := append([]string{"run", plan, "--model", model, "--backend", "cpu", "-p", prompt, "-n", "40", "--json"}, extra...)
		code := runIO(args, strings.NewReader(""), &o, &e)
		var r out
		if code == 0 {
			if err := json.Unmarshal(o.Bytes(), &r); err != nil {
				t.Fatalf("%v: %v", extra, err)
			}
		}
		return r, e.String(), code
	}
	want, _, code := run()
	if code != 0 || len(want.Tokens) == 0 {
		t.Fatalf("plain run: exit %d", code)
	}
	for _, extra := range [][]string{{"--spec", "ngram"}, {"--spec", "draft", "--draft", plan, "--draft-model", model, "--draft-max", "4"},
		{"--spec", "draft", "--draft", plan, "--draft-model", model, "--draft-max", "4", "--draft-vocab", "64"}} {
		got, errOut, code := run(extra...)
		if code != 0 || !slices.Equal(got.Tokens, want.Tokens) || got.Spec == nil || got.Spec.Passes == 0 {
			t.Fatalf("%v: exit %d (%s), tokens %v, spec %+v\nplain %v", extra, code, errOut, got.Tokens, got.Spec, want.Tokens)
		}
	}
	other := synthPlan(t)
	_, errOut, code := run("--spec", "draft", "--draft", other)
	if code == 0 || !strings.Contains(errOut, "vocabulary") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("a draft of another vocabulary: exit %d, stderr %q", code, errOut)
	}
}

// akunu bench --spec draft says where a pass's time went (drafting and
// verifying, beside a plain token) and whether the draft's LM head ran over
// its shortlist.
func TestBenchSpecSaysWhereAPassGoes(t *testing.T) {
	plan := compileShared(t, "models", "stories260K.gguf")
	model, err := llamacpp.SharedPath("models", "stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	for vocab, want := range map[string]string{"0": "the draft's LM head over every token", "64": "the draft's LM head over its shortlist (--draft-vocab 64)"} {
		var o, e bytes.Buffer
		args := []string{"bench", plan, "--model", model, "--backend", "cpu", "-n", "24", "-r", "1", "--spec", "draft", "--draft", plan,
			"--draft-model", model, "--draft-vocab", vocab}
		if code := runIO(args, strings.NewReader(""), &o, &e); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, e.String())
		}
		if !strings.Contains(o.String(), "a pass of the last run: drafting ") || !strings.Contains(o.String(), want) {
			t.Fatalf("--draft-vocab %s: no pass line with %q in\n%s", vocab, want, o.String())
		}
	}
}

// synthPlan is a small random llama (its own vocabulary) compiled for the
// CPU, its GGUF file next to it.
func synthPlan(t *testing.T) string {
	t.Helper()
	return synthCPUPlan(t, synth.Options{Arch: "llama", Dim: 64, Layers: 1, Heads: 2, KVHeads: 2, HeadDim: 32, FFN: 128, CtxTrain: 256, DType: dtype.F32, Seed: 3}, 256)
}

// synthCPUPlan synthesizes a model of o, compiles it for a 2-core AVX2 CPU
// with context ctx (0: the model's), and returns the plan's path; the GGUF
// file lies next to it.
func synthCPUPlan(t *testing.T, o synth.Options, ctx int) string {
	t.Helper()
	reg, err := specs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	sp, err := synth.Build(reg, o)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gguf := filepath.Join(dir, o.Arch+".gguf")
	if err := sp.Write(gguf, o.Seed); err != nil {
		t.Fatal(err)
	}
	prof, err := chips.Resolve("cpu-avx2", 2)
	if err != nil {
		t.Fatal(err)
	}
	p, err := compiler.Compile(gguf, compiler.Options{Chip: prof, Ctx: ctx})
	if err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, o.Arch+".plan")
	if err := plans.WriteFile(plan, p); err != nil {
		t.Fatal(err)
	}
	return plan
}

// akunu serve --spec-plan sets one served plan's speculation over --spec's:
// a mode, a draft model's plan, or none; what names no served plan or no
// mode is one line naming the flag (exit 2).
func TestServeSpecPlans(t *testing.T) {
	mode, draft, draftModel, most, least, vocab := "ngram", "", "", 6, 2, 512
	spf := specFlags{mode: &mode, draft: &draft, draftModel: &draftModel, max: &most, min: &least, vocab: &vocab}
	got, err := serveSpecs(spf, []string{"b.plan=none", "c.plan=draft:d.plan"}, []string{"a.plan", "b.plan", "c.plan"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]server.Spec{
		"":       {Mode: "ngram", Max: 6, Min: 2, Vocab: 512},
		"b.plan": {Max: 6, Min: 2, Vocab: 512},
		"c.plan": {Mode: "draft", DraftPlan: "d.plan", Max: 6, Min: 2, Vocab: 512},
	}
	if !maps.Equal(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	mode = ""
	if got, err := serveSpecs(spf, nil, []string{"a.plan"}); err != nil || got != nil {
		t.Fatalf("no speculation: %v, %v", got, err)
	}
	plan := compileShared(t, "models", "stories260K.gguf")
	for _, v := range []string{"x.plan=ngram", plan + "=draft", plan + "=ngram:" + plan, plan, plan + "=fast"} {
		var out, errOut bytes.Buffer
		code := runIO([]string{"serve", plan, "--backend", "cpu", "--spec-plan", v}, strings.NewReader(""), &out, &errOut)
		if code != 2 || !strings.HasPrefix(errOut.String(), "akunu serve: --spec-plan ") || strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("--spec-plan %s: exit %d, stderr %q", v, code, errOut.String())
		}
	}
}
