package chat

// Expressions, by Jinja's precedence (see parser.go). Every level that
// recurses goes through enter/leave, which bounds the depth.

func (p *parser) tupleEnd(extra []string) bool {
	t := p.cur()
	if t.kind == tVarEnd || t.kind == tBlockEnd || t.kind == tEOF || (t.kind == tOp && t.val == ")") {
		return true
	}
	return t.kind == tName && contains(extra, t.val)
}

// parseTuple is Jinja's parse_tuple: an expression, or several separated by
// commas, which make a tuple.
func (p *parser) parseTuple(simplified, withCond bool, extraEnd []string, explicit bool) expr {
	off := p.cur().off
	var args []expr
	isTuple := false
	for {
		if len(args) > 0 {
			p.expectOp(",")
		}
		if p.tupleEnd(extraEnd) {
			break
		}
		if simplified {
			args = append(args, p.primary())
		} else {
			args = append(args, p.expression(withCond))
		}
		if !p.isOp(",") {
			break
		}
		isTuple = true
	}
	if !isTuple {
		if len(args) > 0 {
			return args[0]
		}
		if !explicit {
			fail(p.cur().off, ErrSyntax, "expected an expression, got %s", describe(p.cur()))
		}
	}
	return &listExpr{off: off, items: args, tuple: true}
}

func (p *parser) expression(withCond bool) expr {
	p.enter(p.cur().off)
	defer p.leave()
	if !withCond {
		return p.or()
	}
	off := p.cur().off
	x := p.or()
	for p.skipName("if") {
		c := &condExpr{off: off, then: x, test: p.or()}
		if p.skipName("else") {
			c.els_ = p.expression(true)
		}
		x = c
	}
	return x
}

func (p *parser) or() expr {
	x := p.and()
	for p.isName("or") {
		off := p.next().off
		x = &logicExpr{off: off, l: x, r: p.and()}
	}
	return x
}

func (p *parser) and() expr {
	x := p.not()
	for p.isName("and") {
		off := p.next().off
		x = &logicExpr{off: off, and: true, l: x, r: p.not()}
	}
	return x
}

func (p *parser) not() expr {
	if p.isName("not") {
		t := p.next()
		p.enter(t.off)
		defer p.leave()
		return &unaryExpr{off: t.off, op: "not", x: p.not()}
	}
	return p.compare()
}

func (p *parser) compare() expr {
	off := p.cur().off
	first := p.math1()
	c := &compareExpr{off: off, first: first}
	for {
		t := p.cur()
		switch {
		case t.kind == tOp && (t.val == "==" || t.val == "!=" || t.val == "<" || t.val == ">" || t.val == "<=" || t.val == ">="):
			p.next()
			c.ops = append(c.ops, t.val)
		case p.isName("in"):
			p.next()
			c.ops = append(c.ops, "in")
		case p.isName("not") && p.peek().kind == tName && p.peek().val == "in":
			p.next()
			p.next()
			c.ops = append(c.ops, "notin")
		default:
			if len(c.ops) == 0 {
				return first
			}
			return c
		}
		c.rest = append(c.rest, p.math1())
	}
}

func (p *parser) math1() expr {
	x := p.concat()
	for p.isOp("+") || p.isOp("-") {
		t := p.next()
		x = &binExpr{off: t.off, op: t.val, l: x, r: p.concat()}
	}
	return x
}

