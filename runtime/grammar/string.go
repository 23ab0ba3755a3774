package grammar

import (
	"fmt"
	"strings"
	"unicode"
)

// String renders the grammar as GBNF, one rule a line in the order of
// their first mention (the order Parse numbers them in, so that Parse
// reads it back to a grammar that renders the same).
func (g *Grammar) String() string {
	var b strings.Builder
	names := g.printNames()
	for _, id := range g.mentionOrder() {
		r := g.Rules[id]
		b.WriteString(names[id])
		b.WriteString(" ::=")
		for i, alt := range r.Alts {
			if i > 0 {
				b.WriteString(" |")
			}
			writeAlt(&b, names, alt)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func writeAlt(b *strings.Builder, names []string, alt []Elem) {
	if len(alt) == 0 {
		b.WriteString(` ""`) // a bare trailing | would swallow the newline
		return
	}
	inLit := false
	for _, e := range alt {
		if e.Kind == Chars && len(e.Ranges) == 1 && e.Ranges[0].Lo == e.Ranges[0].Hi {
			if !inLit {
				b.WriteString(` "`)
				inLit = true
			}
			writeChar(b, e.Ranges[0].Lo, `"\`)
			continue
		}
		if inLit {
			b.WriteByte('"')
			inLit = false
		}
		b.WriteByte(' ')
		switch e.Kind {
		case Ref:
			if e.Rule >= 0 && e.Rule < len(names) {
				b.WriteString(names[e.Rule])
			} else {
				fmt.Fprintf(b, "rule-%d", e.Rule)
			}
		case Token:
			if e.Not {
				b.WriteByte('!')
			}
			if e.Text != "" {
				b.WriteString(e.Text)
			} else {
				fmt.Fprintf(b, "<[%d]>", e.Token)
			}
		default:
			writeClass(b, e.Ranges)
		}
	}
	if inLit {
		b.WriteByte('"')
	}
}

// Literal is GBNF for the exact text s: a quoted literal, escaped so
// that Parse reads back s (the JSON-schema converter and the tool-call
// grammars write their literals with it).
func Literal(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		writeChar(&b, r, `"\`)
	}
	b.WriteByte('"')
	return b.String()
}

func writeClass(b *strings.Builder, rs []Range) {
	if len(rs) == 1 && rs[0].Lo == 0 && rs[0].Hi == MaxRune {
		b.WriteByte('.')
		return
	}
	b.WriteByte('[')
	if len(rs) > 0 && rs[0].Lo == 0 { // shorter negated
		b.WriteByte('^')
		rs = complement(rs)
	}
	for i, r := range rs {
		if i == 0 && r.Lo == '^' { // a leading ^ would negate
			b.WriteString(`\x5E`)
		} else {
			writeChar(b, r.Lo, `]\-[`)
		}
		if r.Hi != r.Lo {
			b.WriteByte('-')
			writeChar(b, r.Hi, `]\-[`)
		}
	}
	b.WriteByte(']')
}

func writeChar(b *strings.Builder, r rune, special string) {
	switch {
	case r == '\n':
		b.WriteString(`\n`)
	case r == '\t':
		b.WriteString(`\t`)
	case r == '\r':
		b.WriteString(`\r`)
	case r < 0x80 && strings.ContainsRune(special, r):
		b.WriteByte('\\')
		b.WriteRune(r)
	case r < 0x20 || r == 0x7f:
		fmt.Fprintf(b, `\x%02X`, r)
	case r >= 0xD800 && r <= 0xDFFF || r > 0xFFFF && !unicode.IsPrint(r) || r >= 0x80 && !unicode.IsPrint(r):
		if r <= 0xFFFF {
			fmt.Fprintf(b, `\u%04X`, r)
		} else {
			fmt.Fprintf(b, `\U%08X`, r)
		}
	default:
		b.WriteRune(r)
	}
}

// printNames are the rules' names as GBNF can spell them: generated
// names ("value_3") use '-' for '_', which GBNF names cannot hold, kept
// distinct from every other name.
func (g *Grammar) printNames() []string {
	names := make([]string, len(g.Rules))
	used := map[string]bool{}
	for _, r := range g.Rules {
		used[r.Name] = true
	}
	for id, r := range g.Rules {
		n := r.Name
		ok := n != ""
		for i := 0; i < len(n); i++ {
			if !isWordChar(n[i]) {
				ok = false
			}
		}
		if !ok {
			base := strings.Map(func(c rune) rune {
				if c < 0x80 && isWordChar(byte(c)) {
					return c
				}
				return '-'
			}, n)
			if base == "" {
				base = "rule"
			}
			n = base
			for i := 2; used[n]; i++ {
				n = fmt.Sprintf("%s-%d", base, i)
			}
			used[n] = true
		}
		names[id] = n
	}
	return names
}

// mentionOrder lists the rule ids breadth first from the first rule,
// each in the order its name first appears, then any rule not reached.
func (g *Grammar) mentionOrder() []int {
	seen := make([]bool, len(g.Rules))
	order := make([]int, 0, len(g.Rules))
	for start := range g.Rules {
		if seen[start] {
			continue
		}
		seen[start] = true
		order = append(order, start)
		for i := len(order) - 1; i < len(order); i++ {
			for _, alt := range g.Rules[order[i]].Alts {
				for _, e := range alt {
					if e.Kind == Ref && e.Rule >= 0 && e.Rule < len(g.Rules) && !seen[e.Rule] {
						seen[e.Rule] = true
						order = append(order, e.Rule)
					}
				}
			}
		}
	}
	return order
}
