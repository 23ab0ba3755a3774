package compiler

import (
	"crypto/sha256"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// The rules file: one rule per line,
//
//	rule    = NAME ":" pattern [ "if" cond { "&&" cond } ] "=>" RESULT [ "label" LABEL ]
//	pattern = term
//	term    = KIND { "|" KIND } "(" [ arg { "," arg } ] ")"
//	arg     = VAR | "_" | term
//	cond    = NAME [ "(" VAR ")" ]
//
// A term matches a node of one of its kinds whose inputs match its
// arguments, position by position and as many: a VAR binds the value (the
// same VAR twice must be the same value), "_" takes any value, and a nested
// term matches the node that defines the value. Conditions are predicates
// the compiler knows (ruleConds); RESULT names a rewrite it knows
// (ruleResults); LABEL names the node(s) the rewrite makes, after the
// layer ("attn.qkv" → "L3.attn.qkv"). '#' starts a comment.
//
// Rules are tried in file order and the first that matches wins; the pass
// repeats until no rule fires. A rule whose pattern is the same as an
// earlier rule's (up to variable names) and whose conditions include all of
// the earlier one's can never fire: the file is refused.

//go:embed fusion.rules
var fusionRulesSrc string

// FusionRulesFile is the name rules are reported under: "fusion.rules:12".
const FusionRulesFile = "fusion.rules"

// Rule is one parsed rule.
type Rule struct {
	Name   string
	Pos    string // file:line
	Root   *Term
	Conds  []Cond
	Result string
	Label  string
	index  int
}

// Term is one op of a pattern.
type Term struct {
	Kinds []string
	Args  []Arg
}

// Arg is an argument of a term: a variable, "_", or a nested term.
type Arg struct {
	Var  string
	Term *Term
}

// Cond is a condition of a rule: a predicate, perhaps of a variable.
type Cond struct {
	Name, Var string
}

func (c Cond) String() string {
	if c.Var != "" {
		return c.Name + "(" + c.Var + ")"
	}
	return c.Name
}

// ID is the rule as plans record it: "fusion.rules:12 qkv_concat".
func (r *Rule) ID() string { return r.Pos + " " + r.Name }

// String writes the rule back in the file's syntax.
func (r *Rule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", r.Name, r.Root.canon(nil))
	for i, c := range r.Conds {
		if i == 0 {
			b.WriteString(" if ")
		} else {
			b.WriteString(" && ")
		}
		b.WriteString(c.String())
	}
	fmt.Fprintf(&b, " => %s", r.Result)
	if r.Label != "" {
		fmt.Fprintf(&b, " label %s", r.Label)
	}
	return b.String()
}

// canon writes the term with variables renamed in order of appearance
// (v0, v1, ...) when names is non-nil, so that patterns equal up to
// renaming compare equal; with nil it keeps the names.
func (t *Term) canon(names map[string]string) string {
	var b strings.Builder
	b.WriteString(strings.Join(t.Kinds, "|"))
	b.WriteByte('(')
	for i, a := range t.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		switch {
		case a.Term != nil:
			b.WriteString(a.Term.canon(names))
		case a.Var == "_" || names == nil:
			b.WriteString(a.Var)
		default:
			n, ok := names[a.Var]
			if !ok {
				n = fmt.Sprintf("v%d", len(names))
				names[a.Var] = n
			}
			b.WriteString(n)
		}
	}
	b.WriteByte(')')
	return b.String()
}

// ErrRules marks a malformed rules file.
var ErrRules = errors.New("rules")

// ParseRules parses a rules file; errors name file:line and collect every
// problem.
func ParseRules(file, src string) ([]*Rule, error) {
	var rules []*Rule
	var errs []string
	fail := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Sprintf("%s:%d: %s", file, line, fmt.Sprintf(format, args...)))
	}
	names := map[string]string{}
	for i, text := range strings.Split(src, "\n") {
		line := i + 1
		if j := strings.IndexByte(text, '#'); j >= 0 {
			text = text[:j]
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		r, err := parseRule(text)
		if err != nil {
			fail(line, "%v", err)
			continue
		}
		r.Pos = fmt.Sprintf("%s:%d", file, line)
		if at, dup := names[r.Name]; dup {
			fail(line, "rule %s is already defined at %s", r.Name, at)
			continue
		}
		names[r.Name] = r.Pos
		if err := checkRule(r); err != nil {
			fail(line, "%s: %v", r.Name, err)
			continue
		}
		for _, e := range rules {
			if shadows(e, r) {
				fail(line, "rule %s can never fire: rule %s at %s matches the same pattern under fewer conditions", r.Name, e.Name, e.Pos)
			}
		}
		r.index = len(rules)
		rules = append(rules, r)
	}
	if len(rules) > 64 {
		fail(0, "%d rules; at most 64", len(rules))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrRules, strings.Join(errs, "\n"))
	}
	return rules, nil
}

