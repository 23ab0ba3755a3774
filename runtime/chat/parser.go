package chat

import "strings"

// The parser is Jinja's (jinja2/parser.py) in structure and precedence, from
// loosest to tightest:
//
//	x if c else y  <  or  <  and  <  not  <  == != < > <= >= in, not in
//	<  + -  <  ~  <  * / // %  <  **  <  unary - +  <  filters |f, tests is t
//	<  postfix .attr [key] (call)
//
// so that `'a' + x | trim` trims only x, as in Jinja.

// maxNesting bounds the parser's recursion (and so the interpreter's, which
// walks the same tree), so that a hostile template cannot overflow the stack.
const maxNesting = 200

type parser struct {
	toks  []token
	i     int
	depth int
	loops int // enclosing for loops, for break/continue
}

func parse(src *source) []stmt {
	p := &parser{toks: lex(src.text)}
	body := p.subparse(nil)
	if t := p.cur(); t.kind != tEOF {
		fail(t.off, ErrSyntax, "unexpected %s", describe(t))
	}
	return body
}

func (p *parser) cur() token  { return p.toks[p.i] }
func (p *parser) peek() token { return p.toks[min(p.i+1, len(p.toks)-1)] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

func (p *parser) isOp(op string) bool {
	t := p.cur()
	return t.kind == tOp && t.val == op
}

func (p *parser) isName(name string) bool {
	t := p.cur()
	return t.kind == tName && t.val == name
}

func (p *parser) skipOp(op string) bool {
	if p.isOp(op) {
		p.next()
		return true
	}
	return false
}

func (p *parser) skipName(name string) bool {
	if p.isName(name) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expectOp(op string) token {
	if !p.isOp(op) {
		t := p.cur()
		fail(t.off, ErrSyntax, "expected '%s', got %s", op, describe(t))
	}
	return p.next()
}

func (p *parser) expectName() token {
	t := p.cur()
	if t.kind != tName {
		fail(t.off, ErrSyntax, "expected a name, got %s", describe(t))
	}
	return p.next()
}

func (p *parser) expectKind(k tokKind) token {
	t := p.cur()
	if t.kind != k {
		want := map[tokKind]string{tVarEnd: "'}}'", tBlockEnd: "'%}'"}[k]
		fail(t.off, ErrSyntax, "expected %s, got %s", want, describe(t))
	}
	return p.next()
}

func describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of template"
	case tData:
		return "template data"
	case tVarBegin:
		return "'{{'"
	case tVarEnd:
		return "'}}'"
	case tBlockBegin:
		return "'{%'"
	case tBlockEnd:
		return "'%}'"
	case tName:
		return "'" + t.val + "'"
	case tString:
		return "string literal"
	case tInt, tFloat:
		return "number"
	}
	return "'" + t.val + "'"
}

func (p *parser) enter(off int) {
	p.depth++
	if p.depth > maxNesting {
		fail(off, ErrLimit, "template nested more than %d levels deep", maxNesting)
	}
}

func (p *parser) leave() { p.depth-- }

