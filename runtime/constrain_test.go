package runtime

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/runtime/grammar"
)

func constraintFor(t *testing.T, m *Model, src string) (*grammar.Grammar, *grammar.Index) {
	t.Helper()
	g, err := grammar.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	x, err := m.GrammarIndex(g)
	if err != nil {
		t.Fatal(err)
	}
	return g, x
}

// TestConstrainedGeneration: under a grammar, stories260K's output is in
// the language, greedy and sampled, and ends with EOS where the grammar
// ends; the same on the batched path.
func TestConstrainedGeneration(t *testing.T) {
	m := storiesModel(t)
	src := `root ::= "The " ("cat" | "dog" | "bird") " was " [a-z]{2,8} "." (" " [A-Z] [a-z]{1,6}){0,2} "\n"`
	_, x := constraintFor(t, m, src)
	mc, err := grammar.Compile(mustParse(t, src))
	if err != nil {
		t.Fatal(err)
	}
	p := m.Tokenizer.Tokenize("Once upon a time", true, false)
	for seed := uint32(0); seed < 6; seed++ {
		smp := Sampling{Temperature: 1.5, Seed: seed}
		if seed == 0 {
			smp = Sampling{}
		}
		c := NewConstraint(x)
		r := genNew(t, m, p, GenerateOptions{MaxTokens: 64, Sampling: smp, Processors: []Processor{c}})
		if r.Stop != StopEOS {
			t.Fatalf("seed %d: stopped by %s after %q, want EOS where the grammar ends", seed, r.Stop, r.Text)
		}
		if !mc.Accepts(r.Text) {
			t.Fatalf("seed %d: %q is not in the language", seed, r.Text)
		}
		if !c.Done() {
			t.Fatalf("seed %d: the grammar is not done at EOS", seed)
		}
	}
}

// TestConstraintStuck: a grammar no token can continue (past "Once" a
// grammar whose class matches nothing) ends the generation with grammar.ErrStuck, not a loop.
func TestConstraintStuck(t *testing.T) {
	m := storiesModel(t)
	_, x := constraintFor(t, m, `root ::= "Once" [^\x00-\U0010FFFF]`) // nothing can follow "Once"
	s := sess(t, m)
	p := m.Tokenizer.Tokenize("Hello", true, false)
	res, err := s.Generate(context.Background(), p, GenerateOptions{MaxTokens: 32, Processors: []Processor{NewConstraint(x)}})
	if !errors.Is(err, grammar.ErrStuck) {
		t.Fatalf("err = %v, want ErrStuck", err)
	}
	if res == nil || res.Stop != StopError {
		t.Fatalf("result %+v", res)
	}
}

