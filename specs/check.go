package specs

import (
	"fmt"
	"strings"
)

// check validates a merged spec and fills in what the resolution API needs:
// hparam types, the tensor index and the tensors' roles.
func check(a *Arch, c *errs) {
	ck := &checker{a: a, c: c, state: map[string]int{}}
	top := Pos{File: a.File, Line: 1, Col: 1}

	switch {
	case a.Abstract && len(a.Architectures) > 0:
		c.add(ErrInvalid, a.archPos, "architectures", "an abstract spec matches no architecture")
	case !a.Abstract && len(a.Architectures) == 0:
		c.add(ErrInvalid, top, "", "a spec needs architectures: the general.architecture names it compiles (or abstract: true)")
	}
	switch RopeStyle(a.ropeStyle) {
	case RopeNone, RopeInterleaved, RopeNeox:
	case "":
		if !a.Abstract {
			c.add(ErrInvalid, top, "", "a spec needs rope_style: norm, neox or none")
		}
	default:
		c.add(ErrInvalid, a.ropeStylePos, "rope_style", "unknown rope_style %q (want norm, neox or none)%s",
			a.ropeStyle, suggest(a.ropeStyle, []string{"norm", "neox", "none"}))
	}

	switch a.Output {
	case "":
		a.Output = OutputLogits
	case OutputLogits, OutputEmbedding:
	default:
		c.add(ErrInvalid, a.outputPos, "output", "unknown output %q (want logits or embedding)%s",
			a.Output, suggest(string(a.Output), []string{"logits", "embedding"}))
	}

	// Hparams: index, then type each (in dependency order, through hpType).
	a.hp = map[string]*hpInfo{}
	for _, d := range a.hparams {
		if d.name == "layer" || d.name == "meta" || d.name == "true" || d.name == "false" {
			c.add(ErrInvalid, d.pos, d.path, "%q is reserved", d.name)
			continue
		}
		a.hp[d.name] = &hpInfo{decl: d}
	}
	for _, d := range a.hparams {
		ck.hpType(d.name)
	}
	if !a.Abstract {
		for _, s := range stdHParams {
			if _, ok := a.hp[s.name]; s.required && !ok {
				c.add(ErrInvalid, top, "hparams", "missing standard hparam %s (%s)", s.name, s.typ)
			}
		}
	}

	for _, r := range a.require {
		ck.expect(r.check, scope{path: r.path, layer: true, meta: true, where: "require"}, tBool, "a check")
	}

	ck.checkTensors()
	if !a.Abstract || len(a.prologue)+len(a.layer)+len(a.epilogue) > 0 {
		ck.checkGraph()
	}
}

func (ck *checker) checkTensors() {
	a := ck.a
	a.tensorIx = map[string]*tensorDecl{}
	files := map[string]string{}
	for _, t := range a.tensors {
		a.tensorIx[t.logical] = t
		if prev, dup := files[t.pattern]; dup {
			ck.c.add(ErrInvalid, t.pos, t.path, "%s is also declared as %s", t.pattern, prev)
		}
		files[t.pattern] = t.logical
	}
	for _, t := range a.tensors {
		sc := scope{path: t.path, layer: t.perLayer, where: "a global tensor"}
		if len(t.shape) > 4 {
			ck.c.add(ErrInvalid, t.pos, t.path, "a tensor has at most 4 dimensions, found %d", len(t.shape))
		}
		for _, s := range t.shape {
			ck.expect(s, sc, tInt, "a dimension")
		}
		if t.cond != nil {
			ck.expect(t.cond, sc, tBool, "a tensor's condition")
		}
		if t.fallback != "" {
			f, ok := a.tensorIx[t.fallback]
			switch {
			case !ok:
				ck.c.add(ErrUnknownTensor, t.fallbackPos, t.path, "fallback: unknown tensor %q%s", t.fallback, suggest(t.fallback, ck.tensorNames()))
			case f.perLayer != t.perLayer:
				ck.c.add(ErrInvalid, t.fallbackPos, t.path, "fallback %s must be per-layer exactly when %s is", t.fallback, t.logical)
			case f.optional:
				ck.c.add(ErrInvalid, t.fallbackPos, t.path, "fallback %s is itself optional", t.fallback)
			}
		}
	}
}

func (ck *checker) tensorNames() []string { return sortedKeys(ck.a.tensorIx) }

// graphEnv is the state of the check of one program part.
type graphEnv struct {
	where    string          // prologue, layer.attn, epilogue
	perLayer bool            // per-layer tensors and `layer` are visible
	defined  map[string]bool // graph values defined so far
	// onlyWhen holds the names first defined by a conditional statement,
	// with its condition: only statements of the same condition may read
	// them (a mixture-of-experts FFN beside a dense one).
	onlyWhen map[string]string
}

