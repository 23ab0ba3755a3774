package grammar

import (
	"slices"
	"testing"
	"time"
)

// benchSchemaGBNF is the shape of grammar llama.cpp's JSON-schema
// converter writes for an object of six properties of mixed types.
const benchSchemaGBNF = `root ::= "{" space name-kv "," space age-kv "," space email-kv "," space active-kv "," space tags-kv "," space address-kv "}" space
name-kv ::= "\"name\"" space ":" space string
age-kv ::= "\"age\"" space ":" space integer
email-kv ::= "\"email\"" space ":" space string
active-kv ::= "\"active\"" space ":" space boolean
tags-kv ::= "\"tags\"" space ":" space "[" space ( string ( "," space string )* )? "]" space
address-kv ::= "\"address\"" space ":" space address
address ::= "{" space "\"street\"" space ":" space string "," space "\"city\"" space ":" space string "," space "\"zip\"" space ":" space string "}" space
boolean ::= ("true" | "false") space
char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})
integer ::= ("-"? integral-part) space
integral-part ::= [0] | [1-9] [0-9]{0,15}
space ::= | " " | "\n"{1,2} [ \t]{0,20}
string ::= "\"" char* "\"" space
`

const benchDoc = `{"name": "Ada Lovelace", "age": 36, "email": "ada@analytical-engine.org", "active": true, "tags": ["mathematics", "poetry of science", "notes on the engine"], "address": {"street": "12 St James's Square", "city": "London", "zip": "SW1Y 4JH"}}`

// maskTimes replays benchDoc token by token under the schema grammar with
// a fresh machine (a cold cache), timing each mask.
func maskTimes(b testing.TB) (times []time.Duration, hits int) {
	voc, tk := sharedVocab(b, "ggml-vocab-qwen2.gguf")
	toks := tk.Tokenize(benchDoc, false, false)
	m := mustMachine(b, benchSchemaGBNF)
	x := NewIndex(m, voc)
	c := x.Matcher()
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
