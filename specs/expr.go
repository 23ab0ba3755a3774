package specs

import (
	"errors"
	"strconv"
	"strings"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// node is an expression of the spec language, after parsing. The set of
// node types is closed: the checker and the evaluator switch over it.
type node interface {
	at() Pos
	isNode()
}

type (
	litNode struct {
		p Pos
		v Value
	}
	// nameNode is an hparam, `layer`, a graph value or a tensor: which one is
	// decided by where it appears.
	nameNode struct {
		p    Pos
		name string
	}
	// metaNode reads a metadata key: meta.a.b (relative to the architecture
	// prefix) or gguf("a.b.c") (absolute).
	metaNode struct {
		p   Pos
		key string
		abs bool
	}
	unaryNode struct {
		p  Pos
		op string
		x  node
	}
	binNode struct {
		p    Pos
		op   string
		l, r node
	}
	callNode struct {
		p     Pos
		fn    string
		args  []node
		named []namedArg
	}
)

type namedArg struct {
	p   Pos
	key string
	val node
}

func (n *litNode) at() Pos   { return n.p }
func (n *nameNode) at() Pos  { return n.p }
func (n *metaNode) at() Pos  { return n.p }
func (n *unaryNode) at() Pos { return n.p }
func (n *binNode) at() Pos   { return n.p }
func (n *callNode) at() Pos  { return n.p }

func (*litNode) isNode()   {}
func (*nameNode) isNode()  {}
func (*metaNode) isNode()  {}
func (*unaryNode) isNode() {}
func (*binNode) isNode()   {}
func (*callNode) isNode()  {}

// posMap maps a position inside a parsed YAML string back to the file.
type posMap struct {
	file      string
	line, col int // where the string's first character is in the file
	// cont is the column where continuation lines start (block scalars), 0
	// when continuation columns are taken as they are.
	cont int
}

func (m posMap) at(p lexer.Position) Pos {
	if p.Line <= 1 {
		return Pos{File: m.file, Line: m.line, Col: m.col + p.Column - 1}
	}
	col := p.Column
	if m.cont > 0 {
		col += m.cont - 1
	}
	return Pos{File: m.file, Line: m.line + p.Line - 1, Col: col}
}

func (m posMap) start() Pos { return Pos{File: m.file, Line: m.line, Col: m.col} }

// syntaxError converts a participle error into a positioned *Error.
func syntaxError(m posMap, path string, err error) *Error {
	var pe participle.Error
	if errors.As(err, &pe) {
		return &Error{Pos: m.at(pe.Position()), Path: path, Msg: grammarWords.Replace(pe.Message()), Kind: ErrSyntax}
	}
	return &Error{Pos: m.start(), Path: path, Msg: err.Error(), Kind: ErrSyntax}
}

// grammarWords turns participle's names for grammar rules into words.
var grammarWords = strings.NewReplacer(
	`unexpected token "<EOF>"`, "unexpected end of text",
	`"<EOF>"`, "end of text",
	"PrimaryAST", "an operand",
	"UnaryAST", "an operand",
	"ExprAST", "an expression",
	"ArgAST", "an argument",
	"FlagAST*", "flags (optional, fallback T, if COND)",
	"FlagAST", "a flag (optional, fallback T, if COND)",
	"StmtAST", "a statement",
)

// parseExpr parses one expression.
func parseExpr(m posMap, path, src string) (node, *Error) {
	ast, err := exprParser.ParseString(m.file, src)
	if err != nil {
		return nil, syntaxError(m, path, err)
	}
	n, e := buildExpr(m, ast)
	if e != nil {
		e.Path = path
	}
	return n, e
}

// precedence of the binary operators; higher binds tighter. ?? sits between
// comparison and arithmetic (as in Swift), so `meta.x ?? dim / heads` and
// `meta.y ?? 0 > 0` both mean what they say.
var precedence = map[string]int{
	"||": 1,
	"&&": 2,
	"==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
	"??": 4,
	"+":  5, "-": 5,
	"*": 6, "/": 6, "%": 6,
}

func buildExpr(m posMap, e *exprAST) (node, *Error) {
	operands := make([]node, 0, len(e.Rest)+1)
	first, err := buildUnary(m, e.First)
	if err != nil {
		return nil, err
	}
	operands = append(operands, first)
	ops := make([]*opTail, 0, len(e.Rest))
	for _, t := range e.Rest {
		r, err := buildUnary(m, t.Right)
		if err != nil {
			return nil, err
		}
		operands = append(operands, r)
		ops = append(ops, t)
	}
	// Precedence climbing over the flat list: operands[i] and ops[i]
	// alternate, operands[i+1] being the right side of ops[i].
	pos := 0
	idx := 0 // next operand
	var parse func(minPrec int) node
	parse = func(minPrec int) node {
		lhs := operands[idx]
		idx++
		for pos < len(ops) {
			op := ops[pos]
			prec := precedence[op.Op]
			if prec < minPrec {
				break
			}
			pos++
			next := prec + 1
			if op.Op == "??" {
				next = prec
			}
			rhs := parse(next)
			lhs = &binNode{p: m.at(op.Pos), op: op.Op, l: lhs, r: rhs}
		}
		return lhs
	}
	return parse(1), nil
}

func buildUnary(m posMap, u *unaryAST) (node, *Error) {
	x, err := buildPrimary(m, u.Primary)
	if err != nil {
		return nil, err
	}
	for i := len(u.Ops) - 1; i >= 0; i-- {
		x = &unaryNode{p: m.at(u.Pos), op: u.Ops[i], x: x}
	}
	return x, nil
}

func buildPrimary(m posMap, p *primaryAST) (node, *Error) {
	pos := m.at(p.Pos)
	switch {
	case p.Float != nil:
		f, err := strconv.ParseFloat(*p.Float, 64)
		if err != nil {
			return nil, &Error{Pos: pos, Msg: "bad number " + *p.Float, Kind: ErrSyntax}
		}
		return &litNode{p: pos, v: FloatValue(f)}, nil
	case p.Int != nil:
		i, err := strconv.ParseInt(*p.Int, 10, 64)
		if err != nil {
			return nil, &Error{Pos: pos, Msg: "bad number " + *p.Int, Kind: ErrSyntax}
		}
		return &litNode{p: pos, v: IntValue(i)}, nil
	case p.Str != nil:
		s, err := unquote(*p.Str)
		if err != nil {
			return nil, &Error{Pos: pos, Msg: "bad string " + *p.Str, Kind: ErrSyntax}
		}
		return &litNode{p: pos, v: StringValue(s)}, nil
	case p.Meta != nil:
		return &metaNode{p: pos, key: strings.Join(p.Meta, ".")}, nil
	case p.Name != nil:
		return buildName(m, p.Name)
	case p.Paren != nil:
		return buildExpr(m, p.Paren)
	}
	return nil, &Error{Pos: pos, Msg: "empty expression", Kind: ErrSyntax}
}

func buildName(m posMap, n *nameAST) (node, *Error) {
	pos := m.at(n.Pos)
	if !n.Call {
		switch n.Name {
		case "true":
			return &litNode{p: pos, v: BoolValue(true)}, nil
		case "false":
			return &litNode{p: pos, v: BoolValue(false)}, nil
		}
		return &nameNode{p: pos, name: n.Name}, nil
	}
	c := &callNode{p: pos, fn: n.Name}
	for _, a := range n.Args {
		v, err := buildExpr(m, a.Value)
		if err != nil {
			return nil, err
		}
		if a.Key != "" {
			c.named = append(c.named, namedArg{p: m.at(a.Pos), key: a.Key, val: v})
			continue
		}
		if len(c.named) > 0 {
			return nil, &Error{Pos: v.at(), Msg: "positional argument after a named one", Kind: ErrSyntax}
		}
		c.args = append(c.args, v)
	}
	// gguf("key") is a metadata read with an absolute key; the key must be a
	// literal so that its type is known before any file is seen.
	if c.fn == "gguf" {
		if len(c.args) != 1 || len(c.named) != 0 {
			return nil, &Error{Pos: pos, Msg: `gguf takes one string literal: gguf("tokenizer.ggml.tokens")`, Kind: ErrSyntax}
		}
		lit, ok := c.args[0].(*litNode)
		if !ok || lit.v.Kind != KindString {
			return nil, &Error{Pos: c.args[0].at(), Msg: "gguf wants a string literal key", Kind: ErrSyntax}
		}
		return &metaNode{p: pos, key: lit.v.Str, abs: true}, nil
	}
	return c, nil
}

func unquote(s string) (string, error) {
	if strings.HasPrefix(s, "'") {
		return s[1 : len(s)-1], nil
	}
	return strconv.Unquote(s)
}

// exprString prints an expression back in the spec language (fully
// parenthesized binary operations), for messages and for HParamKeys.
func exprString(n node) string {
	var b strings.Builder
	writeExpr(&b, n, 0)
	return b.String()
}

func writeExpr(b *strings.Builder, n node, outer int) {
	switch n := n.(type) {
	case *litNode:
		b.WriteString(n.v.String())
	case *nameNode:
		b.WriteString(n.name)
	case *metaNode:
		if n.abs {
			b.WriteString("gguf(" + strconv.Quote(n.key) + ")")
		} else {
			b.WriteString("meta." + n.key)
		}
	case *unaryNode:
		b.WriteString(n.op)
		writeExpr(b, n.x, 7)
	case *binNode:
		p := precedence[n.op]
		if p < outer {
			b.WriteByte('(')
		}
		writeExpr(b, n.l, p)
		b.WriteString(" " + n.op + " ")
		writeExpr(b, n.r, p+1)
		if p < outer {
			b.WriteByte(')')
		}
	case *callNode:
		b.WriteString(n.fn + "(")
		for i, a := range n.args {
			if i > 0 {
				b.WriteString(", ")
			}
			writeExpr(b, a, 0)
		}
		for i, a := range n.named {
			if i > 0 || len(n.args) > 0 {
				b.WriteString(", ")
			}
			b.WriteString(a.key + "=")
			writeExpr(b, a.val, 0)
		}
		b.WriteByte(')')
	}
}
