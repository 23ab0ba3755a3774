package tokenizer

import (
	"fmt"
	"strings"
)

// Byte-level BPE: the pre-tokenizer cuts the text into words; each word
// starts as one symbol per character and the adjacent pair whose merge rule
// comes first merges, until no rule applies; each symbol left is a token.
//
// GPT-2's vocabularies spell every byte as a printable character (space is
// Ġ, newline Ċ), so a word's characters are its bytes. We keep words as raw
// bytes and give each byte the piece of its character, which saves
// re-encoding the text. Symbols carry piece ids: every distinct string that
// a merge rule mentions or produces, tokens first (a token's piece id is its
// token id), so merging is integer work.

type bpeTables struct {
	t       *Tokenizer
	pre     *preTokenizer
	rules   []splitRule
	needSym bool // some rule is a regex (wants splitText.syms)

	pieceID   map[string]int32
	pieceText []string // beyond the tokens
	merges    map[uint64]mergeInfo

	// Byte-level vocabularies:
	bytePiece [256]int32  // the piece of each byte's character, or -1
	byteChar  [256]string // the character that spells each byte
	rawToken  map[string]int32
	// Raw UTF-8 vocabularies (Gemma 4):
	byteTok [256]int32 // <0xXX>, or -1
}

type mergeInfo struct{ rank, res int32 }

func pairKey(l, r int32) uint64 { return uint64(uint32(l))<<32 | uint64(uint32(r)) }

func newBPETables(t *Tokenizer) (*bpeTables, error) {
	v := &t.v
	pre, err := lookupPre(v.Pre)
	if v.Model == ModelGemma4 {
		pre, err = lookupPre("gemma4")
	}
	if err != nil {
		return nil, err
	}
	b := &bpeTables{t: t, pre: pre, pieceID: t.tokenID, merges: make(map[uint64]mergeInfo, len(v.Merges))}
	for _, pat := range pre.rules {
		r, err := compileRule(pat)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: pre-tokenizer %q: %w", v.Pre, err)
		}
		b.rules = append(b.rules, r)
		b.needSym = b.needSym || r.re != nil
	}
	// The piece table starts as the token table; merges add what is not a
	// token. Copy the map only if that happens.
	owned := false
	intern := func(s string) int32 {
		if id, ok := b.pieceID[s]; ok {
			return id
		}
		if !owned {
			m := make(map[string]int32, len(b.pieceID)+1024)
			for k, id := range b.pieceID {
				m[k] = id
			}
			b.pieceID, owned = m, true
		}
		id := int32(len(v.Tokens) + len(b.pieceText))
		b.pieceText = append(b.pieceText, s)
		b.pieceID[s] = id
		return id
	}
	var buf []byte
	for i, m := range v.Merges {
		// "left right": the first space after the first byte separates
		// them (a left side may itself be a space).
		if len(m) < 2 {
			continue
		}
		sp := strings.IndexByte(m[1:], ' ')
		if sp < 0 {
			continue
		}
		left, right := m[:sp+1], m[sp+2:]
		lp, rp := intern(left), intern(right)
		key := pairKey(lp, rp)
		if _, dup := b.merges[key]; dup {
			continue // the first rule for a pair wins
		}
		buf = append(append(buf[:0], left...), right...)
		res, ok := b.pieceID[string(buf)]
		if !ok {
			res = intern(string(buf))
		}
		b.merges[key] = mergeInfo{rank: int32(i), res: res}
	}
	if pre.rawBytes || v.Model == ModelGemma4 {
		for c := 0; c < 256; c++ {
			b.byteTok[c] = -1
			if id, ok := t.tokenID[byteTokenText(byte(c))]; ok {
				b.byteTok[c] = id
			}
		}
	} else {
		b.rawToken = make(map[string]int32)
		for c := 0; c < 256; c++ {
			b.byteChar[c] = string(appendRune(nil, byteRune[c]))
			b.bytePiece[c] = -1
			if id, ok := b.pieceID[b.byteChar[c]]; ok {
				b.bytePiece[c] = id
			}
		}
		for id, s := range v.Tokens {
			if raw, ok := decodeByteLevel(s); ok {
				b.rawToken[raw] = int32(id)
			}
		}
	}
	return b, nil
}

func (b *bpeTables) byteLevel() bool { return b.rawToken != nil }

// tokenize appends the tokens of one raw fragment.
func (b *bpeTables) tokenize(s *session, dst []int32, frag string) []int32 {
	v := &b.t.v
	if v.EscapeWhitespace {
		frag = escapeSpaces(frag)
	}
	if v.Model == ModelWhitespace {
		// Whitespace separates words and is dropped; each word is
		// pre-tokenized and merged on its own.
		// (own buffers: tokenizeText reuses the session's)
		cps, _ := runes(nil, frag)
		var word []byte
		for _, r := range cps {
			if flagsOf(r)&cWhitespace != 0 {
				if len(word) > 0 {
					dst = b.tokenizeText(s, dst, string(word))
					word = word[:0]
				}
				continue
			}
			if v.Lowercase {
				r = toLower(r)
			}
			word = appendRune(word, r)
		}
		if len(word) > 0 {
			dst = b.tokenizeText(s, dst, string(word))
		}
		return dst
	}
	return b.tokenizeText(s, dst, frag)
}

