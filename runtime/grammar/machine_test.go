package grammar

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
)

func mustMachine(t testing.TB, src string) *Machine {
	t.Helper()
	g, err := Parse(src)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	m, err := Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAccepts(t *testing.T) {
	m := mustMachine(t, `root ::= "a" [b-d]* ("é" | [^a-z]) | "x"{2,3}`)
	for s, want := range map[string]bool{
		"ab": false, "abé": true, "aé": true, "abcdZ": true, "abcdz": false, "a\U0001F600": true,
		"xx": true, "xxx": true, "x": false, "xxxx": false, "": false, "a\xed\xa0\x80": false, // a surrogate
	} {
		if got := m.Accepts(s); got != want {
			t.Errorf("Accepts(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestUTF8Sequences(t *testing.T) {
	// Every code point of a range is covered by exactly one sequence and
	// nothing else is.
	for _, r := range []Range{{0, MaxRune}, {0x80, 0x7FF}, {0x7F, 0x10000}, {0x20AC, 0x20AC}, {0xD000, 0xE100}} {
		var seqs [][][2]byte
		utf8Sequences(r.Lo, r.Hi, func(s [][2]byte) { seqs = append(seqs, s) })
		in := func(b []byte) int {
			n := 0
			for _, s := range seqs {
				if len(s) != len(b) {
					continue
				}
				ok := true
				for i := range s {
					ok = ok && s[i][0] <= b[i] && b[i] <= s[i][1]
				}
				if ok {
					n++
				}
			}
			return n
		}
		for c := r.Lo - 2; c <= r.Hi+2; c += 1 + rune(rand.IntN(7)) {
			if c < 0 || c > MaxRune {
				continue
			}
			want := 0
			if c >= r.Lo && c <= r.Hi && (c < 0xD800 || c > 0xDFFF) {
				want = 1
			}
			var buf [4]byte
			n := encodeRune(buf[:], c)
			if got := in(buf[:n]); got != want {
				t.Fatalf("range %X-%X: U+%X covered %d times, want %d", r.Lo, r.Hi, c, got, want)
			}
		}
	}
}

// encodeRune encodes c as UTF-8 even where it is a surrogate.
func encodeRune(b []byte, c rune) int {
	switch {
	case c < 0x80:
		b[0] = byte(c)
		return 1
	case c < 0x800:
		b[0], b[1] = 0xC0|byte(c>>6), 0x80|byte(c&63)
		return 2
	case c < 0x10000:
		b[0], b[1], b[2] = 0xE0|byte(c>>12), 0x80|byte(c>>6&63), 0x80|byte(c&63)
		return 3
	}
	b[0], b[1], b[2], b[3] = 0xF0|byte(c>>18), 0x80|byte(c>>12&63), 0x80|byte(c>>6&63), 0x80|byte(c&63)
	return 4
}

var (
	vocabMu    sync.Mutex
	vocabCache = map[string]*Vocab{}
)

// sharedVocab is the Vocab of a tokenizer GGUF in ../shared/vocab, with
// its end-of-generation tokens.
func sharedVocab(t testing.TB, name string) (*Vocab, *tokenizer.Tokenizer) {
	t.Helper()
	path, err := llamacpp.SharedPath("vocab", name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		proof.Missing(t, "the grammar's masks over a real vocabulary are not checked", path+" is missing")
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.New(v)
	if err != nil {
		t.Fatal(err)
	}
	vocabMu.Lock()
	defer vocabMu.Unlock()
	if voc, ok := vocabCache[path]; ok {
		return voc, tk
	}
	voc := TokenizerVocab(tk, tk.NumTokens())
	vocabCache[path] = voc
	return voc, tk
}

func llamaGrammar(t testing.TB, name string) string {
	t.Helper()
	dir, err := llamacpp.SourceDir()
	if err != nil {
		proof.Missing(t, "llama.cpp's grammars are not run", err.Error())
	}
	b, err := os.ReadFile(filepath.Join(dir, "grammars", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMaskBruteForce holds every mask to the definition: token t is set
// when stepping its bytes from the state stays alive (end tokens: when the
// state may end), along random walks through several grammars, over the
// Qwen2 vocabulary (151k tokens, byte-level BPE) and a SentencePiece one.
func TestMaskBruteForce(t *testing.T) {
	grammars := map[string]string{
		"json":       llamaGrammar(t, "json.gbnf"),
		"arithmetic": llamaGrammar(t, "arithmetic.gbnf"),
		"list":       llamaGrammar(t, "list.gbnf"),
		"schema": `root ::= "{" space "\"name\"" space ":" space string "," space "\"age\"" space ":" space int space "}"
string ::= "\"" ( [^"\\] | "\\" ["\\/bfnrt] )* "\"" space
int ::= "-"? [1-9] [0-9]{0,5}
space ::= | " " | "\n" [ \t]{0,20}`,
	}
	for _, vname := range []string{"ggml-vocab-qwen2.gguf", "ggml-vocab-llama-spm.gguf"} {
		voc, _ := sharedVocab(t, vname)
		for gname, src := range grammars {
			m := mustMachine(t, src)
			x := NewIndex(m, voc)
			c := x.Matcher()
			rng := rand.New(rand.NewPCG(1, uint64(len(gname))))
			mask := make([]uint32, voc.Words())
			for step := 0; step < 12; step++ {
				err := c.Mask(mask)
				if err != nil {
					t.Fatalf("%s/%s step %d: %v", vname, gname, step, err)
				}
				var allowed []int32
				for tok := 0; tok < voc.Len(); tok++ {
					want := false
					if isEOG(voc, int32(tok)) {
						want = m.Accepting(c.State())
					} else if p := voc.bytes[tok]; len(p) > 0 {
						want = m.Advance(c.State(), string(p)) >= 0
					}
					got := mask[tok>>5]&(1<<(tok&31)) != 0
					if got != want {
						t.Fatalf("%s/%s step %d: token %d (%q): mask %v, by its bytes %v", vname, gname, step, tok, voc.bytes[tok], got, want)
					}
					if got && !isEOG(voc, int32(tok)) {
						allowed = append(allowed, int32(tok))
					}
				}
				if len(allowed) == 0 {
					break
				}
				if err := c.Accept(allowed[rng.IntN(len(allowed))]); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func isEOG(v *Vocab, t int32) bool {
	for _, e := range v.eog {
		if e == t {
			return true
		}
	}
	return false
}

// TestMachineMemoryBound: a machine whose states would outgrow maxBytes
// stops with ErrTooComplex instead of taking the memory.
func TestMachineMemoryBound(t *testing.T) {
	defer func(b int) { maxBytes = b }(maxBytes)
	maxBytes = 64 << 10
	m := mustMachine(t, `root ::= [a-z]{0,1500}`) // a state a position
	s := m.Advance(m.Start(), strings.Repeat("q", 1400))
	if s >= 0 || !errors.Is(m.Err(), ErrTooComplex) {
		t.Fatalf("state %d, err %v: want dead and ErrTooComplex", s, m.Err())
	}
	maxBytes = 256 << 20
	m = mustMachine(t, `root ::= [a-z]{0,1500}`)
	if !m.Accepts(strings.Repeat("q", 1400)) || m.Err() != nil {
		t.Fatalf("within the default bound: %v", m.Err())
	}
}
