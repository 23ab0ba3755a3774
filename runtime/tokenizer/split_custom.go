package tokenizer

// Hand-written splitters for the patterns llama.cpp does not hand to
// std::regex but matches with code of its own. Where that code's behaviour
// departs from what the pattern says (the afmoe digit splitter glues the
// text before a number to its first group; Kimi-K2's cannot tell upper from
// lower case), these follow llama.cpp, since token ids are what must agree.
//
// Each splitter cuts the segment [start, end) of the codepoints into pieces
// and appends their lengths to out. Codepoints outside the segment are out
// of reach: reading past end yields no class bits at all, which is how the
// patterns' lookaheads see the end of the text.

// splitText is the text a pre-tokenizer works on: its codepoints, their
// class bits, and the symbols regex patterns run over (non-ASCII whitespace
// turned into U+000B).
type splitText struct {
	cps  []rune
	fl   []uint16
	syms []rune
	m    matcher
}

func (t *splitText) flagsAt(i, end int) uint16 {
	if i < end {
		return t.fl[i]
	}
	return 0
}

func (t *splitText) cpAt(i, end int) rune {
	if i < end {
		return t.cps[i]
	}
	return -1
}

// contraction reports the length of 's 't 're 've 'm 'll 'd at i (case
// folded when fold is set), or 0.
func (t *splitText) contraction(i, end int, fold bool) int {
	if t.cps[i] != '\'' || i+1 >= end {
		return 0
	}
	low := func(r rune) rune {
		if fold {
			return toLower(r)
		}
		return r
	}
	c1 := low(t.cps[i+1])
	switch c1 {
	case 's', 't', 'm', 'd':
		return 2
	}
	if i+2 < end {
		c2 := low(t.cps[i+2])
		if (c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l') {
			return 3
		}
	}
	return 0
}

// whitespaceRun measures the whitespace at i: its length and the position
// just after its last \r or \n (0 if it has none).
func (t *splitText) whitespaceRun(i, end int) (n, afterNL int) {
	for i+n < end && t.fl[i+n]&cWhitespace != 0 {
		if c := t.cps[i+n]; c == '\r' || c == '\n' {
			afterNL = i + n + 1
		}
		n++
	}
	return n, afterNL
}

// splitGPT2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func splitGPT2(t *splitText, start, end int, out []int32) []int32 {
	prev := start
	emit := func(e int) {
		if e > prev {
			out = append(out, int32(e-prev))
		}
		prev = e
	}
	for pos := start; pos < end; {
		if n := t.contraction(pos, end, false); n > 0 {
			pos += n
			emit(pos)
			continue
		}
		cp := t.cps[pos]
		f := t.fl[pos]
		if cp == ' ' {
			f = t.flagsAt(pos+1, end)
		}
		switch {
		case f&cLetter != 0, f&cNumber != 0:
			class := f & (cLetter | cNumber)
			if cp == ' ' {
				pos++
			}
			for t.flagsAt(pos, end)&class != 0 {
				pos++
			}
			emit(pos)
			continue
		case f != 0 && f&(cWhitespace|cLetter|cNumber) == 0:
			if cp == ' ' {
				pos++
			}
			for g := t.flagsAt(pos, end); g != 0 && g&(cWhitespace|cLetter|cNumber) == 0; g = t.flagsAt(pos, end) {
				pos++
			}
			emit(pos)
			continue
		}
		n, _ := t.whitespaceRun(pos, end)
		switch {
		case n > 1 && pos+n < end: // \s+(?!\S): leave the last one to the next word
			pos += n - 1
		case n > 0:
			pos += n
		default:
			pos++
		}
		emit(pos)
	}
	return out
}

// splitLlama3Like covers three patterns that differ only in how many digits
// make a group and whether marks count as letters:
//
//	llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//	qwen2:  the same with \p{N} for \p{N}{1,3}
//	qwen35: qwen2 with [\p{L}\p{M}] for \p{L}
func splitLlama3Like(t *splitText, start, end int, out []int32, digits int, word uint16) []int32 {
	prev := start
	emit := func(e int) {
		if e > prev {
			out = append(out, int32(e-prev))
		}
		prev = e
	}
	for pos := start; pos < end; {
		if n := t.contraction(pos, end, true); n > 0 {
			pos += n
			emit(pos)
			continue
		}
		cp := t.cps[pos]
		f := t.fl[pos]
		// [^\r\n\p{L}\p{N}]?WORD+
		if cp != '\r' && cp != '\n' && f&cNumber == 0 && (f&word != 0 || t.flagsAt(pos+1, end)&word != 0) {
			pos++
			for t.flagsAt(pos, end)&word != 0 {
				pos++
			}
			emit(pos)
			continue
		}
		// \p{N}{1,digits}
		if f&cNumber != 0 {
			n := 0
			for t.flagsAt(pos, end)&cNumber != 0 {
				pos++
				if n++; n == digits {
					emit(pos)
					n = 0
				}
			}
			emit(pos)
			continue
		}
		// ' ?[^\s\p{L}\p{N}]+[\r\n]*' (and \p{M} with word = L|M)
		stop := cWhitespace | word | cNumber
		f2 := f
		if cp == ' ' {
			f2 = t.flagsAt(pos+1, end)
		}
		if f2&stop == 0 && f != 0 && f2 != 0 {
			if cp == ' ' {
				pos++
			}
			for g := t.flagsAt(pos, end); g != 0 && g&stop == 0; g = t.flagsAt(pos, end) {
				pos++
			}
			for c := t.cpAt(pos, end); c == '\r' || c == '\n'; c = t.cpAt(pos, end) {
				pos++
			}
			emit(pos)
			continue
		}
		n, afterNL := t.whitespaceRun(pos, end)
		switch {
		case afterNL > 0: // \s*[\r\n]+
			pos = afterNL
		case n > 1 && pos+n < end: // \s+(?!\S)
			pos += n - 1
		case n > 0: // \s+
			pos += n
		default:
			pos++
		}
		emit(pos)
	}
	return out
}

