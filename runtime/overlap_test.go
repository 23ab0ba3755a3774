package runtime

import (
	"slices"
	"testing"
)

// longPrompt is n tokens of a repeated story (BOS first).
func longPrompt(m *Model, n int) []int32 {
	p := m.Tokenizer.Tokenize("Once upon a time there was a little girl named Lily. She loved to play outside in the park.", true, false)
	for len(p) < n {
		p = append(p, p[1:]...)
	}
	return p[:n]
}

// withEOG makes id an end-of-generation token of m's tokenizer until the
// test ends, as a plan's EOG list would (stories260K rarely ends a story).
func withEOG(t *testing.T, m *Model, id int32) {
	t.Helper()
	pt := m.Plan.Model.Tokenizer
	pt.EOG = append(slices.Clone(pt.EOG), id)
	saved := m.Tokenizer
	t.Cleanup(func() { m.Tokenizer = saved })
	var err error
	if m.Tokenizer, err = Tokenizer(&pt); err != nil {
		t.Fatal(err)
	}
}

// The overlapped loop (chain k+1 committed before chain k is read, the
// hand-off copied on the device) gives what one waited chain at a time
// gives: the same tokens, stop, position and history, and a second turn
// from either session continues identically (the KV entries a dropped
// chain wrote past pos are never read).
func TestOverlappedEqualsSerial(t *testing.T) {
	m := storiesModel(t)
	p := m.Tokenizer.Tokenize("Once upon a time", true, false)
	knobs := Sampling{Temperature: 0.9, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 42}
	chunk := m.ChainSteps()
	greedy := genNew(t, m, p, GenerateOptions{MaxTokens: 3*chunk + 10, IgnoreEOS: true}).Tokens
	for _, tc := range []struct {
		name   string
		prompt []int32
		o      GenerateOptions
		eog    int // > 0: greedy token eog-1 is made an EOG token
		stop   Stop
	}{
		{"greedy over several chain boundaries", p, GenerateOptions{MaxTokens: 4*chunk + 2, IgnoreEOS: true}, 0, StopLimit},
		{"seeded sampling over several chain boundaries", p, GenerateOptions{MaxTokens: 4*chunk + 2, IgnoreEOS: true, Sampling: knobs}, 0, StopLimit},
		{"a limit that is not a multiple of the chain", p, GenerateOptions{MaxTokens: 2*chunk + 5, IgnoreEOS: true}, 0, StopLimit},
		{"a limit of one chain exactly", p, GenerateOptions{MaxTokens: chunk + 1, IgnoreEOS: true}, 0, StopLimit},
		{"a limit of two tokens", p, GenerateOptions{MaxTokens: 2, IgnoreEOS: true}, 0, StopLimit},
		{"EOS inside the second chain", p, GenerateOptions{MaxTokens: 6 * chunk}, chunk + 6, StopEOS},
		{"EOS inside the third chain while sampling", p, GenerateOptions{MaxTokens: 6 * chunk, Sampling: knobs}, 2*chunk + 3, StopEOS},
		{"the caller stopping inside a chain", p, GenerateOptions{IgnoreEOS: true, OnToken: stopAfter(chunk + 9)}, 0, StopCaller},
		{"the context filling inside a chain", longPrompt(m, m.Ctx()-2*chunk-5), GenerateOptions{IgnoreEOS: true}, 0, StopContext},
		{"the context filling before one chain is full", longPrompt(m, m.Ctx()-5), GenerateOptions{IgnoreEOS: true, Sampling: knobs}, 0, StopContext},
		{"the limit and the context at once", longPrompt(m, m.Ctx()-chunk-3), GenerateOptions{MaxTokens: chunk + 4, IgnoreEOS: true}, 0, StopLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.eog > 0 {
				o := tc.o
				o.IgnoreEOS, o.MaxTokens = true, tc.eog
				withEOG(t, m, genNew(t, m, tc.prompt, o).Tokens[tc.eog-1])
			}
			serial := sess(t, m)
			serial.serial = true
			over := sess(t, m)
			o := tc.o
			if o.OnToken != nil {
				o.OnToken = stopAfter(chunk + 9)
			}
			want := gen(t, serial, tc.prompt, o)
			if o.OnToken != nil {
				o.OnToken = stopAfter(chunk + 9)
			}
			got := gen(t, over, tc.prompt, o)
			if !slices.Equal(got.Tokens, want.Tokens) || got.Stop != want.Stop {
				t.Fatalf("overlapped %s %v\nserial     %s %v", got.Stop, got.Tokens, want.Stop, want.Tokens)
			}
			if got.Stop != tc.stop {
				t.Fatalf("stop %s, want %s", got.Stop, tc.stop)
			}
			if tc.eog > 0 && len(got.Tokens) > tc.eog {
				t.Fatalf("%d tokens past an EOG at %d", len(got.Tokens), tc.eog)
			}
			if over.Pos() != serial.Pos() || !slices.Equal(over.History(), serial.History()) || over.Pos()+1 != len(over.History()) {
				t.Fatalf("pos %d history %d; serial pos %d history %d", over.Pos(), len(over.History()), serial.Pos(), len(serial.History()))
			}
			next := m.Tokenizer.Tokenize(" The end", false, false)
			if over.Pos()+len(next)+1 > m.Ctx() { // no room for a second turn
				if over.Pos() != m.Ctx() {
					t.Fatalf("stopped with the context nearly full, at %d of %d", over.Pos(), m.Ctx())
				}
				return
			}
			o2 := GenerateOptions{MaxTokens: chunk + 3, IgnoreEOS: true}
			a, b := gen(t, over, next, o2), gen(t, serial, next, o2)
			if !slices.Equal(a.Tokens, b.Tokens) {
				t.Fatalf("second turn: overlapped %v\nserial %v", a.Tokens, b.Tokens)
			}
			fresh := genNew(t, m, slices.Concat(tc.prompt, got.Tokens, next), o2)
			if !slices.Equal(a.Tokens, fresh.Tokens) {
				t.Fatalf("second turn %v\none prompt %v", a.Tokens, fresh.Tokens)
			}
		})
	}
	t.Run("the greedy reference is what a long run starts with", func(t *testing.T) {
		got := genNew(t, m, p, GenerateOptions{MaxTokens: 50, IgnoreEOS: true}).Tokens
		if !slices.Equal(got, greedy[:50]) {
			t.Fatalf("%v\n%v", got, greedy[:50])
		}
	})
}

// stopAfter is an OnToken that accepts n tokens and stops at the nth.
func stopAfter(n int) func(int32) bool {
	seen := 0
	return func(int32) bool { seen++; return seen < n }
}

// A pipelined generation allocates per call, not per token: 5 chains more
// cost no allocation more.
func TestOverlappedDecodeDoesNotAllocatePerToken(t *testing.T) {
	m := storiesModel(t)
	p := m.Tokenizer.Tokenize("Once upon a time", true, false)
	chunk := m.ChainSteps()
	for _, smp := range []Sampling{{}, {Temperature: 0.9, TopK: 40, Seed: 1}} {
		s := sess(t, m)
		allocs := func(n int) float64 {
			return testing.AllocsPerRun(5, func() {
				s.Reset()
				if _, err := s.Generate(bg, p, GenerateOptions{MaxTokens: n, IgnoreEOS: true, Sampling: smp}); err != nil {
					t.Fatal(err)
				}
			})
		}
		short, long := allocs(2*chunk+3), allocs(7*chunk+3)
		if long != short {
			t.Fatalf("sampling %+v: %v allocations for %d tokens, %v for %d", smp, long, 7*chunk+3, short, 2*chunk+3)
		}
	}
}