// shadows reports whether earlier rule a makes rule b unreachable: the same
// pattern up to renaming, and every condition of a among b's.
func shadows(a, b *Rule) bool {
	if a.Root.canon(map[string]string{}) != b.Root.canon(map[string]string{}) {
		return false
	}
	// Compare conditions under b's renaming of a's variables: both patterns
	// rename in the same order, so map each through its own renaming.
	na, nb := map[string]string{}, map[string]string{}
	a.Root.canon(na)
	b.Root.canon(nb)
	have := map[string]bool{}
	for _, c := range b.Conds {
		have[c.Name+"("+nb[c.Var]+")"] = true
	}
	for _, c := range a.Conds {
		if !have[c.Name+"("+na[c.Var]+")"] {
			return false
		}
	}
	return true
}

// checkRule holds a rule to the kinds, conditions and results the
// compiler knows, and its conditions' variables to the pattern's.
func checkRule(r *Rule) error {
	vars := map[string]bool{}
	var walk func(t *Term) error
	walk = func(t *Term) error {
		for _, k := range t.Kinds {
			if !slices.Contains(nodeKinds, k) {
				return fmt.Errorf("unknown op %q", k)
			}
		}
		for _, a := range t.Args {
			if a.Term != nil {
				if err := walk(a.Term); err != nil {
					return err
				}
			} else if a.Var != "_" {
				vars[a.Var] = true
			}
		}
		return nil
	}
	if err := walk(r.Root); err != nil {
		return err
	}
	for _, c := range r.Conds {
		cd, ok := ruleConds[c.Name]
		if !ok {
			return fmt.Errorf("unknown condition %q", c.Name)
		}
		if cd.takesVar != (c.Var != "") {
			return fmt.Errorf("condition %s takes %s", c.Name, map[bool]string{true: "a variable", false: "no argument"}[cd.takesVar])
		}
		if c.Var != "" && !vars[c.Var] {
			return fmt.Errorf("condition %s: %s is not a variable of the pattern", c, c.Var)
		}
	}
	if _, ok := ruleResults[r.Result]; !ok {
		return fmt.Errorf("unknown result %q", r.Result)
	}
	return nil
}

// parseRule parses one line.
func parseRule(text string) (*Rule, error) {
	p := &ruleParser{toks: tokenize(text)}
	r := &Rule{}
	r.Name = p.ident()
	p.expect(":")
	r.Root = p.term()
	if p.peek() == "if" {
		p.next()
		for {
			c := Cond{Name: p.ident()}
			if p.peek() == "(" {
				p.next()
				c.Var = p.ident()
				p.expect(")")
			}
			r.Conds = append(r.Conds, c)
			if p.peek() != "&&" {
				break
			}
			p.next()
		}
	}
	p.expect("=>")
	r.Result = p.ident()
	if p.peek() == "label" {
		p.next()
		r.Label = p.next()
	}
	if p.err == nil && p.peek() != "" {
		p.err = fmt.Errorf("unexpected %q after the rule", p.peek())
	}
	return r, p.err
}

type ruleParser struct {
	toks []string
	err  error
}

func (p *ruleParser) peek() string {
	if len(p.toks) == 0 {
		return ""
	}
	return p.toks[0]
}

func (p *ruleParser) next() string {
	t := p.peek()
	if t == "" {
		if p.err == nil {
			p.err = errors.New("unexpected end of rule")
		}
		return ""
	}
	p.toks = p.toks[1:]
	return t
}

func (p *ruleParser) expect(s string) {
	if t := p.next(); t != s && p.err == nil {
		p.err = fmt.Errorf("expected %q, found %q", s, t)
	}
}

func (p *ruleParser) ident() string {
	t := p.next()
	if p.err == nil && !isIdent(t) {
		p.err = fmt.Errorf("expected a name, found %q", t)
	}
	return t
}

func (p *ruleParser) term() *Term {
	t := &Term{Kinds: []string{p.ident()}}
	for p.peek() == "|" {
		p.next()
		t.Kinds = append(t.Kinds, p.ident())
	}
	p.expect("(")
	for p.err == nil && p.peek() != ")" {
		if len(t.Args) > 0 {
			p.expect(",")
		}
		name := p.ident()
		if p.peek() == "(" || p.peek() == "|" {
			p.toks = append([]string{name}, p.toks...)
			t.Args = append(t.Args, Arg{Term: p.term()})
		} else {
			t.Args = append(t.Args, Arg{Var: name})
		}
	}
	p.expect(")")
	return t
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r != '_' && r != '.' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// tokenize splits a rule into names and the punctuation : ( ) , | && =>.
func tokenize(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case strings.HasPrefix(s[i:], "&&") || strings.HasPrefix(s[i:], "=>"):
			out = append(out, s[i:i+2])
			i += 2
		case strings.ContainsRune(":(),|", rune(c)):
			out = append(out, string(c))
			i++
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\r:(),|&=", rune(s[j])) {
				j++
			}
			if j == i {
				j++
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	return out
}

// builtinRules parses the embedded fusion.rules once.
var builtinRules = sync.OnceValues(func() ([]*Rule, error) {
	return ParseRules(FusionRulesFile, fusionRulesSrc)
})

// Rules returns the compiler's fusion and lowering rules, in order.
func Rules() ([]*Rule, error) { return builtinRules() }

// rulesDigest is the SHA-256 of the rules file, for the plan's spec digest.
func rulesDigest() [32]byte { return sha256.Sum256([]byte(fusionRulesSrc)) }
