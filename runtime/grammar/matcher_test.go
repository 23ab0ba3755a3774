package grammar

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// maskSet is the tokens set in mask.
func maskSet(mask []uint32, n int) []int32 {
	var out []int32
	for t := 0; t < n; t++ {
		if mask[t>>5]&(1<<(t&31)) != 0 {
			out = append(out, int32(t))
		}
	}
	return out
}

// TestMatcherEndTokens: an end token is allowed exactly where the
// grammar may end, a token with no bytes (a control token) never, and
// Done only where nothing but an end token may follow.
func TestMatcherEndTokens(t *testing.T) {
	const eos = 4
	v := NewVocab([][]byte{[]byte("a"), []byte("b"), []byte("ab"), nil, []byte("</s>")}, []int32{eos})
	for _, tc := range []struct {
		name, src string
		steps     []int32   // tokens accepted in turn
		masks     [][]int32 // the mask before each step, and after the last
		done      []bool    // Done before each step, and after the last
	}{
		{"a fixed sentence allows the end token only once complete", `root ::= "a" "b"`,
			[]int32{0, 1}, [][]int32{{0, 2}, {1}, {eos}}, []bool{false, false, true}},
		{"a sentence that may go on allows the end token and more", `root ::= "a"+`,
			[]int32{0, 0}, [][]int32{{0}, {0, eos}, {0, eos}}, []bool{false, false, false}},
		{"the empty sentence allows the end token at once", `root ::= "" | "ab"`,
			[]int32{2}, [][]int32{{0, 2, eos}, {eos}}, []bool{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mustMachine(t, tc.src)
			c := NewMatcher(m, v)
			mask := make([]uint32, v.Words())
			for i := 0; i <= len(tc.steps); i++ {
				if err := c.Mask(mask); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if got := maskSet(mask, v.Len()); !slices.Equal(got, tc.masks[i]) {
					t.Fatalf("step %d: mask %v, want %v", i, got, tc.masks[i])
				}
				if got := c.Done(); got != tc.done[i] {
					t.Fatalf("step %d: Done %v, want %v", i, got, tc.done[i])
				}
				if i < len(tc.steps) {
					if err := c.Accept(tc.steps[i]); err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
				}
			}
			if err := c.Accept(3); err == nil {
				t.Fatal("a token with no bytes was accepted")
			}
		})
	}
	c := NewMatcher(mustMachine(t, `root ::= "a" "b"`), v)
	if err := c.Accept(eos); err == nil {
		t.Fatal("the end token was accepted before the sentence was complete")
	}
	if err := c.Accept(1); err == nil {
		t.Fatal(`"b" was accepted where the grammar wants "a"`)
	}
	for _, bad := range []int32{-1, 5, 1 << 30} {
		if err := c.Accept(bad); err == nil {
			t.Fatalf("token %d outside the vocabulary was accepted", bad)
		}
	}
}

