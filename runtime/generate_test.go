package runtime

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// The text stream releases exactly the text, whatever the pieces, and
// never a stop string or a piece of one that later text completes.
func TestTextStreamHoldsBackOnlyWhatCouldBeAStop(t *testing.T) {
	m := storiesModel(t)
	text := "One day, a girl saw a big dog. The dog was happy. THE END. She went home."
	for _, tc := range []struct {
		stops []string
		want  string
		stop  string
	}{
		{[]string{"THE END"}, "One day, a girl saw a big dog. The dog was happy. ", "THE END"},
		{[]string{"dog.", "girl"}, "One day, a ", "girl"},
		{[]string{"xyz"}, text, ""},
		{[]string{"home.!"}, text, ""}, // a stop that only starts at the end: flushed at the end
	} {
		// Every split of the text into three pieces.
		for i := 0; i <= len(text); i += 3 {
			for j := i; j <= len(text); j += 5 {
				var got strings.Builder
				ts := newTextStream(m.Tokenizer, tc.stops, func(s string) bool {
					for _, st := range tc.stops {
						if strings.Contains(s, st) {
							t.Fatalf("a streamed piece %q holds the stop %q", s, st)
						}
					}
					got.WriteString(s)
					return true
				})
				found := ""
				for _, piece := range []string{text[:i], text[i:j], text[j:]} {
					if s, _ := ts.push(piece, false); s != "" && found == "" {
						found = s
						break
					}
				}
				if found == "" {
					ts.push("", true)
				}
				if got.String() != tc.want || found != tc.stop || ts.out.String() != tc.want {
					t.Fatalf("stops %q, split %d/%d: streamed %q (stop %q), want %q (stop %q)", tc.stops, i, j, got.String(), found, tc.want, tc.stop)
				}
			}
		}
	}
}

// A stop string ends a real generation: the result's text stops before
// it, the stream never shows it, and the reason is StopString.
func TestStopStringsEndAGeneration(t *testing.T) {
	m := storiesModel(t)
	p := m.Tokenizer.Tokenize("Once upon a time", true, false)
	full := genNew(t, m, p, GenerateOptions{MaxTokens: 60, IgnoreEOS: true})
	// A stop string that spans tokens: some characters of the text's middle.
	mid := len(full.Text) / 2
	stop := full.Text[mid : mid+5]
	var streamed strings.Builder
	r := genNew(t, m, p, GenerateOptions{MaxTokens: 60, IgnoreEOS: true, Stop: []string{stop},
		OnText: func(s string) bool { streamed.WriteString(s); return true }})
	want := full.Text[:strings.Index(full.Text, stop)]
	if r.Stop != StopString || r.StopString != stop || r.Text != want || streamed.String() != want {
		t.Fatalf("stop %q: %s %q, text %q, streamed %q; want %q", stop, r.Stop, r.StopString, r.Text, streamed.String(), want)
	}
	if !slices.Equal(r.Tokens, full.Tokens[:len(r.Tokens)]) {
		t.Fatalf("the stopped generation's tokens are not the full one's prefix")
	}
	// Without stop strings, the streamed text is the result's text.
	streamed.Reset()
	r = genNew(t, m, p, GenerateOptions{MaxTokens: 40, IgnoreEOS: true, OnText: func(s string) bool { streamed.WriteString(s); return true }})
	if streamed.String() != r.Text || r.Text != full.Text[:len(r.Text)] {
		t.Fatalf("streamed %q, text %q", streamed.String(), r.Text)
	}
}

// force is a processor that allows one token only.
type force int32

func (f force) Process(l []float32, _ []int32) {
	for i := range l {
		if int32(i) != int32(f) {
			l[i] = float32(math.Inf(-1))
		}
	}
}

// counting counts the tokens it is told of.
type counting struct{ n int }

func (c *counting) Process([]float32, []int32) {}
func (c *counting) Accept(int32)               { c.n++ }