func (ck *checker) checkGraph() {
	a := ck.a
	a.roles = map[string]TensorRole{}
	top := Pos{File: a.File, Line: 1, Col: 1}
	if len(a.prologue) == 0 {
		ck.c.add(ErrInvalid, top, "prologue", "the graph needs a prologue that defines x (x = embedding(token_embd))")
	}
	if len(a.layer) == 0 {
		ck.c.add(ErrInvalid, top, "layer", "the graph needs layer blocks")
	}
	lm := a.Output != OutputEmbedding // an encoder's epilogue is optional and defines no logits
	if len(a.epilogue) == 0 && lm {
		ck.c.add(ErrInvalid, top, "epilogue", "the graph needs an epilogue that defines logits")
	}

	pro := &graphEnv{where: "the prologue", defined: map[string]bool{}}
	for _, s := range a.prologue {
		ck.checkStmt(s, pro)
	}
	if len(a.prologue) > 0 && !pro.defined["x"] {
		last := a.prologue[len(a.prologue)-1]
		ck.c.add(ErrInvalid, last.pos, "prologue", "the prologue must define x, the residual stream")
	}
	// Values live for one layer, across its blocks; x carries over.
	lay := &graphEnv{perLayer: true, defined: map[string]bool{"x": true}}
	for _, b := range a.layer {
		lay.where = "layer." + b.name
		for _, s := range b.stmts {
			ck.checkStmt(s, lay)
		}
	}
	epi := &graphEnv{where: "the epilogue", defined: map[string]bool{"x": true}}
	for _, s := range a.epilogue {
		ck.checkStmt(s, epi)
	}
	if len(a.epilogue) > 0 && lm && !epi.defined["logits"] {
		last := a.epilogue[len(a.epilogue)-1]
		ck.c.add(ErrInvalid, last.pos, "epilogue", "the epilogue must define logits")
	}
}

func (ck *checker) checkStmt(s *stmt, env *graphEnv) {
	sc := scope{path: s.path, layer: env.perLayer, where: env.where}
	if s.cond != nil {
		sc.cond = exprString(s.cond)
	}
	condOK := true
	if s.cond != nil {
		_, condOK = ck.expect(s.cond, sc, tBool, "a condition")
	}
	call, ok := s.value.(*callNode)
	if !ok {
		ck.c.add(ErrSyntax, s.value.at(), s.path, "a statement assigns an op's result: %s = op(...)", strings.Join(s.targets, ", "))
		return
	}
	outs, ok := ck.checkOp(call, sc, env)
	if ok && outs != len(s.targets) {
		ck.c.add(ErrType, s.pos, s.path, "%s gives %d value(s), assigned to %d", call.fn, outs, len(s.targets))
	}
	for _, t := range s.targets {
		if _, isTensor := ck.a.tensorIx[t]; isTensor {
			ck.c.add(ErrInvalid, s.pos, s.path, "%s names a tensor; give the value another name", t)
		}
		if s.cond != nil && condOK && !env.defined[t] {
			if env.onlyWhen == nil {
				env.onlyWhen = map[string]string{}
			}
			env.onlyWhen[t] = sc.cond
		} else if s.cond == nil {
			delete(env.onlyWhen, t)
		}
		env.defined[t] = true
	}
}

// checkOp checks an op call (a statement's value or a nested argument) and
// returns how many values it gives.
func (ck *checker) checkOp(call *callNode, sc scope, env *graphEnv) (int, bool) {
	sig, ok := ops[call.fn]
	if !ok {
		hint := suggest(call.fn, opNames())
		if hint == "" && contains(funcNames, call.fn) {
			hint = " (it is a function of expressions; ops are " + strings.Join(opNames(), ", ") + ")"
		}
		ck.c.add(ErrUnknownOp, call.p, sc.path, "unknown op %q%s", call.fn, hint)
		return 0, false
	}
	good := true
	if sig.kind == OpAttention && !env.perLayer {
		ck.c.add(ErrInvalid, call.p, sc.path, "attention reads a layer's KV cache; it belongs in a layer block, not in %s", env.where)
		good = false
	}
	n := len(call.args)
	switch {
	case sig.variadic == nil && n != len(sig.pos):
		ck.c.add(ErrType, call.p, sc.path, "%s takes %d argument(s) (%s), found %d", call.fn, len(sig.pos), paramList(sig.pos), n)
		return 0, false
	case sig.variadic != nil && n < len(sig.pos)+1:
		ck.c.add(ErrType, call.p, sc.path, "%s takes %s and at least one of %s", call.fn, paramList(sig.pos), sig.variadic.name)
		return 0, false
	}
	for i, arg := range call.args {
		p := sig.variadic
		if i < len(sig.pos) {
			p = &sig.pos[i]
		}
		good = ck.checkArg(call, p, arg, sc, env) && good
	}
	seen := map[string]bool{}
	for _, na := range call.named {
		p := sig.namedParam(na.key)
		if p == nil {
			names := make([]string, len(sig.named))
			for i, q := range sig.named {
				names[i] = q.name
			}
			if len(names) == 0 {
				ck.c.add(ErrUnknownName, na.p, sc.path, "%s takes no named arguments", call.fn)
			} else {
				ck.c.add(ErrUnknownName, na.p, sc.path, "%s has no parameter %q%s (it has %s)", call.fn, na.key, suggest(na.key, names), strings.Join(names, ", "))
			}
			good = false
			continue
		}
		if seen[na.key] {
			ck.c.add(ErrInvalid, na.p, sc.path, "%s given twice", na.key)
		}
		seen[na.key] = true
		good = ck.checkArg(call, p, na.val, sc, env) && good
	}
	// Defaults refer to standard hparams: the spec must declare them (a
	// declared one that failed to type is already reported).
	for _, p := range sig.named {
		if p.kind != pkExpr || p.defNode == nil || seen[p.name] {
			continue
		}
		if missing := ck.undeclared(p.defNode); len(missing) > 0 {
			ck.c.add(ErrUnknownName, call.p, sc.path, "%s: %s defaults to %s, but the spec declares no %s; declare it or pass %s=",
				call.fn, p.name, p.def, strings.Join(missing, ", "), p.name)
			good = false
		}
	}
	if !good {
		return 0, false
	}
	return sig.outputs(n), true
}