// tokenizeText pre-tokenizes text and merges each word.
func (b *bpeTables) tokenizeText(s *session, dst []int32, text string) []int32 {
	t := &s.split
	t.cps, text = runes(t.cps, text)
	t.fl = t.fl[:0]
	for _, r := range t.cps {
		t.fl = append(t.fl, flagsOf(r))
	}
	if b.needSym {
		t.syms = t.syms[:0]
		for i, r := range t.cps {
			if r >= 0x80 && t.fl[i]&cWhitespace != 0 {
				r = '\v'
			}
			t.syms = append(t.syms, r)
		}
	}
	s.pieces = preSplit(t, b.rules, s.pieces)
	off, ci := 0, 0
	for _, n := range s.pieces {
		w := 0
		for k := 0; k < int(n); k++ {
			w += runeLen(t.cps[ci+k])
		}
		ci += int(n)
		if w > 0 {
			dst = b.word(s, dst, text[off:off+w])
		}
		off += w
	}
	return dst
}

// word merges one pre-tokenized word.
func (b *bpeTables) word(s *session, dst []int32, w string) []int32 {
	v := &b.t.v
	byteLevel := b.byteLevel()
	if v.IgnoreMerges {
		if id, ok := b.wordToken(w); ok {
			return append(dst, id)
		}
	}
	syms := s.syms[:0]
	if b.pre.newlineTokens && strings.Trim(w, "\n") == "" {
		// Gemma 4: a run of newlines is looked up whole.
		if id, ok := b.t.tokenID[w]; ok {
			return append(dst, id)
		}
	}
	if byteLevel {
		for i := 0; i < len(w); i++ {
			syms = append(syms, symbol{start: int32(i), end: int32(i + 1), prev: int32(i - 1), next: int32(i + 1), piece: b.bytePiece[w[i]]})
		}
	} else {
		for off := 0; off < len(w); {
			n := min(utf8Len(w[off]), len(w)-off)
			i := int32(len(syms))
			p, ok := b.pieceID[w[off:off+n]]
			if !ok {
				p = -1
			}
			syms = append(syms, symbol{start: int32(off), end: int32(off + n), prev: i - 1, next: i + 1, piece: p})
			off += n
		}
	}
	syms[len(syms)-1].next = -1
	h := bigramHeap{a: s.heap[:0], byRank: true}
	try := func(l, r int32) {
		if l < 0 || r < 0 || syms[l].piece < 0 || syms[r].piece < 0 {
			return
		}
		m, ok := b.merges[pairKey(syms[l].piece, syms[r].piece)]
		if !ok {
			return
		}
		h.push(bigram{rank: m.rank, left: l, right: r, lp: syms[l].piece, rp: syms[r].piece, res: m.res})
	}
	for i := 1; i < len(syms); i++ {
		try(int32(i-1), int32(i))
	}
	for h.len() > 0 {
		bg := h.pop()
		l, r := &syms[bg.left], &syms[bg.right]
		if l.end == l.start || r.end == r.start || l.piece != bg.lp || r.piece != bg.rp || l.next != bg.right {
			continue // stale
		}
		l.end = r.end
		l.piece = bg.res
		r.end = r.start
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = bg.left
		}
		try(l.prev, bg.left)
		try(bg.left, l.next)
	}
	s.heap = h.a
	nTok := int32(len(v.Tokens))
	for i := int32(0); i != -1; i = syms[i].next {
		sym := &syms[i]
		if sym.piece >= 0 && sym.piece < nTok {
			dst = append(dst, sym.piece)
			continue
		}
		dst = b.fallback(dst, w[sym.start:sym.end])
	}
	s.syms = syms
	return dst
}

// wordToken looks a whole word up as a token.
func (b *bpeTables) wordToken(w string) (int32, bool) {
	if b.byteLevel() {
		id, ok := b.rawToken[w]
		return id, ok
	}
	id, ok := b.t.tokenID[w]
	return id, ok
}

// fallback spells a symbol that is no token byte by byte: in byte-level
// vocabularies, by the bytes of its characters' UTF-8 (which are rarely
// tokens, so most are dropped, as in llama.cpp); otherwise by <0xXX> tokens.
func (b *bpeTables) fallback(dst []int32, sym string) []int32 {
	if !b.byteLevel() {
		for j := 0; j < len(sym); j++ {
			if id := b.byteTok[sym[j]]; id >= 0 {
				dst = append(dst, id)
			}
		}
		return dst
	}
	for j := 0; j < len(sym); j++ {
		enc := b.byteChar[sym[j]]
		for k := 0; k < len(enc); k++ {
			if id, ok := b.t.tokenID[enc[k:k+1]]; ok {
				dst = append(dst, id)
			}
		}
	}
	return dst
}

// byteRune is GPT-2's byte-to-character map: printable Latin-1 bytes stand
// for themselves, the others (controls, space, DEL, NBSP, soft hyphen) for
// U+0100 onwards in byte order.
var byteRune, runeByte = func() ([256]rune, map[rune]byte) {
	var br [256]rune
	rb := make(map[rune]byte, 256)
	next := rune(256)
	for c := 0; c < 256; c++ {
		if (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF) {
			br[c] = rune(c)
		} else {
			br[c] = next
			next++
		}
		rb[br[c]] = byte(c)
	}
	return br, rb
}()

// decodeByteLevel turns a byte-level token's text back into its bytes, or
// says that the text is not made of byte characters.
func decodeByteLevel(s string) (string, bool) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		r, n, ok := decodeRune(s, i)
		if !ok {
			return "", false
		}
		c, ok := runeByte[r]
		if !ok {
			return "", false
		}
		out = append(out, c)
		i += n
	}
	return string(out), true
}
