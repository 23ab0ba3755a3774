package runtime

import (
	"context"
	"errors"
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
