package grammar

// Grammar is a parsed GBNF grammar: rules of alternatives of elements.
// Repetitions (*, +, ?, {m,n}) and parenthesized groups have been turned
// into rules of their own, so an element is only a code-point class, a
// reference to a rule, or a token.
type Grammar struct {
	// Rules, indexed by rule id. Rules written in the source keep their
	// names; generated ones are named after the rule they occur in
	// ("value_3"), as llama.cpp names them.
	Rules []Rule
	// Root is the id of the start rule ("root" unless asked otherwise).
	Root int
	// Warnings are what Parse found odd but llama.cpp accepts: rules the
	// start rule never reaches.
	Warnings []*Error
}

// Rule is one rule: a choice among alternatives, each a sequence of
// elements. An empty alternative matches the empty string.
type Rule struct {
	Name string
	Alts [][]Elem
	// Line and Col locate the rule's definition in the source (1-based;
	// 0 for generated rules: see Of).
	Line, Col int
	// Of is, for a generated rule, the id of the written rule it was made
	// from (its own id for a written rule).
	Of int
}

// Kind is the kind of an element.
type Kind uint8

const (
	// Chars matches one code point in Ranges.
	Chars Kind = iota
	// Ref matches the rule Rule.
	Ref
	// Token matches the one token Token (llama.cpp's <[id]> or <text>),
	// or, when Not, any one token but that one.
	Token
)

// Elem is one element of an alternative.
type Elem struct {
	Kind Kind
	// Ranges (Chars) are sorted, disjoint, non-adjacent inclusive ranges of
	// code points: a negated class and '.' are already resolved into the
	// ranges they match within 0..0x10FFFF.
	Ranges []Range
	// Rule is the referenced rule's id (Ref).
	Rule int
	// Token is the token id (Token); Text its spelling, when written as
	// <text> (resolved against a vocabulary at match time).
	Token int32
	Text  string
	Not   bool
}

// Range is an inclusive range of code points.
type Range struct{ Lo, Hi rune }

// MaxRune is the largest code point a class may match.
const MaxRune rune = 0x10FFFF
