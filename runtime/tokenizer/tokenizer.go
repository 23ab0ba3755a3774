package tokenizer

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Tokenizer turns text into token ids and back. It is built once from a
// Vocab and is safe for concurrent use.
type Tokenizer struct {
	v       Vocab
	tokenID map[string]int32

	// specials are the tokens that text is split on before tokenizing
	// (control, user-defined and unknown tokens), longest first;
	// specialTrie finds which of them occur in a text.
	specials    []int32
	specialRank []int32 // position of a token in specials
	specialTrie *trie

	spm *spmTables
	bpe *bpeTables
	wpm *wpmTables

	piecesOnce sync.Once
	pieces     []string // token_to_piece with special tokens rendered

	scratch sync.Pool // *session
}

// New builds a tokenizer. It checks v with Validate first.
func New(v Vocab) (*Tokenizer, error) {
	if err := v.Validate(); err != nil {
		return nil, err
	}
	t := &Tokenizer{v: v, tokenID: make(map[string]int32, len(v.Tokens))}
	t.v.EOG = slices.Sorted(slices.Values(v.EOG)) // IsEOG searches it; the caller's slice stays as it was
	for i, s := range v.Tokens {
		if j, dup := t.tokenID[s]; dup {
			return nil, fmt.Errorf("tokenizer: %s: token %d %q duplicates token %d: %w", keyTokens, i, s, j, ErrInvalidVocab)
		}
		t.tokenID[s] = int32(i)
	}
	t.buildSpecials()
	var err error
	switch v.Model {
	case ModelSPM:
		t.spm = newSPMTables(t)
	case ModelWPM:
		t.wpm = newWPMTables(t)
	default:
		t.bpe, err = newBPETables(t)
	}
	if err != nil {
		return nil, err
	}
	t.scratch.New = func() any { return &session{} }
	return t, nil
}

// Vocab returns the vocabulary the tokenizer was built from. It shares its
// slices with the tokenizer: do not modify them.
func (t *Tokenizer) Vocab() *Vocab { return &t.v }

// NumTokens is the size of the vocabulary.
func (t *Tokenizer) NumTokens() int { return len(t.v.Tokens) }

// IsEOG reports whether id ends generation.
func (t *Tokenizer) IsEOG(id int32) bool {
	i := sort.Search(len(t.v.EOG), func(i int) bool { return t.v.EOG[i] >= id })
	return i < len(t.v.EOG) && t.v.EOG[i] == id
}

// IsControl reports a control token.
func (t *Tokenizer) IsControl(id int32) bool {
	return id >= 0 && int(id) < len(t.v.Attrs) && t.v.Attrs[id]&AttrControl != 0
}

func (t *Tokenizer) buildSpecials() {
	for i, a := range t.v.Attrs {
		if a&(AttrControl|AttrUserDefined|AttrUnknown) != 0 {
			t.specials = append(t.specials, int32(i))
		}
	}
	// Longest first, as llama.cpp partitions; ties by id, so that the order
	// (which matters only when two equally long tokens overlap in a text)
	// is at least deterministic.
	sort.SliceStable(t.specials, func(i, j int) bool {
		return len(t.v.Tokens[t.specials[i]]) > len(t.v.Tokens[t.specials[j]])
	})
	keys := make([]string, len(t.specials))
	t.specialRank = make([]int32, len(t.v.Tokens))
	for i, id := range t.specials {
		keys[i] = t.v.Tokens[id]
		t.specialRank[id] = int32(i)
	}
	t.specialTrie = newTrie(keys, t.specials)
}

// session is the scratch memory of one Tokenize call.
type session struct {
	frags   []fragment
	frags2  []fragment
	present []bool
	found   []int32
	buf     []byte
	split   splitText
	pieces  []int32
	syms    []symbol
	heap    []bigram
}

// fragment is a stretch of the input: raw text [off, off+n), or a special
// token (tok >= 0).
type fragment struct {
	off, n int
	tok    int32
}

// Tokenize splits text into token ids as llama.cpp's llama_tokenize does.
// addSpecial adds BOS/EOS as the vocabulary says (WordPiece: CLS and SEP);
// parseSpecial lets the text spell control tokens ("<s>", "<|im_end|>"),
// which are otherwise tokenized as plain text. User-defined tokens are
// always recognised.
func (t *Tokenizer) Tokenize(text string, addSpecial, parseSpecial bool) []int32 {
	return t.AppendTokens(nil, text, addSpecial, parseSpecial)
}

