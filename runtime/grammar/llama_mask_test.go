package grammar

import (
	"math"
	"testing"

	"github.com/akunu-dev/akunu/internal/llamacpp"
)

// neverUTF8 reports whether b holds a byte no UTF-8 text contains (C0, C1,
// F5..FF): llama.cpp's grammar lets such a byte through as the lead of a
// sequence it would refuse only once complete; our machine, whose
// terminals are the UTF-8 byte ranges themselves, refuses it at once.
func neverUTF8(b []byte) bool {
	for _, c := range b {
		if c == 0xC0 || c == 0xC1 || c >= 0xF5 {
			return true
		}
	}
	return false
}

// TestMaskAgreesWithLlama holds our masks to llama.cpp's grammar sampler
// (llama_sampler_apply over the whole Qwen2 vocabulary) at every step of
// the benchmark's document, under the schema grammar and llama.cpp's own
// json.gbnf. Two differences are by design and not compared: control
// tokens (llama.cpp matches their text, <|im_start|>, inside a string; we
// never let a grammar produce one) and tokens holding a byte that is
// never UTF-8 (see neverUTF8).
func TestMaskAgreesWithLlama(t *testing.T) {
	voc, tk := sharedVocab(t, "ggml-vocab-qwen2.gguf")
	lib := llamacpp.Require(t)
	path, err := llamacpp.SharedPath("vocab", "ggml-vocab-qwen2.gguf")
	if err != nil {
		t.Fatal(err)
	}
	p := lib.DefaultModelParams()
	p.VocabOnly = true
	lm, err := lib.LoadModelWith(path, p)
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	if lm.NVocab() != voc.Len() {
		t.Fatalf("llama.cpp's vocabulary has %d tokens, ours %d", lm.NVocab(), voc.Len())
	}
	toks := tk.Tokenize(benchDoc(t), false, false)
	cands := make([]llamacpp.TokenData, voc.Len())
	mask := make([]uint32, voc.Words())
	for name, src := range map[string]string{"schema": benchSchema(t), "json.gbnf": llamaGrammar(t, "json.gbnf")} {
		s, err := lm.NewGrammarSampler(src, "root")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c := NewMatcher(mustMachine(t, src), voc)
		compared := 0
		for step, tok := range toks {
			if err := c.Mask(mask); err != nil {
				t.Fatalf("%s step %d: %v", name, step, err)
			}
			for j := range cands {
				cands[j] = llamacpp.TokenData{ID: int32(j)}
			}
			if err := s.Apply(cands); err != nil {
				t.Fatal(err)
			}
			for j := range cands {
				theirs := !math.IsInf(float64(cands[j].Logit), -1)
				ours := mask[j>>5]&(1<<(j&31)) != 0
				if theirs == ours || tk.IsControl(int32(j)) || neverUTF8(voc.bytes[j]) {
					continue
				}
				t.Fatalf("%s step %d (after %q): token %d (%q): llama.cpp allows it: %v, we: %v",
					name, step, tk.Detokenize(toks[:step], false), j, voc.bytes[j], theirs, ours)
			}
			compared++
			if theirs := !math.IsInf(float64(cands[tok].Logit), -1); !theirs {
				t.Fatalf("%s step %d: llama.cpp refuses the document's token", name, step)
			}
			s.Accept(tok)
			if err := c.Accept(tok); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		if compared != len(toks) {
			t.Fatalf("%s: compared %d of %d steps", name, compared, len(toks))
		}
	}
}
