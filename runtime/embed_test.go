package runtime

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/synth"
	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/specs"
)

// embedTexts draft well and badly alike: short, long, repeated words,
// punctuation, one word.
var embedTexts = []string{
	"Hello world, this is a test.",
	"The quick brown fox jumps over the lazy dog near the river bank at dawn.",
	"embeddings",
	"A sentence about cats. Another about dogs; and a third, about birds and their songs in spring.",
	"hello hello hello hello",
}

// synthEmbedder writes a small embedding model: a BERT with the BGE
// WordPiece vocabulary, or a decoder whose file names a pooling type.
func synthEmbedder(t testing.TB, arch string, dt dtype.Type, pooling int) string {
	t.Helper()
	reg, err := specs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	o := synth.Options{Arch: arch, Dim: 128, Layers: 2, Heads: 4, FFN: 512, CtxTrain: 512, DType: dt, Seed: 11,
		Set: map[string]specs.Value{"pooling": specs.IntValue(int64(pooling))}}
	if arch == "bert" {
		v, err := llamacpp.SharedPath("vocab", "ggml-vocab-bert-bge.gguf")
		if err == nil {
			o.Vocab, err = synth.VocabFromGGUF(v)
		}
		if err != nil {
			t.Fatal(err)
		}
	} else {
		o.KVHeads, o.HeadDim, o.Tied = 2, 64, true
	}
	sp, err := synth.Build(reg, o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("%s-%v-pool%d.gguf", arch, dt, pooling))
	if err := sp.Write(path, o.Seed); err != nil {
		t.Fatal(err)
	}
	return path
}

// embedRef is llama.cpp's pooled embedding of each input, L2-normalized as
// its embedding example does (ours come normalized).
func embedRef(t *testing.T, model string, inputs [][]int32) [][]float32 {
	t.Helper()
	lib := llamacpp.Require(t)
	lm, err := lib.LoadModel(model)
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	total := 0
	for _, in := range inputs {
		total += len(in)
	}
	ctx, err := lm.NewEmbedContext(llamacpp.EmbedOptions{Pooling: llamacpp.PoolingUnspecified, Attention: llamacpp.AttentionUnspecified,
		NCtx: total, NSeqMax: len(inputs), NThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	ref, err := ctx.Embed(inputs)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range ref {
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		for i := range v {
			v[i] = float32(float64(v[i]) / math.Sqrt(s))
		}
	}
	return ref
}

// Every input's vector against llama.cpp's for the same file and tokens:
// cosine ≥ 0.9999 (the bar) and the largest element difference
// within a bound per dtype, logged.
func TestEmbedParityWithLlamaCpp(t *testing.T) {
	maxDelta := map[dtype.Type]float64{dtype.F32: 1e-3, dtype.F16: 2e-3, dtype.Q8_0: 1e-2, dtype.Q4_0: 2e-2}
	cases := []struct {
		arch    string
		dt      dtype.Type
		pooling int
	}{
		{"bert", dtype.F32, 1}, {"bert", dtype.F16, 1}, {"bert", dtype.Q8_0, 1}, {"bert", dtype.F16, 2},
		{"qwen3", dtype.F16, 3}, {"qwen3", dtype.Q4_0, 1},
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s %v pooling %d", c.arch, c.dt, c.pooling)
		t.Run(name, func(t *testing.T) {
			model := synthEmbedder(t, c.arch, c.dt, c.pooling)
			m := load(t, compile(t, model, "cpu-avx2:2"), model, 2)
			lib := llamacpp.Require(t)
			lm, err := lib.LoadModel(model)
			if err != nil {
				t.Fatal(err)
			}
			var inputs [][]int32
			for _, s := range embedTexts {
				ids := m.Tokenizer.Tokenize(s, true, false)
				ref, err := lm.Tokenize(s, true, false)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(ids, ref) {
					t.Fatalf("%q: tokens ours %v, llama.cpp %v", s, ids, ref)
				}
				inputs = append(inputs, ids)
			}
			lm.Close()
			got, err := m.Embed(bg, inputs)
			if err != nil {
				t.Fatal(err)
			}
			ref := embedRef(t, model, inputs)
			worstCos, worstD := 1.0, 0.0
			for i := range inputs {
				if len(got[i]) != len(ref[i]) {
					t.Fatalf("input %d: %d values, llama.cpp %d", i, len(got[i]), len(ref[i]))
				}
				cos := Cosine(got[i], ref[i])
				var d float64
				for j := range got[i] {
					d = max(d, math.Abs(float64(got[i][j])-float64(ref[i][j])))
				}
				worstCos, worstD = min(worstCos, cos), max(worstD, d)
				if cos < 0.9999 || d > maxDelta[c.dt] {
					t.Errorf("input %d (%d tokens): cosine %.7f (want ≥ 0.9999), max |Δ| %.3g (bound %.3g)", i, len(inputs[i]), cos, d, maxDelta[c.dt])
				}
			}
			t.Logf("%s: %d inputs, worst cosine %.8f, max |Δ| %.3g", name, len(inputs), worstCos, worstD)
		})
	}
}

// Packing inputs into one replay changes nothing: each input alone gives
// its vector from the batch, and the vectors are unit length.
func TestEmbedBatchingIsInvisible(t *testing.T) {
	model := synthEmbedder(t, "bert", dtype.F16, 1)
	m := load(t, compile(t, model, "cpu-avx2:2"), model, 2)
	var inputs [][]int32
	for _, s := range embedTexts {
		inputs = append(inputs, m.Tokenizer.Tokenize(s, true, false))
	}
	all, err := m.Embed(bg, inputs)
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range inputs {
		one, err := m.Embed(bg, [][]int32{in})
		if err != nil {
			t.Fatal(err)
		}
		var n, d float64
		for j, x := range one[0] {
			n += float64(x) * float64(x)
			d = max(d, math.Abs(float64(x-all[i][j])))
		}
		if math.Abs(math.Sqrt(n)-1) > 1e-5 {
			t.Errorf("input %d: |v| = %v, want 1", i, math.Sqrt(n))
		}
		if d > 1e-5 {
			t.Errorf("input %d: alone and packed differ by %.3g", i, d)
		}
	}
	// The inputs are different vectors.
	if c := Cosine(all[0], all[1]); c > 0.9999 {
		t.Errorf("two different inputs have cosine %v", c)
	}
}

// An encoder's plan embeds and refuses to generate, with errors that say
// so; bad inputs are refused before anything runs.
func TestEmbedRefusals(t *testing.T) {
	model := synthEmbedder(t, "bert", dtype.F16, 1)
	m := load(t, compile(t, model, "cpu-avx2:2"), model, 2)
	if _, err := m.NewSession(); !errors.Is(err, ErrNotGenerative) {
		t.Errorf("NewSession on an encoder: %v", err)
	}
	for name, in := range map[string][][]int32{
		"an empty input":          {{}},
		"a token past the vocab":  {{1, int32(m.Vocab())}},
		"a negative token":        {{-1}},
		"an input past the limit": {make([]int32, m.MaxEmbedTokens()+1)},
	} {
		if _, err := m.Embed(bg, in); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// A decoder compiled without pooling has no embedding program.
	plain := synthModel(t, "llama", dtype.F32)
	d := load(t, compile(t, plain, "cpu-avx2:2"), plain, 2)
	if _, err := d.Embed(bg, [][]int32{{1, 2}}); !errors.Is(err, ErrUnsupportedPlan) {
		t.Errorf("Embed on a plan without embedding programs: %v", err)
	}
}
