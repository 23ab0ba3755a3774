package runtime

import (
	"fmt"
	"math"

	"github.com/akunu-dev/akunu/runtime/grammar"
)

// Constraint keeps a generation inside a grammar's language: a Processor
// that, every step, asks the grammar for the bitmask of tokens that may
// come next and sets the others' logits to -inf, and an Acceptor that
// advances the grammar by the token chosen. The bitmask, not the logits,
// is the interface to the grammar, so that a GPU sampler can read it as a
// buffer (ADR 0015). End-of-generation tokens are allowed only where the
// grammar may end; a step where no token is allowed fails the generation
// with grammar.ErrStuck (Failer).
type Constraint struct {
	mt   *grammar.Matcher
	mask []uint32
	err  error
}

// GrammarIndex compiles g for m's vocabulary: the machine, and the token
// trie m builds once. Constraints made from one index share its cache of
// masks; an index is safe for concurrent use.
func (m *Model) GrammarIndex(g *grammar.Grammar) (*grammar.Index, error) {
	g, err := m.resolveTokenTexts(g)
	if err != nil {
		return nil, err
	}
	mc, err := grammar.Compile(g)
	if err != nil {
		return nil, err
	}
	for _, r := range g.Rules {
		for _, alt := range r.Alts {
			for _, e := range alt {
				if e.Kind == grammar.Token && (e.Token < 0 || int(e.Token) >= m.vocab) {
					return nil, fmt.Errorf("grammar: rule %q names token %d outside the vocabulary of %d", r.Name, e.Token, m.vocab)
				}
			}
		}
	}
	return grammar.NewIndex(mc, m.GrammarVocab()), nil
}

// resolveTokenTexts is g with its tokens written by text (<|im_end|>)
// given their ids in m's vocabulary, as llama.cpp resolves them: the text
// must tokenize, special tokens parsed, to exactly one token. g itself is
// left as it is.
func (m *Model) resolveTokenTexts(g *grammar.Grammar) (*grammar.Grammar, error) {
	var out *grammar.Grammar
	for ri, r := range g.Rules {
		for ai, alt := range r.Alts {
			for ei, e := range alt {
				if e.Kind != grammar.Token || e.Text == "" || e.Token >= 0 {
					continue
				}
				ids := m.Tokenizer.Tokenize(e.Text, false, true) // "<|im_end|>", brackets and all

				if len(ids) != 1 {
					return nil, fmt.Errorf("grammar: rule %q: token %s is %d tokens in this model's vocabulary, not one", r.Name, e.Text, len(ids))
				}
				if out == nil {
					out = cloneGrammar(g)
				}
				out.Rules[ri].Alts[ai][ei].Token = ids[0]
			}
		}
	}
	if out == nil {
		return g, nil
	}
	return out, nil
}

// cloneGrammar copies g's rules down to their elements.
func cloneGrammar(g *grammar.Grammar) *grammar.Grammar {
	c := *g
	c.Rules = make([]grammar.Rule, len(g.Rules))
	for i, r := range g.Rules {
		r.Alts = make([][]grammar.Elem, len(g.Rules[i].Alts))
		for a, alt := range g.Rules[i].Alts {
			r.Alts[a] = append([]grammar.Elem(nil), alt...)
		}
		c.Rules[i] = r
	}
	return &c
}

// GrammarVocab is the model's tokens as a grammar matches them: each
// token's bytes (control tokens have none, so no grammar produces them)
// and its end-of-generation tokens.
func (m *Model) GrammarVocab() *grammar.Vocab {
	m.grammarOnce.Do(func() { m.grammarVocab = grammar.TokenizerVocab(m.Tokenizer, m.vocab) })
	return m.grammarVocab
}

// Constrain is GrammarIndex and NewConstraint in one call, for a grammar
// used once (a CLI run). A server that sees the same grammar again keeps
// the Index and makes a Constraint per request, so that its requests
// share the cache of masks.
func (m *Model) Constrain(g *grammar.Grammar) (*Constraint, error) {
	x, err := m.GrammarIndex(g)
	if err != nil {
		return nil, err
	}
	return NewConstraint(x), nil
}

// NewConstraint starts a constraint at the start of x's grammar (one per
// generation: it holds the generation's place in the grammar).
func NewConstraint(x *grammar.Index) *Constraint {
	mt := x.Matcher()
	return &Constraint{mt: mt, mask: make([]uint32, x.Words())}
}

// Process sets the logits of the tokens the grammar does not allow next
// to -inf.
func (c *Constraint) Process(logits []float32, _ []int32) {
	if c.err != nil {
		return
	}
	if err := c.mt.Mask(c.mask); err != nil {
		c.err = err
		return
	}
	ninf := float32(math.Inf(-1))
	for w, bits := range c.mask {
		if bits == ^uint32(0) {
			continue
		}
		base := w * 32
		for i := 0; i < 32 && base+i < len(logits); i++ {
			if bits&(1<<i) == 0 {
				logits[base+i] = ninf
			}
		}
	}
	for i := len(c.mask) * 32; i < len(logits); i++ {
		logits[i] = ninf
	}
}

// Accept advances the grammar past tok.
func (c *Constraint) Accept(tok int32) {
	if c.err == nil {
		c.err = c.mt.Accept(tok)
	}
}

// Err is the failure that ended the generation: no token could continue
// the grammar (grammar.ErrStuck), or a token it refuses was accepted.
func (c *Constraint) Err() error { return c.err }

// Done reports whether the output is complete (only an end token may
// follow).
func (c *Constraint) Done() bool { return c.mt.Done() }