func mustParse(t *testing.T, src string) *grammar.Grammar {
	t.Helper()
	g, err := grammar.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestConstraintOnEveryPath: under a grammar, a generation gives the same
// tokens alone, in a Batcher beside unconstrained ones, and speculating
// (alone and in a Batcher)
// (drafts verified row by row, each row masked by the grammar's state
// after the rows before it), greedy and sampled; and the output is in the
// language on each.
func TestConstraintOnEveryPath(t *testing.T) {
	m := storiesModel(t)
	// Lowercase words and spaces: the copying prompt's continuation fits
	// it, so the n-gram drafter's drafts are accepted, and its capitals
	// and periods do not, so the mask changes what the model would say.
	src := `root ::= [a-z]+ (" " [a-z]+){4,30} "\n"`
	g := mustParse(t, src)
	x, err := m.GrammarIndex(g)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := grammar.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	p := m.Tokenizer.Tokenize(copyPrompt, true, false)
	accepted := 0
	for _, smp := range []Sampling{{}, {Temperature: 0.8, TopK: 40, Seed: 5}} {
		opts := func() GenerateOptions {
			return GenerateOptions{MaxTokens: 60, Sampling: smp, Processors: []Processor{NewConstraint(x)}}
		}
		// Whole when it ended, a sentence's prefix when the limit cut it.
		inLanguage := func(r *Result) bool {
			if r.Stop == StopLimit {
				return mc.Advance(mc.Start(), r.Text) >= 0
			}
			return r.Stop == StopEOS && mc.Accepts(r.Text)
		}
		alone := genNew(t, m, p, opts())
		if !inLanguage(alone) {
			t.Fatalf("%+v: %q (%s) is not in the language", smp, alone.Text, alone.Stop)
		}
		t.Logf("%+v: %q (%s)", smp, alone.Text, alone.Stop)
		// In a Batcher, beside an unconstrained generation.
		b := m.NewBatcher()
		gc, err := b.Add(bg, sess(t, m), p, opts())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Add(bg, sess(t, m), m.Tokenizer.Tokenize(batchPrompts[1], true, false), GenerateOptions{MaxTokens: 30}); err != nil {
			t.Fatal(err)
		}
		if err := b.Run(bg); err != nil {
			t.Fatal(err)
		}
		if got := gc.Result(); !slices.Equal(got.Tokens, alone.Tokens) || gc.Err() != nil {
			t.Fatalf("%+v: batched %q (%v)\nalone %q", smp, got.Text, gc.Err(), alone.Text)
		}
		// Speculating, with drafts always and adaptively.
		for _, fixed := range []bool{true, false} {
			got := genNew(t, m, p, specOpts(opts(), &NGram{}, fixed))
			accepted += got.Spec.Accepted
			if smp.Greedy() && !slices.Equal(got.Tokens, alone.Tokens) {
				t.Fatalf("greedy, speculative (fixed %v) %q\nalone %q", fixed, got.Text, alone.Text)
			}
			if !inLanguage(got) {
				t.Fatalf("%+v speculative: %q is not in the language", smp, got.Text)
			}
		}
		// Speculating in a Batcher (the server's path), beside an
		// unconstrained generation.
		b = m.NewBatcher()
		gs, err := b.Add(bg, sess(t, m), p, specOpts(opts(), &NGram{}, true))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Add(bg, sess(t, m), m.Tokenizer.Tokenize(batchPrompts[1], true, false), GenerateOptions{MaxTokens: 30}); err != nil {
			t.Fatal(err)
		}
		if err := b.Run(bg); err != nil {
			t.Fatal(err)
		}
		got := gs.Result()
		accepted += got.Spec.Accepted
		if gs.Err() != nil || !inLanguage(got) || smp.Greedy() && !slices.Equal(got.Tokens, alone.Tokens) {
			t.Fatalf("%+v: batched speculative %q (%v)\nalone %q", smp, got.Text, gs.Err(), alone.Text)
		}
	}
	if accepted == 0 {
		t.Fatal("no draft was accepted: verification under a grammar was not exercised")
	}
}

// TestConstraintStepAllocs: a constrained step whose mask is cached and
// whose transitions are known allocates nothing.
func TestConstraintStepAllocs(t *testing.T) {
	m := storiesModel(t)
	_, x := constraintFor(t, m, `root ::= ("ab" | "a" | "b" | " ")*`)
	toks := m.Tokenizer.Tokenize(" a b ab ba a b", false, false)
	logits := make([]float32, m.vocab)
	warm := NewConstraint(x)
	for _, tok := range toks {
		warm.Process(logits, nil)
		warm.Accept(tok)
	}
	if warm.Err() != nil {
		t.Fatal(warm.Err())
	}
	c := NewConstraint(x)
	i := 0
	allocs := testing.AllocsPerRun(len(toks)-1, func() {
		c.Process(logits, nil)
		c.Accept(toks[i])
		i++
	})
	if c.Err() != nil {
		t.Fatal(c.Err())
	}
	if allocs != 0 {
		t.Fatalf("a constrained step allocates %.1f times", allocs)
	}
}

// TestGrammarTokenText: a token written by its text (<unk>) is resolved
// to its id in the model's vocabulary, leaving the caller's grammar as it
// was; text that is not one token is a clear error.
func TestGrammarTokenText(t *testing.T) {
	m := storiesModel(t)
	g := mustParse(t, `root ::= " Once" !<unk> <unk>`) // SPM: "Once" is " Once"
	x, err := m.GrammarIndex(g)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range g.Rules[g.Root].Alts[0] {
		if e.Kind == grammar.Token && e.Token != -1 {
			t.Fatalf("the caller's grammar changed: %+v", e)
		}
	}
	unk := m.Tokenizer.Tokenize("<unk>", false, true)
	if len(unk) != 1 {
		t.Fatalf("<unk> is %v", unk)
	}
	c := NewConstraint(x)
	once := m.Tokenizer.Tokenize("Once", false, false)
	for _, tok := range once {
		c.Accept(tok)
	}
	logits := make([]float32, m.vocab)
	c.Process(logits, nil) // !<unk>: every token but <unk> (byte tokens and text alike)
	if c.Err() != nil || !math.IsInf(float64(logits[unk[0]]), -1) {
		t.Fatalf("after Once: err %v, <unk> logit %v (want -inf)", c.Err(), logits[unk[0]])
	}
	if _, err := m.GrammarIndex(mustParse(t, `root ::= <Once upon>`)); err == nil || !strings.Contains(err.Error(), "not one") {
		t.Fatalf("a multi-token text: %v", err)
	}
}