// TestMatcherStuck: where no token continues the output and the grammar
// may not end, Mask fails with ErrStuck instead of an empty mask.
func TestMatcherStuck(t *testing.T) {
	v := NewVocab([][]byte{[]byte("a"), []byte("b"), []byte("</s>")}, []int32{2})
	c := NewMatcher(mustMachine(t, `root ::= "a" "c"`), v) // no token spells "c"
	mask := make([]uint32, v.Words())
	if err := c.Mask(mask); err != nil {
		t.Fatal(err)
	}
	if err := c.Accept(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Mask(mask); !errors.Is(err, ErrStuck) {
		t.Fatalf("Mask after \"a\": %v, want ErrStuck", err)
	}
}

// TestMatcherStateRewind: SetState returns to a snapshot (a speculative
// pass rewinding), and refuses a state the machine never made.
func TestMatcherStateRewind(t *testing.T) {
	v := NewVocab([][]byte{[]byte("a"), []byte("b")}, nil)
	c := NewMatcher(mustMachine(t, `root ::= "a" "b" "a"`), v)
	s0 := c.State()
	for _, tok := range []int32{0, 1} {
		if err := c.Accept(tok); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.SetState(s0); err != nil {
		t.Fatal(err)
	}
	if err := c.Accept(1); err == nil {
		t.Fatal(`"b" accepted at the start after rewinding`)
	}
	if err := c.Accept(0); err != nil {
		t.Fatalf("rewound to the start, \"a\" refused: %v", err)
	}
	for _, bad := range []int32{-1, 1 << 20} {
		if err := c.SetState(bad); err == nil {
			t.Fatalf("SetState(%d) accepted", bad)
		}
	}
}

// TestMaskHitAllocs: a mask from the cache, and a step along a seen
// transition, allocate nothing (they run on every decode step).
func TestMaskHitAllocs(t *testing.T) {
	voc, tk := sharedVocab(t, "ggml-vocab-qwen2.gguf")
	toks := tk.Tokenize(benchDoc(t), false, false)
	m := mustMachine(t, benchSchema(t))
	mask := make([]uint32, voc.Words())
	// A first pass fills the cache and the transitions.
	c := NewMatcher(m, voc)
	for _, tok := range toks {
		if err := c.Mask(mask); err != nil {
			t.Fatal(err)
		}
		if err := c.Accept(tok); err != nil {
			t.Fatal(err)
		}
	}
	c = NewMatcher(m, voc)
	i := 0
	allocs := testing.AllocsPerRun(len(toks)-1, func() {
		if err := c.Mask(mask); err != nil {
			t.Fatal(err)
		}
		if err := c.Accept(toks[i]); err != nil {
			t.Fatal(err)
		}
		i++
	})
	if allocs != 0 {
		t.Fatalf("a cached mask and a seen step allocate %.1f times", allocs)
	}
}

// TestSample: every sampled string is a sentence (Accepts), and the
// samples of a small grammar reach every alternative.
func TestSample(t *testing.T) {
	grammars := map[string]string{
		"json":       llamaGrammar(t, "json.gbnf"),
		"arithmetic": llamaGrammar(t, "arithmetic.gbnf"),
		"list":       llamaGrammar(t, "list.gbnf"),
		"schema":     benchSchema(t),
		"nullable":   `root ::= ( [x]* )* "."`,
		"unicode":    `root ::= [^a-z]{1,4} ("é" | [\U0001F600-\U0001F64F])`,
	}
	for name, src := range grammars {
		m := mustMachine(t, src)
		rng := rand.New(rand.NewPCG(7, uint64(len(name))))
		ok := 0
		for i := 0; i < 200; i++ {
			s, found := m.Sample(rng, 400)
			if !found {
				continue
			}
			ok++
			if !m.Accepts(s) {
				t.Fatalf("%s: sample %q is not accepted", name, s)
			}
		}
		if ok < 150 {
			t.Fatalf("%s: only %d of 200 samples found", name, ok)
		}
	}
	m := mustMachine(t, `root ::= "a" | "b" [0-9] | "c"+ | ( "d" | "e" ) "!"`)
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	for i := 0; i < 400; i++ {
		s, ok := m.Sample(rng, 10)
		if !ok {
			t.Fatal("no sample of a grammar with short sentences")
		}
		switch {
		case strings.HasPrefix(s, "c") && len(s) > 1:
			seen["c+ (more than one)"] = true
		case s[0] == 'b':
			seen["b"+s[1:]] = true
		default:
			seen[s] = true
		}
	}
	for _, want := range []string{"a", "c", "c+ (more than one)", "d!", "e!", "b0", "b9"} {
		if !seen[want] {
			t.Errorf("no sample took the alternative %q (saw %v)", want, seen)
		}
	}
	if _, ok := m.Sample(rng, 0); ok {
		t.Error("a sample of at most 0 bytes from a grammar without the empty sentence")
	}
	if _, ok := mustMachine(t, `root ::= <[5]> "a"`).Sample(rng, 10); ok {
		t.Error("a sample of a grammar whose sentences need a token")
	}
}
