// Command grammarpeer times llama.cpp's grammar sampler alone, in a process
// of its own: the peer of the grammar package's mask benchmark
// (BenchmarkMaskSchemaQwen2). It loads only llama.cpp's release library
// through purego and a vocabulary GGUF (vocab_only), builds
// llama_sampler_init_grammar from a GBNF file, and replays a document's
// tokens (llama.cpp's own tokenization of it): at every step it times
// llama_sampler_apply over the whole vocabulary as candidates, then accepts
// the document's token. Each repetition starts a fresh sampler, so its
// caches are cold as the benchmark's are. It prints one JSON object.
//
//	go run ./internal/grammarpeer -vocab ../shared/vocab/ggml-vocab-qwen2.gguf \
//	    -grammar runtime/grammar/testdata/bench-schema.gbnf \
//	    -doc runtime/grammar/testdata/bench-doc.json [-r 3]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/akunu-dev/akunu/internal/llamacpp"
)

// Result is what grammarpeer prints; times in microseconds.
type Result struct {
	Engine  string    `json:"engine"`
	Vocab   string    `json:"vocab"`
	NVocab  int       `json:"n_vocab"`
	Tokens  int       `json:"tokens"`
	Reps    int       `json:"reps"`
	Median  float64   `json:"apply_us_median"`
	P90     float64   `json:"apply_us_p90"`
	Max     float64   `json:"apply_us_max"`
	Mean    float64   `json:"apply_us_mean"`
	Allowed []int     `json:"allowed_per_step"`
	Steps   []float64 `json:"apply_us_first_rep"`
}

func main() {
	vocab := flag.String("vocab", "", "vocabulary (or model) GGUF, loaded vocab_only")
	gpath := flag.String("grammar", "", "GBNF file (start rule root)")
	doc := flag.String("doc", "", "file holding the document to replay")
	reps := flag.Int("r", 3, "repetitions, each with a fresh sampler")
	flag.Parse()
	if *vocab == "" || *gpath == "" || *doc == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: grammarpeer -vocab V.gguf -grammar G.gbnf -doc FILE [-r 3]")
		os.Exit(2)
	}
	r, err := run(*vocab, *gpath, *doc, max(*reps, 1))
	if err != nil {
		fmt.Fprintln(os.Stderr, "grammarpeer:", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		fmt.Fprintln(os.Stderr, "grammarpeer:", err)
		os.Exit(1)
	}
}

func run(vocabPath, gpath, docPath string, reps int) (*Result, error) {
	g, err := os.ReadFile(gpath)
	if err != nil {
		return nil, fmt.Errorf("-grammar: %w", err)
	}
	d, err := os.ReadFile(docPath)
	if err != nil {
		return nil, fmt.Errorf("-doc: %w", err)
	}
	lib, err := llamacpp.Load()
	if err != nil {
		return nil, err
	}
	p := lib.DefaultModelParams()
	p.VocabOnly = true
	m, err := lib.LoadModelWith(vocabPath, p)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	toks, err := m.Tokenize(string(d), false, false)
	if err != nil {
		return nil, err
	}
	n := m.NVocab()
	res := &Result{Engine: "llama.cpp " + lib.Dir, Vocab: vocabPath, NVocab: n, Tokens: len(toks), Reps: reps}
	cands := make([]llamacpp.TokenData, n)
	var all []float64
	for rep := 0; rep < reps; rep++ {
		s, err := m.NewGrammarSampler(string(g), "root")
		if err != nil {
			return nil, err
		}
		for i, tok := range toks {
			for j := range cands {
				cands[j] = llamacpp.TokenData{ID: int32(j)}
			}
			t0 := time.Now()
			if err := s.Apply(cands); err != nil {
				s.Close()
				return nil, err
			}
			us := float64(time.Since(t0).Nanoseconds()) / 1e3
			all = append(all, us)
			if math.IsInf(float64(cands[tok].Logit), -1) {
				s.Close()
				return nil, fmt.Errorf("step %d: llama.cpp's grammar refuses the document's token %d", i, tok)
			}
			if rep == 0 {
				res.Steps = append(res.Steps, us)
				res.Allowed = append(res.Allowed, llamacpp.Allowed(cands))
			}
			s.Accept(tok)
		}
		s.Close()
	}
	slices.Sort(all)
	q := func(f float64) float64 { return all[int(f*float64(len(all)-1))] }
	res.Median, res.P90, res.Max = q(0.5), q(0.9), q(1)
	for _, v := range all {
		res.Mean += v / float64(len(all))
	}
	return res, nil
}