// AppendTokens is Tokenize appending to dst.
func (t *Tokenizer) AppendTokens(dst []int32, text string, addSpecial, parseSpecial bool) []int32 {
	s := t.scratch.Get().(*session)
	defer t.scratch.Put(s)
	frags := t.partition(s, text, parseSpecial)
	v := &t.v
	switch v.Model {
	case ModelSPM:
		if addSpecial && v.AddBOS {
			dst = append(dst, v.BOS)
		}
		prevSpecial := true
		for _, f := range frags {
			if f.tok >= 0 {
				dst = append(dst, f.tok)
				prevSpecial = true
				continue
			}
			dst = t.spm.tokenize(s, dst, text[f.off:f.off+f.n], v.AddSpacePrefix && prevSpecial)
			prevSpecial = false
		}
		if addSpecial && v.AddEOS {
			dst = append(dst, v.EOS)
		}
	case ModelWPM:
		if addSpecial {
			dst = append(dst, v.BOS)
		}
		for _, f := range frags {
			if f.tok >= 0 {
				dst = append(dst, f.tok)
				continue
			}
			dst = t.wpm.tokenize(s, dst, text[f.off:f.off+f.n])
		}
		if addSpecial {
			dst = append(dst, v.SEP)
		}
	default:
		if addSpecial && v.AddBOS {
			dst = append(dst, v.BOS)
		}
		for _, f := range frags {
			if f.tok >= 0 {
				dst = append(dst, f.tok)
				continue
			}
			dst = t.bpe.tokenize(s, dst, text[f.off:f.off+f.n])
		}
		if addSpecial && v.AddEOS {
			dst = append(dst, v.EOS)
		}
	}
	return dst
}

// partition splits text on the special tokens that occur in it, longest
// token first, each token splitting every raw fragment at all its
// occurrences, left to right (llama.cpp's tokenizer_st_partition). A token
// with AttrLStrip (AttrRStrip) swallows the whitespace before (after) it.
// Without parseSpecial only user-defined tokens split.
func (t *Tokenizer) partition(s *session, text string, parseSpecial bool) []fragment {
	frags := s.frags[:0]
	if text == "" {
		return frags
	}
	frags = append(frags, fragment{off: 0, n: len(text), tok: -1})
	if len(t.specials) == 0 {
		s.frags = frags
		return frags
	}
	// Which special tokens occur at all? Fragments are pieces of the text,
	// so a token absent from the text is absent from all of them.
	if cap(s.present) < len(t.v.Tokens) {
		s.present = make([]bool, len(t.v.Tokens))
	}
	present := s.present[:len(t.v.Tokens)]
	found := s.found[:0]
	defer func() { s.found = found }()
	tr := t.specialTrie
	for i := 0; i < len(text); i++ {
		node := tr.root[text[i]]
		for j := i + 1; node != 0; j++ {
			if id := tr.nodes[node].value; id >= 0 && !present[id] {
				present[id] = true
				found = append(found, id)
			}
			if j >= len(text) {
				break
			}
			node = tr.child(node, text[j])
		}
	}
	if len(found) == 0 {
		s.frags = frags
		return frags
	}
	sort.Slice(found, func(i, j int) bool { return t.specialRank[found[i]] < t.specialRank[found[j]] })
	for _, id := range found {
		attr := t.v.Attrs[id]
		if !parseSpecial && attr&(AttrControl|AttrUnknown) != 0 {
			continue
		}
		frags = t.splitOn(s, text, frags, id, attr)
	}
	for _, id := range found {
		present[id] = false
	}
	s.frags = frags
	return frags
}

// splitOn replaces every raw fragment by the pieces around the occurrences
// of token id.
func (t *Tokenizer) splitOn(s *session, text string, frags []fragment, id int32, attr TokenAttr) []fragment {
	tok := t.v.Tokens[id]
	out := s.frags2[:0]
	for _, f := range frags {
		if f.tok >= 0 {
			out = append(out, f)
			continue
		}
		pos, end := f.off, f.off+f.n
		for {
			i := strings.Index(text[pos:end], tok)
			if i < 0 {
				if pos < end {
					out = append(out, fragment{off: pos, n: end - pos, tok: -1})
				}
				break
			}
			m := pos + i
			left := m
			if attr&AttrLStrip != 0 {
				for left > pos && isSpaceASCII(text[left-1]) {
					left--
				}
			}
			if left > pos {
				out = append(out, fragment{off: pos, n: left - pos, tok: -1})
			}
			out = append(out, fragment{tok: id})
			pos = m + len(tok)
			if attr&AttrRStrip != 0 {
				for pos < end && isSpaceASCII(text[pos]) {
					pos++
				}
			}
			if pos >= end {
				break
			}
		}
	}
	s.frags2 = frags[:0]
	return out
}
