package tokenizer

//go:generate sh -c "python3 gen_nfd.py > nfd_table.go"

import "sort"

// WordPiece as llama.cpp runs BERT vocabularies: the normalizer lowercases
// and strips accents (keeping the first codepoint of each character's
// canonical decomposition and dropping marks), drops control characters,
// and cuts the text at whitespace and around punctuation, ASCII symbols and
// CJK characters. Each word, with ▁ in front (the converter spells
// word-initial pieces with ▁ rather than marking the others with ##), is
// then covered greedily by the longest tokens from the left; a word that
// cannot be covered becomes UNK.

type wpmTables struct {
	t    *Tokenizer
	trie *trie
}

func newWPMTables(t *Tokenizer) *wpmTables {
	ids := make([]int32, len(t.v.Tokens))
	for i := range ids {
		ids[i] = int32(i)
	}
	return &wpmTables{t: t, trie: newTrie(t.v.Tokens, ids)}
}

func (w *wpmTables) tokenize(s *session, dst []int32, frag string) []int32 {
	v := &w.t.v
	cps, _ := runes(s.split.cps, frag)
	s.split.cps = cps
	word := append(s.buf[:0], "\u2581"...)
	flush := func() {
		if len(word) > len("\u2581") {
			dst = w.word(dst, string(word))
		}
		word = word[:len("\u2581")]
	}
	for _, r := range cps {
		if v.StripAccents {
			r = nfdFirstOf(r)
		}
		f := flagsOf(r)
		if f&cWhitespace != 0 {
			flush()
			continue
		}
		if r == 0 || r == 0xFFFD || f&cControl != 0 {
			continue
		}
		if v.StripAccents && f&cMark != 0 {
			continue
		}
		out := r
		if v.Lowercase {
			out = toLower(r)
		}
		if f&cPunctuation != 0 || (r < 0x7F && f&cSymbol != 0) || isChineseChar(r) {
			flush()
			word = appendRune(word, out)
			flush()
			continue
		}
		word = appendRune(word, out)
	}
	flush()
	s.buf = word[:0]
	return dst
}

// word covers one ▁-prefixed word with the longest tokens from the left.
func (w *wpmTables) word(dst []int32, word string) []int32 {
	start := len(dst)
	for i := 0; i < len(word); {
		id, n := w.trie.longestPrefix(word[i:])
		if id < 0 {
			dst = dst[:start]
			break
		}
		dst = append(dst, id)
		i += n
	}
	if len(dst) == start && w.t.v.UNK >= 0 {
		dst = append(dst, w.t.v.UNK)
	}
	return dst
}

// nfdFirstOf is the first codepoint of r's canonical decomposition.
func nfdFirstOf(r rune) rune {
	i := sort.Search(len(nfdFirst), func(i int) bool { return nfdFirst[i].hi >= r })
	if i < len(nfdFirst) && nfdFirst[i].lo <= r {
		return nfdFirst[i].to
	}
	return r
}