// Processors change the token on every path: greedy, sampled, the first
// token after the prompt; an Acceptor is told every token.
func TestProcessorsChangeTheChosenToken(t *testing.T) {
	m := storiesModel(t)
	p := m.Tokenizer.Tokenize("Once upon a time", true, false)
	greedy := genNew(t, m, p, GenerateOptions{MaxTokens: 12, IgnoreEOS: true})
	for _, smp := range []Sampling{{}, {Temperature: 0.9, TopK: 40, Seed: 5}} {
		c := &counting{}
		r := genNew(t, m, p, GenerateOptions{MaxTokens: 12, IgnoreEOS: true, Sampling: smp, Processors: []Processor{force(77), c}})
		for i, tok := range r.Tokens {
			if tok != 77 {
				t.Fatalf("sampling %+v: token %d is %d, the processor allows 77 only", smp, i, tok)
			}
		}
		if c.n != len(r.Tokens) {
			t.Fatalf("the acceptor was told %d of %d tokens", c.n, len(r.Tokens))
		}
	}
	// A bias that bans the greedy first token moves it.
	r := genNew(t, m, p, GenerateOptions{MaxTokens: 4, IgnoreEOS: true, Processors: []Processor{LogitBias{greedy.Tokens[0]: float32(math.Inf(-1))}}})
	if r.Tokens[0] == greedy.Tokens[0] {
		t.Fatalf("a banned token was chosen")
	}
	// Frequency and presence penalties change greedy output; zero
	// penalties change nothing.
	long := genNew(t, m, p, GenerateOptions{MaxTokens: 80, IgnoreEOS: true})
	pen := genNew(t, m, p, GenerateOptions{MaxTokens: 80, IgnoreEOS: true, Processors: []Processor{&Penalties{Frequency: 2, Presence: 2}}})
	if slices.Equal(pen.Tokens, long.Tokens) {
		t.Fatalf("penalties of 2 left the greedy tokens")
	}
	none := genNew(t, m, p, GenerateOptions{MaxTokens: 12, IgnoreEOS: true, Processors: []Processor{&Penalties{}}})
	if !slices.Equal(none.Tokens, greedy.Tokens) {
		t.Fatalf("zero penalties changed the tokens: %v, greedy %v", none.Tokens, greedy.Tokens)
	}
}

// The penalties are llama.cpp's: repeat divides positive logits and
// multiplies negative ones, then frequency and presence subtract, once per
// distinct token of the window.
func TestPenaltiesMath(t *testing.T) {
	l := []float32{2, -2, 3, 4}
	(&Penalties{Repeat: 2, Frequency: 0.5, Presence: 0.25, LastN: 3}).Process(l, []int32{3, 0, 1, 1})
	want := []float32{2/2.0 - 0.5 - 0.25, -2*2.0 - 1 - 0.25, 3, 4}
	if !slices.Equal(l, want) {
		t.Fatalf("got %v, want %v", l, want)
	}
}