// splitKimiK2 is llama.cpp's reading of Kimi-K2's pattern:
//
//	[\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|...|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// in which the two word alternatives become "an optional leading character
// and a run of non-Han letters, then an optional contraction".
func splitKimiK2(t *splitText, start, end int, out []int32) []int32 {
	prev := start
	emit := func(e int) {
		if e > prev {
			out = append(out, int32(e-prev))
		}
		prev = e
	}
	nonHanLetter := func(i int) bool {
		return t.flagsAt(i, end)&cLetter != 0 && !isHan(t.cps[i])
	}
	for pos := start; pos < end; {
		cp := t.cps[pos]
		f := t.fl[pos]
		if isHan(cp) {
			for pos < end && isHan(t.cps[pos]) {
				pos++
			}
			emit(pos)
			continue
		}
		leading := cp != '\r' && cp != '\n' && f&(cLetter|cNumber) == 0
		if (f&cLetter != 0) || (leading && nonHanLetter(pos+1)) {
			if leading {
				pos++
			}
			for nonHanLetter(pos) {
				pos++
			}
			if pos < end {
				pos += t.contraction(pos, end, true)
			}
			emit(pos)
			continue
		}
		if f&cNumber != 0 {
			n := 0
			for t.flagsAt(pos, end)&cNumber != 0 {
				pos++
				if n++; n == 3 {
					emit(pos)
					n = 0
				}
			}
			emit(pos)
			continue
		}
		stop := cWhitespace | cLetter | cNumber
		f2 := f
		if cp == ' ' {
			f2 = t.flagsAt(pos+1, end)
		}
		if f2 != 0 && f2&stop == 0 {
			if cp == ' ' {
				pos++
			}
			for g := t.flagsAt(pos, end); g != 0 && g&stop == 0; g = t.flagsAt(pos, end) {
				pos++
			}
			for c := t.cpAt(pos, end); c == '\r' || c == '\n'; c = t.cpAt(pos, end) {
				pos++
			}
			emit(pos)
			continue
		}
		n, afterNL := t.whitespaceRun(pos, end)
		switch {
		case afterNL > 0:
			pos = afterNL
		case n > 1 && pos+n < end:
			pos += n - 1
		case n > 0:
			pos += n
		default:
			pos++
		}
		emit(pos)
	}
	return out
}

// splitDigitGroups cuts each run of \p{N} into groups of three counted from
// the right (1234567: 1, 234, 567). As in llama.cpp, the text before a run
// is not a piece of its own but joins the run's first group ("ab12345" gives
// "ab12", "345"). llama.cpp uses it for afmoe's \p{AFMoE_digits} and for
// tiny_aya's \d{1,3}(?=(?:\d{3})*\b).
func splitDigitGroups(t *splitText, start, end int, out []int32) []int32 {
	prev := start
	emit := func(e int) {
		if e > prev {
			out = append(out, int32(e-prev))
		}
		prev = e
	}
	for pos := start; pos < end; {
		if t.fl[pos]&cNumber == 0 {
			pos++
			continue
		}
		run := pos
		for pos < end && t.fl[pos]&cNumber != 0 {
			pos++
		}
		cur := run
		if r := (pos - run) % 3; r > 0 {
			cur += r
			emit(cur)
		}
		for cur < pos {
			cur += 3
			emit(cur)
		}
	}
	emit(end)
	return out
}

// splitNewlines: [^\n]+|[\n]+
func splitNewlines(t *splitText, start, end int, out []int32) []int32 {
	for pos := start; pos < end; {
		nl := t.cps[pos] == '\n'
		run := pos
		for pos < end && (t.cps[pos] == '\n') == nl {
			pos++
		}
		out = append(out, int32(pos-run))
	}
	return out
}

// splitThousands: (?=(\d{3})+(?!\d)), which matches only empty strings, at
// each position followed by a run of ASCII digits whose length is a
// positive multiple of three; the text is cut there. Found by scanning runs
// once, where the pattern itself rescans the rest of a run at every digit.
func splitThousands(t *splitText, start, end int, out []int32) []int32 {
	prev := start
	for pos := start; pos < end; {
		if c := t.cps[pos]; c < '0' || c > '9' {
			pos++
			continue
		}
		run := pos
		for pos < end && t.cps[pos] >= '0' && t.cps[pos] <= '9' {
			pos++
		}
		for cut := run; cut < pos; cut++ {
			if (pos-cut)%3 == 0 && cut > prev {
				out = append(out, int32(cut-prev))
				prev = cut
			}
		}
	}
	if end > prev {
		out = append(out, int32(end-prev))
	}
	return out
}
