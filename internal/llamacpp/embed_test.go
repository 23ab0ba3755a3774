package llamacpp_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/akunu-dev/akunu/internal/llamacpp"
)

// embedCtx opens an embedding context on stories260K (a causal llama
// decoder with no pooling key of its own) and closes it with the test.
func embedCtx(t *testing.T, m *llamacpp.Model, o llamacpp.EmbedOptions) *llamacpp.Context {
	t.Helper()
	if o.NThreads == 0 {
		o.NThreads = 2
	}
	c, err := m.NewEmbedContext(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func embed(t *testing.T, c *llamacpp.Context, inputs ...[]int32) [][]float32 {
	t.Helper()
	vs, err := c.Embed(inputs)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != len(inputs) {
		t.Fatalf("%d inputs gave %d vectors", len(inputs), len(vs))
	}
	return vs
}

// relDiff is max|got-want| / max|want|.
func relDiff(got, want []float32) float64 {
	var d, scale float64
	for i := range want {
		d = max(d, math.Abs(float64(got[i])-float64(want[i])))
		scale = max(scale, math.Abs(float64(want[i])))
	}
	if scale == 0 {
		return d
	}
	return d / scale
}

func near(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	r := relDiff(got, want)
	t.Logf("%s: relative max abs difference %.3g", what, r)
	if r > tol {
		t.Errorf("%s: relative max abs difference %.3g > %g\n got  %v\n want %v", what, r, tol, got[:4], want[:4])
	}
}

func l2(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// storyTokens are BOS and the tokens of "Once upon a time": a is [BOS],
// abc three tokens from BOS on, and two other inputs to batch with them.
func storyTokens(t *testing.T, m *llamacpp.Model) (a, abc, other1, other2 []int32) {
	t.Helper()
	toks, err := m.Tokenize("Once upon a time", true, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(toks) < 4 {
		t.Fatalf("tokens %v: too few", toks)
	}
	return toks[:1], toks[:3], toks[1:4], toks[2:3]
}

func TestEmbedPooledVectorsAreFiniteAndNEmbdLong(t *testing.T) {
	_, m := stories(t)
	a, abc, o1, o2 := storyTokens(t, m)
	if m.NEmbdOut() != m.NEmbd() {
		t.Errorf("n_embd_out = %d, n_embd = %d", m.NEmbdOut(), m.NEmbd())
	}
	for _, p := range []struct {
		name    string
		pooling int
	}{{"mean", llamacpp.PoolingMean}, {"cls", llamacpp.PoolingCLS}, {"last", llamacpp.PoolingLast}} {
		t.Run(p.name+" pooling gives one finite vector an input", func(t *testing.T) {
			c := embedCtx(t, m, llamacpp.EmbedOptions{Pooling: p.pooling, Attention: llamacpp.AttentionUnspecified, NCtx: 64, NSeqMax: 4})
			if got := c.PoolingType(); got != p.pooling {
				t.Fatalf("pooling type in effect = %d, asked for %d", got, p.pooling)
			}
			for i, v := range embed(t, c, a, abc, o1, o2) {
				if len(v) != m.NEmbd() {
					t.Fatalf("input %d: %d values, n_embd is %d", i, len(v), m.NEmbd())
				}
				for j, x := range v {
					if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
						t.Fatalf("input %d: value %d is %g", i, j, x)
					}
				}
				if l2(v) == 0 {
					t.Fatalf("input %d: the zero vector", i)
				}
				t.Logf("input %d: |v| = %.4f (llama.cpp does not normalize)", i, l2(v))
			}
		})
	}
}

func TestEmbedPoolingPicksTheRowsItSays(t *testing.T) {
	_, m := stories(t)
	a, abc, o1, o2 := storyTokens(t, m)
	opts := func(pooling int) llamacpp.EmbedOptions {
		return llamacpp.EmbedOptions{Pooling: pooling, Attention: llamacpp.AttentionUnspecified, NCtx: 64, NSeqMax: 3}
	}
	mean := embedCtx(t, m, opts(llamacpp.PoolingMean))
	cls := embedCtx(t, m, opts(llamacpp.PoolingCLS))
	last := embedCtx(t, m, opts(llamacpp.PoolingLast))

	t.Run("causal CLS of [a b c] is the vector of [a], which sees only itself", func(t *testing.T) {
		v := embed(t, cls, abc, a)
		near(t, "CLS [a b c] vs [a]", v[0], v[1], 1e-5)
	})
	t.Run("LAST of [a b c] batched with two other inputs is LAST of [a b c] alone", func(t *testing.T) {
		alone := embed(t, last, abc)[0]
		batched := embed(t, last, o1, o2, abc)
		near(t, "LAST [a b c] in a batch of three", batched[2], alone, 1e-4)
		if relDiff(batched[0], alone) < 1e-3 {
			t.Error("another input's vector equals [a b c]'s: the sequences were not kept apart")
		}
	})
	t.Run("MEAN, CLS and LAST of one token agree", func(t *testing.T) {
		vm, vc, vl := embed(t, mean, a)[0], embed(t, cls, a)[0], embed(t, last, a)[0]
		near(t, "MEAN [a] vs CLS [a]", vm, vc, 1e-5)
		near(t, "LAST [a] vs CLS [a]", vl, vc, 1e-5)
	})
	t.Run("pooled vectors are the per-token rows of a NONE context, pooled", func(t *testing.T) {
		none := embedCtx(t, m, llamacpp.EmbedOptions{Pooling: llamacpp.PoolingNone, Attention: llamacpp.AttentionUnspecified, NCtx: 64})
		if err := none.Decode(abc, 0); err != nil {
			t.Fatal(err)
		}
		rows := make([][]float32, len(abc))
		avg := make([]float32, m.NEmbd())
		for i := range abc {
			if rows[i] = none.Embedding(i); len(rows[i]) != m.NEmbd() {
				t.Fatalf("token %d: %d values", i, len(rows[i]))
			}
			for j, x := range rows[i] {
				avg[j] += x / float32(len(abc))
			}
		}
		near(t, "CLS [a b c] vs row 0", embed(t, cls, abc)[0], rows[0], 1e-5)
		near(t, "LAST [a b c] vs row 2", embed(t, last, abc)[0], rows[2], 1e-5)
		near(t, "MEAN [a b c] vs the rows' mean", embed(t, mean, abc)[0], avg, 1e-5)
	})
}

func TestEmbedGroupsInputsBeyondNSeqMaxAndUbatch(t *testing.T) {
	_, m := stories(t)
	a, abc, o1, o2 := storyTokens(t, m)
	inputs := [][]int32{abc, o1, a, o2, abc}
	ref := embed(t, embedCtx(t, m, llamacpp.EmbedOptions{Pooling: llamacpp.PoolingMean, NCtx: 64, NSeqMax: len(inputs)}), inputs...)
	for _, c := range []struct {
		name string
		o    llamacpp.EmbedOptions
	}{
		{"one input a decode", llamacpp.EmbedOptions{Pooling: llamacpp.PoolingMean, NCtx: 64, NSeqMax: 1}},
		{"two inputs a decode", llamacpp.EmbedOptions{Pooling: llamacpp.PoolingMean, NCtx: 64, NSeqMax: 2}},
		{"as many inputs as 4 tokens hold a decode", llamacpp.EmbedOptions{Pooling: llamacpp.PoolingMean, NCtx: 4, NSeqMax: 4}},
		{"an n_ctx that is no multiple of n_seq_max", llamacpp.EmbedOptions{Pooling: llamacpp.PoolingMean, NCtx: 7, NSeqMax: 3}},
	} {
		t.Run(c.name+" gives the vectors of one decode of all", func(t *testing.T) {
			ctx := embedCtx(t, m, c.o)
			got := embed(t, ctx, inputs...)
			for i := range inputs {
				near(t, fmt.Sprintf("input %d", i), got[i], ref[i], 1e-4)
			}
		})
	}
	near(t, "the same input twice in one decode", ref[4], ref[0], 1e-4)
}

func TestEmbedAttentionOptionReachesTheModel(t *testing.T) {
	_, m := stories(t)
	a, abc, _, _ := storyTokens(t, m)
	c := embedCtx(t, m, llamacpp.EmbedOptions{Pooling: llamacpp.PoolingCLS, Attention: llamacpp.AttentionNonCausal, NCtx: 16})
	v := embed(t, c, abc, a)
	if r := relDiff(v[0], v[1]); r < 1e-3 {
		t.Errorf("non-causal CLS of [a b c] equals [a]'s (relative difference %.3g): the first token did not see the others", r)
	}
}

func TestEmbedErrorsSayWhy(t *testing.T) {
	_, m := stories(t)
	a, abc, _, _ := storyTokens(t, m)

	t.Run("the model's own pooling for stories260K is NONE, and Embed says so", func(t *testing.T) {
		c := embedCtx(t, m, llamacpp.EmbedOptions{Pooling: llamacpp.PoolingUnspecified, Attention: llamacpp.AttentionUnspecified, NCtx: 16})
		if got := c.PoolingType(); got != llamacpp.PoolingNone {
			t.Fatalf("pooling type in effect = %d, want NONE", got)
		}
		if _, err := c.Embed([][]int32{a}); !errors.Is(err, llamacpp.ErrPoolingNone) {
			t.Errorf("Embed with pooling NONE: %v", err)
		}
	})
	t.Run("embeddings switched off give ErrPoolingNone", func(t *testing.T) {
		c := embedCtx(t, m, llamacpp.EmbedOptions{Pooling: llamacpp.PoolingMean, NCtx: 16})
		c.SetEmbeddings(false)
		if _, err := c.Embed([][]int32{a}); !errors.Is(err, llamacpp.ErrPoolingNone) {
			t.Errorf("Embed with embeddings off: %v", err)
		}
		c.SetEmbeddings(true)
		embed(t, c, a)
	})
	t.Run("an empty input or one longer than a ubatch is refused", func(t *testing.T) {
		c := embedCtx(t, m, llamacpp.EmbedOptions{Pooling: llamacpp.PoolingMean, NCtx: 2})
		if c.NUbatch() != 2 {
			t.Fatalf("n_ubatch = %d, asked for 2", c.NUbatch())
		}
		for _, in := range [][]int32{{}, abc} {
			if _, err := c.Embed([][]int32{a, in}); err == nil {
				t.Errorf("input of %d tokens was accepted", len(in))
			} else {
				t.Log(err)
			}
		}
	})
	t.Run("a token outside the vocabulary is a decode error", func(t *testing.T) {
		c := embedCtx(t, m, llamacpp.EmbedOptions{Pooling: llamacpp.PoolingMean, NCtx: 16})
		if _, err := c.Embed([][]int32{{int32(m.NVocab())}}); err == nil {
			t.Error("an out-of-vocabulary token was accepted")
		} else {
			t.Log(err)
		}
	})
}