// Cancelling the context ends the generation where it is, with what it
// made; the session carries on.
func TestCancellationEndsTheAnswerNotTheSession(t *testing.T) {
	m := storiesModel(t)
	p := m.Tokenizer.Tokenize("Once upon a time", true, false)
	for _, o := range []GenerateOptions{{IgnoreEOS: true}, {IgnoreEOS: true, TopLogits: 1}, {IgnoreEOS: true, Sampling: Sampling{Temperature: 1, Seed: 2}}} {
		s := sess(t, m)
		ctx, cancel := context.WithCancel(bg)
		n := 0
		o.OnToken = func(int32) bool {
			if n++; n == 7 {
				cancel()
			}
			return true
		}
		r, err := s.Generate(ctx, p, o)
		cancel()
		if err != nil || r.Stop != StopCancelled || len(r.Tokens) < 7 || len(r.Tokens) > 7+m.ChainSteps()*2 {
			t.Fatalf("%v: stop %s after %d tokens (err %v)", o.Sampling, r.Stop, len(r.Tokens), err)
		}
		if s.Pos() != len(s.History())-1 {
			t.Fatalf("after a cancel the cache holds %d of %d tokens", s.Pos(), len(s.History()))
		}
		next := gen(t, s, m.Tokenizer.Tokenize(" The end", false, false), GenerateOptions{MaxTokens: 5, IgnoreEOS: true})
		want := genNew(t, m, slices.Concat(p, r.Tokens, m.Tokenizer.Tokenize(" The end", false, false)), GenerateOptions{MaxTokens: 5, IgnoreEOS: true})
		if !slices.Equal(next.Tokens, want.Tokens) {
			t.Fatalf("the turn after a cancel %v, one prompt %v", next.Tokens, want.Tokens)
		}
	}
	// A context cancelled before the prompt is fed leaves the session as
	// it was.
	s := sess(t, m)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	r, err := s.Generate(ctx, p, GenerateOptions{MaxTokens: 5})
	if err != nil || r.Stop != StopCancelled || len(s.History()) != 0 || s.Pos() != 0 {
		t.Fatalf("a cancelled prompt: %v %v, history %d, pos %d", r, err, len(s.History()), s.Pos())
	}
}

// An unseeded sampled generation reports the seed it drew, which then
// reproduces it.
func TestUnseededSamplingReportsItsSeed(t *testing.T) {
	m := storiesModel(t)
	p := m.Tokenizer.Tokenize("Once upon a time", true, false)
	knobs := Sampling{Temperature: 1, TopK: 40, Unseeded: true}
	a := genNew(t, m, p, GenerateOptions{MaxTokens: 30, IgnoreEOS: true, Sampling: knobs})
	b := genNew(t, m, p, GenerateOptions{MaxTokens: 30, IgnoreEOS: true, Sampling: knobs})
	if a.Seed == b.Seed {
		t.Fatalf("two unseeded runs drew the same seed %d", a.Seed)
	}
	knobs.Unseeded, knobs.Seed = false, a.Seed
	if r := genNew(t, m, p, GenerateOptions{MaxTokens: 30, IgnoreEOS: true, Sampling: knobs}); !slices.Equal(r.Tokens, a.Tokens) {
		t.Fatalf("seed %d replayed %v, first %v", a.Seed, r.Tokens, a.Tokens)
	}
}

// While a caller streams, chains stay as short as the latency budget
// asks: with a budget shorter than one step, every chain is one token, so
// each token arrives a step after the last (never two in a burst), and the
// tokens are those of an unstreamed run.
func TestStreamingBoundsTheGapBetweenTokens(t *testing.T) {
	m := storiesModel(t)
	p := m.Tokenizer.Tokenize("Once upon a time", true, false)
	want := genNew(t, m, p, GenerateOptions{MaxTokens: 100, IgnoreEOS: true})
	var at []time.Time
	r := genNew(t, m, p, GenerateOptions{MaxTokens: 100, IgnoreEOS: true, Latency: time.Nanosecond,
		OnToken: func(int32) bool { at = append(at, time.Now()); return true }})
	if !slices.Equal(r.Tokens, want.Tokens) {
		t.Fatalf("streamed %v, unstreamed %v", r.Tokens, want.Tokens)
	}
	// A stories260K step takes tens of microseconds; two tokens of one
	// chain arrive well under one apart. (The last token was computed
	// while the one before it was read: the pipeline drains at the end.)
	for i := 1; i < len(at)-1; i++ {
		if d := at[i].Sub(at[i-1]); d < 2*time.Microsecond {
			t.Fatalf("tokens %d and %d arrived %v apart: a chain of more than one token while the budget allows one", i-1, i, d)
		}
	}
	// Unstreamed, chains are the chunk long: tokens come in bursts.
	pc := pacer{enabled: true, budget: 10 * time.Millisecond, perTok: 3 * time.Millisecond}
	if got := pc.limit(64); got != 3 {
		t.Fatalf("a 10 ms budget at 3 ms a token allows %d", got)
	}
	pc.perTok = 30 * time.Millisecond
	if got := pc.limit(64); got != 1 {
		t.Fatalf("a step longer than the budget allows %d", got)
	}
	pc.perTok = time.Microsecond
	if got := pc.limit(64); got != 64 {
		t.Fatalf("a budget of many steps allows %d, the chunk is 64", got)
	}
	if got := (&pacer{}).limit(64); got != 64 {
		t.Fatalf("without streaming a chain is the chunk: %d", got)
	}
}

