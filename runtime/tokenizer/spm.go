package tokenizer

import "strings"

// SentencePiece (BPE flavour, as llama.cpp runs it): the text, with spaces
// turned into ▁, starts as one symbol per UTF-8 character; the adjacent pair
// whose concatenation is the token with the highest score merges, until no
// pair forms a token. A symbol left that is no token becomes its bytes, each
// as its <0xXX> token.

type spmTables struct {
	t       *Tokenizer
	scores  []float32
	byteTok [256]int32 // <0xXX>, else the one-byte token, else -1
	// wordwise: no token has ▁ after a character other than ▁, so no
	// merge can join a character to the ▁ after it, and the text can be
	// merged one ▁-led word at a time with the same result (and without a
	// heap the size of the text).
	wordwise bool
}

func newSPMTables(t *Tokenizer) *spmTables {
	s := &spmTables{t: t, scores: t.v.Scores, wordwise: true}
	for _, tok := range t.v.Tokens {
		for j := 1; j < len(tok) && s.wordwise; j++ {
			if strings.HasPrefix(tok[j:], "\u2581") && !strings.HasSuffix(tok[:j], "\u2581") {
				s.wordwise = false
			}
		}
	}
	for b := 0; b < 256; b++ {
		s.byteTok[b] = -1
		if id, ok := t.tokenID[byteTokenText(byte(b))]; ok {
			s.byteTok[b] = id
		} else if id, ok := t.tokenID[string([]byte{byte(b)})]; ok {
			s.byteTok[b] = id
		}
	}
	return s
}

// byteTokenText is the text of the token for a byte: <0x41>.
func byteTokenText(b byte) string {
	const hex = "0123456789ABCDEF"
	return string([]byte{'<', '0', 'x', hex[b>>4], hex[b&15], '>'})
}

// symbol is a stretch [start, end) of the word being merged, in a list.
type symbol struct {
	start, end int32
	prev, next int32
	piece      int32 // BPE: the piece id of the text, -1 if none
}

// bigram is a candidate merge of symbols left and right. SentencePiece
// ranks by score (higher first), BPE by rank (lower first); both break ties
// by position.
type bigram struct {
	score       float32
	rank        int32
	left, right int32
	size        int32 // SentencePiece: the merged length, to spot stale entries
	lp, rp      int32 // BPE: the pieces it merges, to spot stale entries
	res         int32 // BPE: the piece it makes
}

func (s *spmTables) tokenize(ss *session, dst []int32, frag string, spacePrefix bool) []int32 {
	// Escape spaces, with the prefix space if asked.
	b := ss.buf[:0]
	if spacePrefix {
		b = append(b, "\u2581"...)
	}
	for i := 0; i < len(frag); i++ {
		if frag[i] == ' ' {
			b = append(b, "\u2581"...)
		} else {
			b = append(b, frag[i])
		}
	}
	ss.buf = b
	text := string(b)
	if !s.wordwise {
		return s.merge(ss, dst, text)
	}
	// Cut before each symbol that is ▁ where the symbol before does not end
	// in ▁ (symbols as merge cuts them: by lead bytes, so that invalid
	// UTF-8 swallows the same bytes here as there).
	start, prev := 0, 0
	for off := 0; off < len(text); {
		n := min(utf8Len(text[off]), len(text)-off)
		if off > 0 && strings.HasPrefix(text[off:], "\u2581") && !strings.HasSuffix(text[prev:off], "\u2581") {
			dst = s.merge(ss, dst, text[start:off])
			start = off
		}
		prev = off
		off += n
	}
	return s.merge(ss, dst, text[start:])
}

// merge tokenizes one stretch of escaped text.
func (s *spmTables) merge(ss *session, dst []int32, text string) []int32 {
	if text == "" {
		return dst
	}
	syms := ss.syms[:0]
	for off := 0; off < len(text); {
		n := min(utf8Len(text[off]), len(text)-off)
		i := int32(len(syms))
		syms = append(syms, symbol{start: int32(off), end: int32(off + n), prev: i - 1, next: i + 1})
		off += n
	}
	syms[len(syms)-1].next = -1
	h := bigramHeap{a: ss.heap[:0], byRank: false}
	tokenID := s.t.tokenID
	try := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		id, ok := tokenID[text[syms[l].start:syms[r].end]]
		if !ok {
			return
		}
		h.push(bigram{score: s.score(id), left: l, right: r, size: syms[r].end - syms[l].start})
	}
	for i := 1; i < len(syms); i++ {
		try(int32(i-1), int32(i))
	}
	for h.len() > 0 {
		bg := h.pop()
		l, r := &syms[bg.left], &syms[bg.right]
		if l.end == l.start || r.end == r.start || (l.end-l.start)+(r.end-r.start) != bg.size {
			continue // one side has merged since
		}
		l.end = r.end
		r.end = r.start
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = bg.left
		}
		try(l.prev, bg.left)
		try(bg.left, l.next)
	}
	ss.heap = h.a
	for i := int32(0); i != -1; i = syms[i].next {
		sym := text[syms[i].start:syms[i].end]
		if id, ok := tokenID[sym]; ok {
			dst = append(dst, id)
			continue
		}
		for j := 0; j < len(sym); j++ {
			if id := s.byteTok[sym[j]]; id >= 0 {
				dst = append(dst, id)
			} else if s.t.v.UNK >= 0 {
				// llama.cpp gives up (an exception) on a byte the
				// vocabulary cannot spell; we say "unknown".
				dst = append(dst, s.t.v.UNK)
			}
		}
	}
	ss.syms = syms
	return dst
}

func (s *spmTables) score(id int32) float32 {
	if s.scores == nil {
		return 0
	}
	return s.scores[id]
}

// escapeSpaces turns spaces into ▁.
func escapeSpaces(s string) string { return strings.ReplaceAll(s, " ", "\u2581") }
