package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// piece is the text of a token with control tokens rendered (llama.cpp's
// token_to_piece with special set).
func (t *Tokenizer) piece(id int32) string {
	v := &t.v
	attr := v.Attrs[id]
	text := v.Tokens[id]
	switch {
	case attr&(AttrUnknown|AttrControl|AttrUserDefined) != 0:
		return text
	case attr&AttrNormal != 0:
		if v.Model == ModelSPM || v.Model == ModelWPM || v.EscapeWhitespace {
			return strings.ReplaceAll(text, "\u2581", " ")
		}
		return decodeByteText(text)
	case attr&AttrByte != 0:
		return string([]byte{tokenByte(text)})
	}
	return ""
}

// tokenByte reads the byte of a <0xXX> token as strtol would.
func tokenByte(text string) byte {
	var b byte
	for i := 3; i < len(text) && i < 5; i++ {
		c := text[i]
		switch {
		case '0' <= c && c <= '9':
			b = b<<4 | (c - '0')
		case 'a' <= c && c <= 'f':
			b = b<<4 | (c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			b = b<<4 | (c - 'A' + 10)
		default:
			return b
		}
	}
	return b
}

// decodeByteText turns a byte-level token's characters into its bytes. A
// character outside GPT-2's byte alphabet comes out as llama.cpp writes it:
// [UNK_BYTE_0x<its UTF-8 in hex><the whole token>].
func decodeByteText(text string) string {
	if raw, ok := decodeByteLevel(text); ok {
		return raw
	}
	var b []byte
	for i := 0; i < len(text); {
		r, n, _ := decodeRune(text, i)
		i += n
		if c, ok := runeByte[r]; ok {
			b = append(b, c)
			continue
		}
		const hex = "0123456789abcdef"
		b = append(b, "[UNK_BYTE_0x"...)
		for _, c := range appendRune(nil, r) {
			b = append(b, hex[c>>4], hex[c&15])
		}
		b = append(b, text...)
		b = append(b, ']')
	}
	return string(b)
}

func (t *Tokenizer) buildPieces() {
	t.pieces = make([]string, len(t.v.Tokens))
	for i := range t.pieces {
		t.pieces[i] = t.piece(int32(i))
	}
}

// TokenToPiece is the text of one token, as llama_token_to_piece gives it:
// control and unknown tokens are empty unless special is set; a
// SentencePiece token's ▁ are spaces; a byte token is its byte. An id
// outside the vocabulary is empty.
func (t *Tokenizer) TokenToPiece(id int32, special bool) string {
	if id < 0 || int(id) >= len(t.v.Tokens) {
		return ""
	}
	if !special && t.v.Attrs[id]&(AttrUnknown|AttrControl) != 0 {
		return ""
	}
	t.piecesOnce.Do(t.buildPieces)
	return t.pieces[id]
}

// Detokenize is llama_detokenize (keeping special tokens in the input;
// special renders control tokens' text): the pieces joined, the first one's
// leading space dropped when the vocabulary adds a space prefix, and with
// CleanSpaces the spaces before punctuation and in contractions removed.
// The result is bytes as the tokens spell them, which need not be valid
// UTF-8; a Decoder gives the same text in pieces, with invalid bytes
// replaced.
func (t *Tokenizer) Detokenize(ids []int32, special bool) string {
	var b []byte
	removeSpace := t.v.AddSpacePrefix
	for _, id := range ids {
		p := t.TokenToPiece(id, special)
		if removeSpace && strings.HasPrefix(p, " ") {
			p = p[1:]
		}
		removeSpace = false
		b = append(b, p...)
	}
	if t.v.CleanSpaces {
		b = cleanSpaces(b)
	}
	return string(b)
}

// cleanSpaces is Hugging Face's clean_up_tokenization_spaces as llama.cpp
// implements it, in three passes over the bytes: (1) a space before ? ! . ,
// goes; (2) in " ' " both spaces go; (3) a space before 's 'm 're 've goes.
// The first byte is never looked at as the one after a space.
func cleanSpaces(t []byte) []byte { return cleanSpacesWith(t, nil, nil) }

// cleanSpacesWith is cleanSpaces with scratch buffers for the passes; it
// overwrites t and returns a prefix of it.
func cleanSpacesWith(t []byte, u, w *[]byte) []byte {
	if len(t) == 0 {
		return t
	}
	if u == nil {
		u, w = new([]byte), new([]byte)
	}
	// (1)
	ub := (*u)[:0]
	for i := 0; i < len(t); i++ {
		if t[i] == ' ' && i+1 < len(t) {
			switch t[i+1] {
			case '?', '!', '.', ',':
				continue
			}
		}
		ub = append(ub, t[i])
	}
	// (2) A space removed as the one after an apostrophe no longer counts
	// as the space before the next character.
	wb := append((*w)[:0], ub[0])
	eaten := false
	for i := 1; i < len(ub); i++ {
		x := ub[i]
		prevSpace := ub[i-1] == ' ' && !eaten
		eaten = false
		if x == '\'' && i+1 < len(ub) && prevSpace && ub[i+1] == ' ' {
			wb = wb[:len(wb)-1]
			i++
			eaten = true
		}
		wb = append(wb, x)
	}
	// (3)
	out := append(t[:0], wb[0])
	for i := 1; i < len(wb); i++ {
		x := wb[i]
		if x == '\'' && wb[i-1] == ' ' && i+1 < len(wb) {
			x1 := wb[i+1]
			drop := x1 == 's' || x1 == 'm'
			if !drop && i+2 < len(wb) {
				x2 := wb[i+2]
				drop = (x1 == 'r' || x1 == 'v') && x2 == 'e'
			}
			if drop {
				out = out[:len(out)-1]
			}
		}
		out = append(out, x)
	}
	*u, *w = ub, wb
	return out
}

// Decoder turns a stream of token ids into text as they come: Add returns
// the text that the ids so far complete. Bytes of an unfinished UTF-8
// sequence (byte-fallback tokens, byte-level BPE) wait for the rest, and
// with CleanSpaces a trailing space or apostrophe waits for the character
// that decides whether it stays. What a Decoder emits is always valid
// UTF-8: bytes that cannot become a character come out as U+FFFD, one per
// byte, where Detokenize would keep them. Otherwise the concatenation of
// everything Add and Flush return equals Detokenize of the same ids.
//
// A Decoder is not safe for concurrent use.
type Decoder struct {
	t           *Tokenizer
	special     bool
	removeSpace bool
	pending     []byte // CleanSpaces: bytes whose cleaning is not final
	utf         []byte // cleaned bytes of an unfinished character
	done        []byte // scratch: bytes being cleaned
	s1, s2      []byte // scratch for the cleaning passes
}

// NewDecoder starts a stream; special renders control tokens' text.
func (t *Tokenizer) NewDecoder(special bool) *Decoder {
	return &Decoder{t: t, special: special, removeSpace: t.v.AddSpacePrefix}
}

// Continuing marks the stream as the continuation of text already shown
// (a generation after its prompt): the first token keeps its leading
// space, which only the start of a text drops. It returns d.
func (d *Decoder) Continuing() *Decoder {
	d.removeSpace = false
	return d
}

// Add takes the next token and returns the text it completes (often "",
// sometimes the text of earlier tokens too).
func (d *Decoder) Add(id int32) string {
	p := d.t.TokenToPiece(id, d.special)
	if d.removeSpace && strings.HasPrefix(p, " ") {
		p = p[1:]
	}
	d.removeSpace = false
	if !d.t.v.CleanSpaces {
		if len(d.utf) == 0 && utf8.ValidString(p) {
			return p // the common case: no copy
		}
		return d.emitString(p)
	}
	old := len(d.pending)
	d.pending = append(d.pending, p...)
	// Cut after the last byte that the cleaning rules never look past:
	// what precedes it cleans the same whatever follows (see
	// docs/adr/0005-tokenizer.md).
	cut := 0
	for c := len(d.pending); c > old && c > 0; c-- {
		switch d.pending[c-1] {
		case ' ', '\'', 'r', 'v':
			continue
		}
		cut = c
		break
	}
	if cut == 0 {
		return ""
	}
	d.done = cleanSpacesWith(append(d.done[:0], d.pending[:cut]...), &d.s1, &d.s2)
	d.pending = append(d.pending[:0], d.pending[cut:]...)
	return d.emit(d.done, false)
}

func (d *Decoder) emitString(p string) string {
	d.utf = append(d.utf, p...)
	out, n := validPrefix(d.utf, false)
	d.utf = append(d.utf[:0], d.utf[n:]...)
	return out
}

// Flush ends the stream: it returns what was held back, with an unfinished
// character as U+FFFD per byte, and readies the Decoder for a new stream.
func (d *Decoder) Flush() string {
	var s string
	if len(d.pending) > 0 {
		s = d.emit(cleanSpaces(d.pending), true)
	} else {
		s = d.emit(nil, true)
	}
	d.Reset()
	return s
}

// Reset forgets everything held back and starts a new stream.
func (d *Decoder) Reset() {
	d.pending = d.pending[:0]
	d.utf = d.utf[:0]
	d.removeSpace = d.t.v.AddSpacePrefix
}

// emit passes cleaned bytes through the UTF-8 stage.
func (d *Decoder) emit(b []byte, final bool) string {
	d.utf = append(d.utf, b...)
	out, n := validPrefix(d.utf, final)
	d.utf = append(d.utf[:0], d.utf[n:]...)
	return out
}

// validPrefix returns the bytes of b that form whole characters, invalid
// bytes replaced by U+FFFD, and how many bytes of b it used; it stops before
// an unfinished sequence unless final.
func validPrefix(b []byte, final bool) (string, int) {
	i := 0
	clean := true
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		if !final && !utf8.FullRune(b[i:]) {
			break
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			clean = false
		}
		i += n
	}
	if clean {
		return string(b[:i]), i
	}
	var sb strings.Builder
	for j := 0; j < i; {
		r, n := utf8.DecodeRune(b[j:])
		if r == utf8.RuneError && n == 1 {
			sb.WriteString("\uFFFD")
		} else {
			sb.Write(b[j : j+n])
		}
		j += n
	}
	return sb.String(), i
}

// ValidUTF8 replaces each byte of s that is not part of a valid UTF-8
// sequence by U+FFFD: what a Decoder emits for the bytes Detokenize
// returns.
func ValidUTF8(s string) string {
	out, _ := validPrefix([]byte(s), true)
	return out
}