// Log-probabilities are those of the distribution the token came from:
// the chosen token's, and the top ones', best first, which sum to at most
// one and whose best is the greedy token.
func TestLogProbs(t *testing.T) {
	m := storiesModel(t)
	p := m.Tokenizer.Tokenize("Once upon a time", true, false)
	r := genNew(t, m, p, GenerateOptions{MaxTokens: 10, IgnoreEOS: true, LogProbs: true, TopLogProbs: 5})
	if len(r.LogProbs) != len(r.Tokens) {
		t.Fatalf("%d log-probabilities for %d tokens", len(r.LogProbs), len(r.Tokens))
	}
	for i, lp := range r.LogProbs {
		if lp.ID != r.Tokens[i] || lp.LogProb > 0 || len(lp.Top) != 5 || lp.Top[0].ID != r.Tokens[i] || lp.Top[0].LogProb != lp.LogProb {
			t.Fatalf("step %d: %+v, token %d", i, lp, r.Tokens[i])
		}
		var sum float64
		for j, tl := range lp.Top {
			sum += math.Exp(float64(tl.LogProb))
			if j > 0 && tl.LogProb > lp.Top[j-1].LogProb {
				t.Fatalf("step %d: top not in order: %+v", i, lp.Top)
			}
		}
		if sum > 1+1e-5 {
			t.Fatalf("step %d: the top five's probabilities sum to %g", i, sum)
		}
	}
	// The same tokens as without them.
	if plain := genNew(t, m, p, GenerateOptions{MaxTokens: 10, IgnoreEOS: true}); !slices.Equal(plain.Tokens, r.Tokens) {
		t.Fatalf("with log-probabilities %v, without %v", r.Tokens, plain.Tokens)
	}
}

// A Batcher's generation whose context is cancelled ends alone; one
// cancelled before its prompt was fed leaves its session as it was.
func TestBatcherCancelsOneGeneration(t *testing.T) {
	m := storiesModel(t)
	b := m.NewBatcher()
	ctxA, cancelA := context.WithCancel(bg)
	a, err := b.Add(ctxA, sess(t, m), m.Tokenizer.Tokenize("Once upon a time", true, false), GenerateOptions{MaxTokens: 50, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	keep, err := b.Add(bg, sess(t, m), m.Tokenizer.Tokenize("The dog", true, false), GenerateOptions{MaxTokens: 20, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := b.Step(bg); err != nil {
			t.Fatal(err)
		}
	}
	cancelA()
	if err := b.Run(bg); err != nil {
		t.Fatal(err)
	}
	if a.Result().Stop != StopCancelled || len(a.Result().Tokens) != 3 || keep.Result().Stop != StopLimit || len(keep.Result().Tokens) != 20 {
		t.Fatalf("cancelled: %s after %d; kept: %s after %d", a.Result().Stop, len(a.Result().Tokens), keep.Result().Stop, len(keep.Result().Tokens))
	}
	s := sess(t, m)
	ctx, cancel := context.WithCancel(bg)
	g, err := b.Add(ctx, s, longPrompt(m, 900), GenerateOptions{MaxTokens: 5}) // two chunks of prompt
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Step(bg); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := b.Run(bg); err != nil {
		t.Fatal(err)
	}
	if g.Result().Stop != StopCancelled || len(s.History()) != 0 || s.Pos() != 0 {
		t.Fatalf("a prompt cancelled half fed: %s, history %d, pos %d", g.Result().Stop, len(s.History()), s.Pos())
	}
}
