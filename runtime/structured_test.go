package runtime

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/synth"
	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/internal/schemacheck"
	"github.com/akunu-dev/akunu/runtime/grammar"
	"github.com/akunu-dev/akunu/runtime/grammar/jsonschema"
	"github.com/akunu-dev/akunu/specs"
)

// minSchemas is how many schemas testdata/schemas held when the tests
// below were written: fewer means the corpus lost files, not that the
// tests pass.
const minSchemas = 24

type corpusSchema struct {
	name string
	raw  []byte
	g    *grammar.Grammar
}

// schemaCorpus reads testdata/schemas and converts every schema.
func schemaCorpus(t *testing.T) []corpusSchema {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "schemas", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < minSchemas {
		t.Fatalf("testdata/schemas holds %d schemas, want at least %d", len(paths), minSchemas)
	}
	var out []corpusSchema
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		g, err := jsonschema.Grammar(raw, jsonschema.Options{})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, corpusSchema{strings.TrimSuffix(filepath.Base(p), ".json"), raw, g})
	}
	return out
}

// TestSchemaCorpusLanguage: random sentences of each corpus schema's
// grammar are JSON that validates against the schema (an independent
// validator), and documents that break the schema are refused by the
// grammar. This judges the converter on the very schemas the generation
// tests below use, so a generation failure points at decoding.
func TestSchemaCorpusLanguage(t *testing.T) {
	for _, s := range schemaCorpus(t) {
		t.Run(s.name, func(t *testing.T) {
			m, err := grammar.Compile(s.g)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			found := 0
			for i := 0; i < 200; i++ {
				text, ok := m.Sample(rng, 400)
				if !ok {
					continue
				}
				found++
				if err := schemacheck.Validate(s.raw, []byte(text)); err != nil {
					t.Fatalf("sentence %q of the grammar: %v", text, err)
				}
			}
			if found < 100 {
				t.Fatalf("only %d of 200 samples found a sentence within 400 bytes", found)
			}
			for _, bad := range []string{`{`, `"unterminated`, `[1,]`, `{"zz-no-such-key": 1}`, `{} {}`} {
				if m.Accepts(bad) && schemacheck.Validate(s.raw, []byte(bad)) != nil {
					t.Fatalf("the grammar accepts %q, which does not validate", bad)
				}
			}
		})
	}
}

// structuredModels are the models the generation test decodes with:
// stories260K (a real llama, 512 tokens) and a random qwen3 with Qwen2's
// real 151k-token vocabulary, whose multi-byte tokens span JSON's
// punctuation and quotes the way a real model's do.
func structuredModels(t *testing.T) map[string]*Model {
	return map[string]*Model{
		"stories260K": storiesModel(t),
		"qwen3-qwen2-vocab": func() *Model {
			model := synthQwen2Vocab(t)
			return load(t, compile(t, model, "cpu-avx2:2"), model, 2)
		}(),
	}
}

// synthQwen2Vocab is a tiny random qwen3 with the Qwen2 tokenizer.
func synthQwen2Vocab(t *testing.T) string {
	t.Helper()
	vp, err := llamacpp.SharedPath("vocab", "ggml-vocab-qwen2.gguf")
	if err == nil {
		_, err = os.Stat(vp)
	}
	if err != nil {
		proof.Missing(t, "the Qwen2 vocabulary (../shared/vocab)", err.Error())
	}
	v, err := synth.VocabFromGGUF(vp)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := specs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	o := synth.Options{Arch: "qwen3", Dim: 64, Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 32, FFN: 128,
		CtxTrain: 1024, DType: dtype.Q8_0, Tied: true, Vocab: v, Seed: 3}
	sp, err := synth.Build(reg, o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "qwen3-qwen2vocab.gguf")
	if err := sp.Write(path, o.Seed); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSchemaCorpusGeneration: under every schema of the corpus, greedy
// and sampled generation (several seeds) on stories260K and on a random
// model with a 151k-token vocabulary ends with an end token where the
// grammar ends, and the output parses as JSON and validates against the
// schema.
func TestSchemaCorpusGeneration(t *testing.T) {
	corpus := schemaCorpus(t)
	start := time.Now()
	for name, m := range structuredModels(t) {
		prompt := m.Tokenizer.Tokenize("Once upon a time", true, false)
		for _, s := range corpus {
			x, err := m.GrammarIndex(s.g)
			if err != nil {
				t.Fatalf("%s %s: %v", name, s.name, err)
			}
			for seed := uint32(0); seed < 3; seed++ {
				smp := Sampling{Temperature: 1.2, TopK: 40, Seed: seed}
				if seed == 0 {
					smp = Sampling{} // greedy
				}
				c := NewConstraint(x)
				r := genNew(t, m, prompt, GenerateOptions{MaxTokens: 400, Sampling: smp, Processors: []Processor{c}})
				where := name + " " + s.name + " seed " + string(rune('0'+seed))
				if r.Stop != StopEOS {
					t.Fatalf("%s: stopped by %s after %q, want the end token where the grammar ends", where, r.Stop, r.Text)
				}
				if testing.Verbose() {
					t.Logf("%s: %d tokens: %s", where, len(r.Tokens), r.Text)
				}
				if !json.Valid([]byte(r.Text)) {
					t.Fatalf("%s: %q is not JSON", where, r.Text)
				}
				if err := schemacheck.Validate(s.raw, []byte(r.Text)); err != nil {
					t.Fatalf("%s: %q: %v", where, r.Text, err)
				}
			}
		}
	}
	t.Logf("%d schemas × 2 models × 3 runs in %v", len(corpus), time.Since(start).Round(time.Millisecond))
}

// TestBenchConstrained: the constrained bench times both runs of each
// pair and counts the constrained run's tokens; a grammar too short for a
// rate (the end token at once) is an error, not a zero.
func TestBenchConstrained(t *testing.T) {
	m := storiesModel(t)
	x, err := m.GrammarIndex(mustParse(t, `root ::= "[" [0-9]{1,3} ("," [0-9]{1,3}){20,30} "]"`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.BenchConstrained(8, 32, 2, x, Sampling{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Free) != 2 || len(r.Constrained) != 2 || len(r.Tokens) != 2 {
		t.Fatalf("%+v: want 2 runs of each", r)
	}
	for i := range r.Free {
		if r.Free[i] <= 0 || r.Constrained[i] <= 0 || r.Tokens[i] < 2 || r.Tokens[i] > 33 {
			t.Fatalf("run %d: free %.1f, constrained %.1f t/s, %d tokens", i, r.Free[i], r.Constrained[i], r.Tokens[i])
		}
	}
	short, err := m.GrammarIndex(mustParse(t, `root ::= ""`)) // only the end token
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.BenchConstrained(8, 32, 1, short, Sampling{}, nil); err == nil || !strings.Contains(err.Error(), "a rate needs 2") {
		t.Fatalf("a one-token grammar: err %v", err)
	}
}