// subparse reads statements until "{% NAME" with NAME in end (left current),
// or the end of the template.
func (p *parser) subparse(end []string) []stmt {
	var body []stmt
	for {
		t := p.cur()
		switch t.kind {
		case tData:
			body = append(body, &textStmt{text: t.val})
			p.next()
		case tVarBegin:
			p.next()
			x := p.parseTuple(false, true, nil, false)
			p.expectKind(tVarEnd)
			body = append(body, &outputStmt{off: x.offset(), x: x})
		case tBlockBegin:
			p.next()
			if n := p.cur(); n.kind == tName && contains(end, n.val) {
				return body
			}
			body = append(body, p.statement()...)
			p.expectKind(tBlockEnd)
		case tEOF:
			return body
		default:
			fail(t.off, ErrSyntax, "unexpected %s", describe(t))
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// block parses a statement's body after its opening tag: "%}", statements,
// and stops on one of end (the "{% end..." name is current afterwards).
func (p *parser) block(open token, what string, end ...string) []stmt {
	p.skipOp(":")
	p.expectKind(tBlockEnd)
	p.enter(open.off)
	body := p.subparse(end)
	p.leave()
	if p.cur().kind == tEOF {
		tags := make([]string, len(end))
		for i, e := range end {
			tags[i] = "{% " + e + " %}"
		}
		fail(open.off, ErrSyntax, "unclosed {%% %s %%}: expected %s", what, strings.Join(tags, " or "))
	}
	return body
}

// unsupportedTags are Jinja statements a chat template has no use for.
var unsupportedTags = map[string]string{
	"block": "template inheritance", "extends": "template inheritance",
	"include": "includes", "import": "imports", "from": "imports",
	"autoescape": "autoescaping", "trans": "i18n", "do": "the do extension",
}

func (p *parser) statement() []stmt {
	t := p.cur()
	if t.kind != tName {
		fail(t.off, ErrSyntax, "expected a tag name, got %s", describe(t))
	}
	switch t.val {
	case "if":
		return []stmt{p.ifStmt()}
	case "for":
		return []stmt{p.forStmt()}
	case "set":
		return []stmt{p.setStmt()}
	case "macro":
		return []stmt{p.macroStmt()}
	case "call":
		return []stmt{p.callBlock()}
	case "filter":
		p.next()
		fb := &filterBlockStmt{off: t.off, filters: p.filterChain(nil, true)}
		fb.body = p.block(t, "filter", "endfilter")
		p.next()
		return []stmt{fb}
	case "with":
		return []stmt{p.withStmt()}
	case "print":
		p.next()
		var out []stmt
		for p.cur().kind != tBlockEnd {
			if len(out) > 0 {
				p.expectOp(",")
			}
			x := p.expression(true)
			out = append(out, &outputStmt{off: x.offset(), x: x})
		}
		return out
	case "break", "continue":
		p.next()
		if p.loops == 0 {
			fail(t.off, ErrSyntax, "'%s' outside of a loop", t.val)
		}
		if t.val == "break" {
			return []stmt{&breakStmt{off: t.off}}
		}
		return []stmt{&continueStmt{off: t.off}}
	case "generation":
		// Hugging Face's AssistantTracker extension marks assistant text
		// for training masks; for rendering it is a plain block.
		p.next()
		body := p.block(t, "generation", "endgeneration")
		p.next()
		return body
	}
	if what, ok := unsupportedTags[t.val]; ok {
		fail(t.off, ErrUnsupported, "{%% %s %%}: %s are not supported in chat templates", t.val, what)
	}
	if strings.HasPrefix(t.val, "end") || t.val == "else" || t.val == "elif" {
		fail(t.off, ErrSyntax, "unexpected {%% %s %%}", t.val)
	}
	fail(t.off, ErrSyntax, "unknown tag '%s'", t.val)
	return nil
}

func (p *parser) ifStmt() stmt {
	open := p.next()
	s := &ifStmt{}
	for {
		s.conds = append(s.conds, p.parseTuple(false, false, nil, false))
		s.bodies = append(s.bodies, p.block(open, "if", "elif", "else", "endif"))
		switch p.next().val {
		case "elif":
			continue
		case "else":
			s.els = p.block(open, "if", "endif")
			p.next()
		}
		return s
	}
}

func (p *parser) forStmt() stmt {
	open := p.next()
	s := &forStmt{off: open.off}
	s.target = p.assignTarget([]string{"in"}, false)
	if !p.skipName("in") {
		fail(p.cur().off, ErrSyntax, "expected 'in', got %s", describe(p.cur()))
	}
	s.iter = p.parseTuple(false, false, []string{"recursive"}, false)
	if p.skipName("if") {
		s.cond = p.expression(true)
	}
	if p.isName("recursive") {
		fail(p.cur().off, ErrUnsupported, "recursive loops are not supported")
	}
	p.loops++
	s.body = p.block(open, "for", "endfor", "else")
	p.loops--
	if p.next().val == "else" {
		s.els = p.block(open, "for", "endfor")
		p.next()
	}
	return s
}

func (p *parser) setStmt() stmt {
	open := p.next()
	target := p.assignTarget(nil, true)
	if p.skipOp("=") {
		return &setStmt{off: open.off, target: target, value: p.parseTuple(false, true, nil, false)}
	}
	if target.tuple {
		fail(open.off, ErrSyntax, "a {%% set %%} block assigns to a single name")
	}
	s := &setBlockStmt{off: open.off, target: target, filters: p.filterChain(nil, false)}
	s.body = p.block(open, "set", "endset")
	p.next()
	return s
}

// assignTarget parses `name`, `ns.attr` (withNS) or `a, b, ...`.
func (p *parser) assignTarget(extraEnd []string, withNS bool) assignTarget {
	t := p.cur()
	at := assignTarget{off: t.off}
	for {
		if len(at.names) > 0 {
			p.expectOp(",")
		}
		if p.tupleEnd(extraEnd) || (len(at.names) > 0 && p.isOp("=")) {
			break
		}
		n := p.cur()
		if n.kind != tName || isConstName(n.val) {
			fail(n.off, ErrSyntax, "can't assign to %s", describe(n))
		}
		p.next()
		if withNS && len(at.names) == 0 && p.isOp(".") {
			p.next()
			at.attr = p.expectName().val
			at.names = []string{n.val}
			return at
		}
		at.names = append(at.names, n.val)
		if !p.isOp(",") {
			break
		}
		at.tuple = true
	}
	if len(at.names) == 0 {
		fail(t.off, ErrSyntax, "expected an assignment target, got %s", describe(t))
	}
	return at
}

func isConstName(s string) bool {
	switch s {
	case "true", "false", "True", "False", "none", "None":
		return true
	}
	return false
}

func (p *parser) signature() []param {
	p.expectOp("(")
	var ps []param
	for !p.isOp(")") {
		if len(ps) > 0 {
			p.expectOp(",")
		}
		n := p.expectName()
		pr := param{name: n.val}
		if p.skipOp("=") {
			pr.def = p.expression(true)
		} else if len(ps) > 0 && ps[len(ps)-1].def != nil {
			fail(n.off, ErrSyntax, "non-default argument follows default argument")
		}
		ps = append(ps, pr)
	}
	p.next()
	return ps
}

func (p *parser) macroStmt() stmt {
	open := p.next()
	m := &macroStmt{off: open.off, name: p.expectName().val}
	m.params = p.signature()
	loops := p.loops
	p.loops = 0
	m.body = p.block(open, "macro", "endmacro")
	p.loops = loops
	p.next()
	return m
}

func (p *parser) callBlock() stmt {
	open := p.next()
	s := &callBlockStmt{off: open.off}
	if p.isOp("(") {
		s.params = p.signature()
	}
	x := p.expression(true)
	c, ok := x.(*callExpr)
	if !ok {
		fail(x.offset(), ErrSyntax, "{%% call %%} expects a macro call")
	}
	s.call = c
	loops := p.loops
	p.loops = 0
	s.body = p.block(open, "call", "endcall")
	p.loops = loops
	p.next()
	return s
}

func (p *parser) withStmt() stmt {
	open := p.next()
	s := &withStmt{}
	for p.cur().kind != tBlockEnd {
		if len(s.names) > 0 {
			p.expectOp(",")
		}
		n := p.expectName()
		p.expectOp("=")
		s.names = append(s.names, n.val)
		s.values = append(s.values, p.expression(true))
	}
	s.body = p.block(open, "with", "endwith")
	p.next()
	return s
}

// filterChain parses `| f(args) | g` (the first "|" omitted when inline, as
// after {% filter %}).
func (p *parser) filterChain(x expr, inline bool) []*filterExpr {
	var fs []*filterExpr
	for inline || p.isOp("|") {
		if !inline {
			p.next()
		}
		inline = false
		n := p.expectName()
		f := &filterExpr{off: n.off, x: x, name: n.val}
		if p.isOp("(") {
			f.args, f.kw, f.star, f.dstr = p.callArgs()
		}
		fs = append(fs, f)
		x = f
	}
	return fs
}
