package tokenizer

import (
	"sync"
	"unicode"
)

// Codepoint classes, one bit each, the way llama.cpp's pre-tokenizers see
// them: exactly one of the general-category bits (L, N, P, S, M, Z, C, or
// undefined for unassigned codepoints), plus whitespace (the Unicode
// White_Space property). Go's unicode tables are the source; llama.cpp
// generates the same classes from UnicodeData.txt, so the two agree except on
// codepoints assigned in a Unicode version only one of them knows.
const (
	cUndefined   uint16 = 1 << iota // Cn
	cNumber                         // \p{N}
	cLetter                         // \p{L}
	cSeparator                      // \p{Z}
	cMark                           // \p{M}
	cPunctuation                    // \p{P}
	cSymbol                         // \p{S}
	cControl                        // \p{C}: Cc, Cf, Co, Cs
	cWhitespace                     // \s
)

// maxRune is one past the largest codepoint.
const maxRune = 0x110000

var (
	bmpFlagsOnce sync.Once
	bmpFlags     []uint16 // flags of U+0000..U+FFFF, built on first use
)

// flagsOf returns the class bits of a codepoint.
func flagsOf(r rune) uint16 {
	if r >= 0 && r < 0x10000 {
		bmpFlagsOnce.Do(buildBMPFlags)
		return bmpFlags[r]
	}
	return computeFlags(r)
}

func buildBMPFlags() {
	t := make([]uint16, 0x10000)
	for r := range t {
		t[r] = computeFlags(rune(r))
	}
	bmpFlags = t
}

func computeFlags(r rune) uint16 {
	if r < 0 || r >= maxRune {
		return cUndefined
	}
	var f uint16
	switch {
	case unicode.IsLetter(r):
		f = cLetter
	case unicode.IsNumber(r):
		f = cNumber
	case unicode.IsMark(r):
		f = cMark
	case unicode.IsPunct(r):
		f = cPunctuation
	case unicode.IsSymbol(r):
		f = cSymbol
	case unicode.Is(unicode.Z, r):
		f = cSeparator
	case unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Co, r) || unicode.Is(unicode.Cs, r):
		// (not unicode.C, which counts unassigned codepoints too)
		f = cControl
	default:
		f = cUndefined
	}
	if unicode.Is(unicode.White_Space, r) {
		f |= cWhitespace
	}
	return f
}

// decodeRune decodes one codepoint the way llama.cpp does: it checks the
// lead byte and the continuation bytes, but accepts overlong forms and
// surrogates. It returns ok=false (and size 1) where llama.cpp substitutes
// U+FFFD for one byte. Codepoints above U+10FFFF, which llama.cpp decodes and
// then fails to encode again, are refused here.
func decodeRune(s string, i int) (r rune, size int, ok bool) {
	b0 := s[i]
	switch {
	case b0 < 0x80:
		return rune(b0), 1, true
	case b0&0x40 == 0:
		return 0xFFFD, 1, false
	case b0&0x20 == 0:
		if i+1 < len(s) && s[i+1]&0xC0 == 0x80 {
			return rune(b0&0x1F)<<6 | rune(s[i+1]&0x3F), 2, true
		}
	case b0&0x10 == 0:
		if i+2 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 {
			return rune(b0&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F), 3, true
		}
	case b0&0x08 == 0:
		if i+3 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 && s[i+3]&0xC0 == 0x80 {
			r := rune(b0&0x07)<<18 | rune(s[i+1]&0x3F)<<12 | rune(s[i+2]&0x3F)<<6 | rune(s[i+3]&0x3F)
			if r < maxRune {
				return r, 4, true
			}
		}
	}
	return 0xFFFD, 1, false
}

// appendRune encodes a codepoint in the shortest form, surrogates included
// (Go's utf8.AppendRune would replace those).
func appendRune(b []byte, r rune) []byte {
	switch {
	case r < 0x80:
		return append(b, byte(r))
	case r < 0x800:
		return append(b, 0xC0|byte(r>>6), 0x80|byte(r)&0x3F)
	case r < 0x10000:
		return append(b, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	default:
		return append(b, 0xF0|byte(r>>18), 0x80|byte(r>>12)&0x3F, 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
}

// utf8Len is the length of a UTF-8 sequence as its lead byte announces it;
// continuation and invalid lead bytes count as one (llama.cpp's rule for
// cutting text into symbols).
func utf8Len(b byte) int {
	switch b >> 4 {
	case 0xC, 0xD:
		return 2
	case 0xE:
		return 3
	case 0xF:
		return 4
	}
	return 1
}

// runes decodes text into codepoints. When the text holds bytes that do not
// decode, or overlong forms, the second result is the text re-encoded from
// the codepoints (each bad byte becoming U+FFFD), which is what llama.cpp
// goes on to split; otherwise it is text itself.
func runes(dst []rune, text string) ([]rune, string) {
	dst = dst[:0]
	clean := true
	for i := 0; i < len(text); {
		r, n, ok := decodeRune(text, i)
		if !ok || (n > 1 && runeLen(r) != n) {
			clean = false
		}
		dst = append(dst, r)
		i += n
	}
	if clean {
		return dst, text
	}
	b := make([]byte, 0, len(text)+8)
	for _, r := range dst {
		b = appendRune(b, r)
	}
	return dst, string(b)
}

// runeLen is the length of the shortest encoding of r.
func runeLen(r rune) int {
	switch {
	case r < 0x80:
		return 1
	case r < 0x800:
		return 2
	case r < 0x10000:
		return 3
	}
	return 4
}

// toLower is the simple lowercase mapping.
func toLower(r rune) rune {
	if r < 0x80 {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	return unicode.ToLower(r)
}

// isHan reports the CJK ideograph blocks llama.cpp's Kimi-K2 splitter
// treats as Han.
func isHan(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0x2CEB0 && r <= 0x2EBEF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}

// isChineseChar is BERT's test for a CJK character, which WordPiece isolates.
// Its fifth range starts at U+2B920, not U+2B820, as Hugging Face's code has
// it.
func isChineseChar(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}

// isSpaceASCII is C's isspace in the C locale, which llama.cpp uses to strip
// whitespace around special tokens.
func isSpaceASCII(b byte) bool {
	return b == ' ' || (b >= '\t' && b <= '\r')
}