func paramList(ps []opParam) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.name
	}
	return strings.Join(names, ", ")
}

func (ck *checker) checkArg(call *callNode, p *opParam, arg node, sc scope, env *graphEnv) bool {
	switch p.kind {
	case pkValue:
		switch v := arg.(type) {
		case *callNode:
			outs, ok := ck.checkOp(v, sc, env)
			if ok && outs != 1 {
				ck.c.add(ErrType, v.p, sc.path, "%s gives %d values; only a one-value op can be an argument", v.fn, outs)
				return false
			}
			return ok
		case *nameNode:
			if c, only := env.onlyWhen[v.name]; only && c != sc.cond {
				ck.c.add(ErrInvalid, v.p, sc.path, "%s is defined only when %s; read it under that condition, or define it unconditionally first", v.name, c)
				return false
			}
			if env.defined[v.name] {
				return true
			}
			if _, isTensor := ck.a.tensorIx[v.name]; isTensor {
				ck.c.add(ErrType, v.p, sc.path, "%s: %s wants a value, but %s is a tensor", call.fn, p.name, v.name)
				return false
			}
			ck.c.add(ErrUnknownName, v.p, sc.path, "%s: undefined value %q%s", call.fn, v.name, suggest(v.name, sortedKeys(env.defined)))
			return false
		}
		ck.c.add(ErrType, arg.at(), sc.path, "%s: %s wants a value (a name or an op call), found %s", call.fn, p.name, exprString(arg))
		return false
	case pkTensor:
		v, ok := arg.(*nameNode)
		if !ok {
			ck.c.add(ErrType, arg.at(), sc.path, "%s: %s wants a tensor name, found %s", call.fn, p.name, exprString(arg))
			return false
		}
		t, ok := ck.a.tensorIx[v.name]
		if !ok {
			if env.defined[v.name] {
				ck.c.add(ErrType, v.p, sc.path, "%s: %s wants a tensor, but %s is a value", call.fn, p.name, v.name)
				return false
			}
			ck.c.add(ErrUnknownTensor, v.p, sc.path, "%s: tensor %q is not declared in tensors%s", call.fn, v.name, suggest(v.name, ck.tensorNames()))
			return false
		}
		if t.perLayer && !env.perLayer {
			ck.c.add(ErrInvalid, v.p, sc.path, "%s is a per-layer tensor (%s); it cannot be used in %s", v.name, t.pattern, env.where)
			return false
		}
		if t.optional && !p.optional && t.fallback == "" {
			ck.c.add(ErrInvalid, v.p, sc.path, "%s: %s is optional without a fallback, but %s is required", call.fn, v.name, p.name)
			return false
		}
		ck.noteRole(v.name, p.role)
		return true
	case pkExpr:
		_, ok := ck.expect(arg, sc, p.typ, fmt.Sprintf("%s's %s", call.fn, p.name))
		return ok
	}
	return false
}

// noteRole records what a tensor is used as; the token embedding keeps its
// role when it also serves as the output matrix.
func (ck *checker) noteRole(logical string, r TensorRole) {
	if prev, ok := ck.a.roles[logical]; ok && prev == RoleEmbedding {
		return
	}
	ck.a.roles[logical] = r
}

// undeclared lists the hparams an expression names that the spec does not
// declare.
func (ck *checker) undeclared(n node) []string {
	var out []string
	var walk func(n node)
	walk = func(n node) {
		switch n := n.(type) {
		case *nameNode:
			if _, ok := ck.a.hp[n.name]; !ok && n.name != "layer" {
				out = append(out, n.name)
			}
		case *unaryNode:
			walk(n.x)
		case *binNode:
			walk(n.l)
			walk(n.r)
		case *callNode:
			for _, a := range n.args {
				walk(a)
			}
		}
	}
	walk(n)
	return out
}
