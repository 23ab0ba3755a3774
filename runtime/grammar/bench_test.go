package grammar

import (
	"os"
	"slices"
	"testing"
	"time"
)

// benchSchema is the GBNF llama.cpp's JSON-schema converter (here
// jsonschema.ToGBNF, which writes the same) makes of an object of six
// properties of mixed types: testdata/bench-schema.json.
func benchSchema(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("testdata/bench-schema.gbnf")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// benchDoc is the document the benchmark replays (valid under
// benchSchema), also what internal/grammarpeer replays in llama.cpp.
func benchDoc(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("testdata/bench-doc.json")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// maskTimes replays benchDoc token by token under the schema grammar with
// a fresh machine (a cold cache), timing each mask.
func maskTimes(b testing.TB) (times []time.Duration, hits int) {
	voc, tk := sharedVocab(b, "ggml-vocab-qwen2.gguf")
	toks := tk.Tokenize(benchDoc(b), false, false)
	m := mustMachine(b, benchSchema(b))
	x := m.index(voc)
	c := NewMatcher(m, voc)
	mask := make([]uint32, voc.Words())
	for _, tok := range toks {
		_, hit := x.masks[c.State()]
		t0 := time.Now()
		if err := c.Mask(mask); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
		if hit {
			hits++
		}
		if mask[tok>>5]&(1<<(tok&31)) == 0 {
			b.Fatalf("token %d (%q) masked out", tok, tk.TokenToPiece(tok, false))
		}
		if err := c.Accept(tok); err != nil {
			b.Fatal(err)
		}
	}
	return times, hits
}

// BenchmarkMaskSchemaQwen2 reports the per-token mask time over the Qwen2
// vocabulary (151k tokens) for a JSON document under a schema grammar,
// from a cold cache: median, p90 and max over the document's tokens.
func BenchmarkMaskSchemaQwen2(b *testing.B) {
	var all []time.Duration
	hits, n := 0, 0
	for i := 0; i < b.N; i++ {
		ts, h := maskTimes(b)
		all = append(all, ts...)
		hits += h
		n += len(ts)
	}
	slices.Sort(all)
	q := func(f float64) float64 { return float64(all[int(f*float64(len(all)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(q(0.5), "µs-median")
	b.ReportMetric(q(0.9), "µs-p90")
	b.ReportMetric(q(1), "µs-max")
	b.ReportMetric(float64(hits)/float64(n), "hit-rate")
	b.ReportMetric(float64(n)/float64(b.N), "tokens")
}

// BenchmarkMaskHit is a mask from the cache: the copy into the caller's
// buffer (151k bits) and the lookup.
func BenchmarkMaskHit(b *testing.B) {
	voc, _ := sharedVocab(b, "ggml-vocab-qwen2.gguf")
	c := NewMatcher(mustMachine(b, benchSchema(b)), voc)
	mask := make([]uint32, voc.Words())
	if err := c.Mask(mask); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.Mask(mask); err != nil {
			b.Fatal(err)
		}
	}
}