func (p *parser) concat() expr {
	off := p.cur().off
	parts := []expr{p.math2()}
	for p.skipOp("~") {
		parts = append(parts, p.math2())
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return &concatExpr{off: off, parts: parts}
}

func (p *parser) math2() expr {
	x := p.pow()
	for p.isOp("*") || p.isOp("/") || p.isOp("//") || p.isOp("%") {
		t := p.next()
		x = &binExpr{off: t.off, op: t.val, l: x, r: p.pow()}
	}
	return x
}

func (p *parser) pow() expr {
	x := p.unary(true)
	for p.isOp("**") {
		t := p.next()
		x = &binExpr{off: t.off, op: "**", l: x, r: p.unary(true)}
	}
	return x
}

func (p *parser) unary(withFilter bool) expr {
	t := p.cur()
	p.enter(t.off)
	defer p.leave()
	var x expr
	if t.kind == tOp && (t.val == "-" || t.val == "+") {
		p.next()
		x = &unaryExpr{off: t.off, op: t.val, x: p.unary(false)}
	} else {
		x = p.primary()
	}
	x = p.postfix(x)
	if withFilter {
		x = p.filterExpr(x)
	}
	return x
}

func (p *parser) primary() expr {
	t := p.cur()
	switch t.kind {
	case tName:
		p.next()
		switch t.val {
		case "true", "True":
			return &constExpr{off: t.off, v: true}
		case "false", "False":
			return &constExpr{off: t.off, v: false}
		case "none", "None":
			return &constExpr{off: t.off, v: nil}
		}
		return &nameExpr{off: t.off, name: t.val}
	case tString:
		p.next()
		s := t.val
		for p.cur().kind == tString {
			s += p.next().val
		}
		return &constExpr{off: t.off, v: s}
	case tInt:
		p.next()
		return &constExpr{off: t.off, v: t.ival}
	case tFloat:
		p.next()
		return &constExpr{off: t.off, v: t.fval}
	case tOp:
		switch t.val {
		case "(":
			p.next()
			p.enter(t.off)
			x := p.parseTuple(false, true, nil, true)
			p.leave()
			p.expectOp(")")
			return x
		case "[":
			p.next()
			l := &listExpr{off: t.off}
			for !p.isOp("]") {
				if len(l.items) > 0 {
					p.expectOp(",")
				}
				if p.isOp("]") {
					break
				}
				l.items = append(l.items, p.expression(true))
			}
			p.next()
			return l
		case "{":
			p.next()
			d := &dictExpr{off: t.off}
			for !p.isOp("}") {
				if len(d.keys) > 0 {
					p.expectOp(",")
				}
				if p.isOp("}") {
					break
				}
				d.keys = append(d.keys, p.expression(true))
				p.expectOp(":")
				d.vals = append(d.vals, p.expression(true))
			}
			p.next()
			return d
		}
	}
	fail(t.off, ErrSyntax, "unexpected %s", describe(t))
	return nil
}

func (p *parser) postfix(x expr) expr {
	for {
		switch {
		case p.isOp("."):
			t := p.next()
			a := p.cur()
			switch a.kind {
			case tName:
				p.next()
				x = &getattrExpr{off: t.off, x: x, name: a.val}
			case tInt:
				p.next()
				x = &getitemExpr{off: t.off, x: x, key: &constExpr{off: a.off, v: a.ival}}
			default:
				fail(a.off, ErrSyntax, "expected a name or number after '.', got %s", describe(a))
			}
		case p.isOp("["):
			t := p.next()
			var keys []expr
			for !p.isOp("]") {
				if len(keys) > 0 {
					p.expectOp(",")
				}
				keys = append(keys, p.subscribed())
			}
			p.next()
			if len(keys) == 0 {
				fail(t.off, ErrSyntax, "expected a subscript expression")
			}
			key := keys[0]
			if len(keys) > 1 {
				key = &listExpr{off: t.off, items: keys, tuple: true}
			}
			x = &getitemExpr{off: t.off, x: x, key: key}
		case p.isOp("("):
			x = p.call(x)
		default:
			return x
		}
	}
}

func (p *parser) subscribed() expr {
	off := p.cur().off
	var start expr
	if !p.isOp(":") {
		start = p.expression(true)
		if !p.isOp(":") {
			return start
		}
	}
	p.next()
	s := &sliceExpr{off: off, start: start}
	if !p.isOp(":") && !p.isOp("]") && !p.isOp(",") {
		s.stop = p.expression(true)
	}
	if p.skipOp(":") {
		if !p.isOp("]") && !p.isOp(",") {
			s.step = p.expression(true)
		}
	}
	return s
}

func (p *parser) filterExpr(x expr) expr {
	for {
		switch {
		case p.isOp("|"):
			fs := p.filterChain(x, false)
			x = fs[len(fs)-1]
		case p.isName("is"):
			x = p.test(x)
		case p.isOp("("):
			x = p.call(x)
		default:
			return x
		}
	}
}

func (p *parser) test(x expr) expr {
	is := p.next()
	negated := p.skipName("not")
	n := p.expectName()
	t := &testExpr{off: is.off, x: x, name: n.val}
	c := p.cur()
	switch {
	case p.isOp("("):
		var star, dstr expr
		t.args, t.kw, star, dstr = p.callArgs()
		if star != nil || dstr != nil {
			fail(c.off, ErrUnsupported, "*args and **kwargs in a test are not supported")
		}
	case (c.kind == tName || c.kind == tString || c.kind == tInt || c.kind == tFloat ||
		(c.kind == tOp && (c.val == "[" || c.val == "{"))) &&
		!(c.kind == tName && (c.val == "else" || c.val == "or" || c.val == "and")):
		if c.kind == tName && c.val == "is" {
			fail(c.off, ErrSyntax, "tests cannot be chained with 'is'")
		}
		t.args = []expr{p.postfix(p.primary())}
	}
	if negated {
		return &unaryExpr{off: is.off, op: "not", x: t}
	}
	return t
}

func (p *parser) call(fn expr) expr {
	off := p.cur().off
	if n, ok := fn.(*nameExpr); ok {
		off = n.off // raise_exception(...) is reported at its name
	}
	c := &callExpr{off: off, fn: fn}
	c.args, c.kw, c.star, c.dstr = p.callArgs()
	return c
}

func (p *parser) callArgs() (args []expr, kw []kwarg, star, dstr expr) {
	open := p.expectOp("(")
	bad := func() { fail(open.off, ErrSyntax, "invalid syntax for a call") }
	first := true
	for !p.isOp(")") {
		if !first {
			p.expectOp(",")
			if p.isOp(")") {
				break
			}
		}
		first = false
		switch {
		case p.isOp("*"):
			if star != nil || dstr != nil {
				bad()
			}
			p.next()
			star = p.expression(true)
		case p.isOp("**"):
			if dstr != nil {
				bad()
			}
			p.next()
			dstr = p.expression(true)
		case p.cur().kind == tName && p.peek().kind == tOp && p.peek().val == "=":
			if dstr != nil {
				bad()
			}
			n := p.next()
			p.next()
			kw = append(kw, kwarg{name: n.val, x: p.expression(true)})
		default:
			if star != nil || dstr != nil || len(kw) > 0 {
				bad()
			}
			args = append(args, p.expression(true))
		}
	}
	p.next()
	return
}
