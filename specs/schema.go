package specs

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The YAML schema of a spec file, decoded by hand from yaml.Node so that
// every value keeps its line and column and every unknown field is an error
// that names the fields it could have meant.

// specFile is one parsed spec file, before inheritance.
type specFile struct {
	name string // the file's stem: the spec's name
	file string // the path errors print
	src  []byte

	inherit       string
	inheritPos    Pos
	abstract      bool
	architectures []string
	archPos       Pos
	doc           string
	ropeStyle     string
	ropeStylePos  Pos
	chatTemplate  string
	output        string
	outputPos     Pos

	hparams  []*hparamDecl // in file order; deleted entries remove inherited ones
	require  []*requireDecl
	tensors  []*tensorDecl
	prologue []*stmt
	layer    []*block
	epilogue []*stmt
	hasPro   bool // prologue given (it replaces the parent's)
	hasEpi   bool
	broken   bool // not a YAML mapping: nothing of it can be checked
}

// hparamDecl declares one named value.
type hparamDecl struct {
	name    string
	pos     Pos
	path    string
	key     string // metadata key: relative unless abs
	keyPos  Pos
	abs     bool
	lenOf   bool // the value is the length of the array at key
	typ     Type // declared type; zero when inferred
	typPos  Pos
	def     node // default when the key is absent
	expr    node // derived value (no key)
	doc     string
	deleted bool
}

// requireDecl is a condition a model must meet to be compiled by the spec.
type requireDecl struct {
	pos     Pos
	path    string
	check   node
	message string
}

// tensorDecl declares one logical tensor:
//
//	attn_q: blk.{layer}.attn_q.weight [dim, heads * head_dim]
type tensorDecl struct {
	logical     string
	pos         Pos // the value
	path        string
	pattern     string // with {layer} for per-layer tensors
	perLayer    bool
	shape       []node
	optional    bool
	f32         bool // stored F32 whatever the file's type (llama.cpp adds it as a view)
	fallback    string
	fallbackPos Pos
	cond        node
	deleted     bool
}

// stmt is one graph statement.
type stmt struct {
	pos     Pos
	path    string
	src     string
	targets []string
	value   node
	cond    node
}

// block is one named block of the layer program (attn, ffn).
type block struct {
	name    string
	pos     Pos
	stmts   []*stmt
	deleted bool
}

var topFields = []string{"inherit", "abstract", "architectures", "doc", "rope_style", "chat_template",
	"output", "hparams", "require", "tensors", "prologue", "layer", "epilogue"}

var reYAMLErr = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseFile decodes one spec file. It returns what it could decode along
// with every error it found.
func parseFile(name, file string, src []byte) (*specFile, error) {
	sf := &specFile{name: name, file: file, src: src}
	var c errs
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		e := &Error{Pos: Pos{File: file}, Msg: strings.TrimPrefix(err.Error(), "yaml: "), Kind: ErrSyntax}
		if m := reYAMLErr.FindStringSubmatch(err.Error()); m != nil {
			e.Pos.Line, _ = strconv.Atoi(m[1])
			e.Msg = m[2]
		}
		c.addErr(e)
		sf.broken = true
		return sf, c.err()
	}
	if len(doc.Content) == 0 {
		c.add(ErrInvalid, Pos{File: file, Line: 1, Col: 1}, "", "empty spec")
		sf.broken = true
		return sf, c.err()
	}
	d := &decoder{file: file, src: src, c: &c}
	root := doc.Content[0]
	if !d.want(root, yaml.MappingNode, "", "a mapping of spec fields") {
		sf.broken = true
		return sf, c.err()
	}
	d.fields(root, "", topFields, func(key string, k, v *yaml.Node) {
		switch key {
		case "inherit":
			sf.inherit, sf.inheritPos = d.str(v, key), d.pos(v)
		case "abstract":
			sf.abstract = d.boolean(v, key)
		case "architectures":
			sf.archPos = d.pos(v)
			if d.want(v, yaml.SequenceNode, key, "a list of general.architecture names") {
				for _, n := range v.Content {
					sf.architectures = append(sf.architectures, d.str(n, key))
				}
			}
		case "doc":
			sf.doc = d.str(v, key)
		case "rope_style":
			sf.ropeStyle, sf.ropeStylePos = d.str(v, key), d.pos(v)
		case "chat_template":
			sf.chatTemplate = d.str(v, key)
		case "output":
			sf.output, sf.outputPos = d.str(v, key), d.pos(v)
		case "hparams":
			sf.hparams = d.hparams(v)
		case "require":
			sf.require = d.requires(v)
		case "tensors":
			sf.tensors = d.tensors(v)
		case "prologue":
			sf.hasPro = true
			sf.prologue = d.stmts(v, "prologue")
		case "epilogue":
			sf.hasEpi = true
			sf.epilogue = d.stmts(v, "epilogue")
		case "layer":
			sf.layer = d.blocks(v)
		}
	})
	return sf, c.err()
}

type decoder struct {
	file string
	src  []byte
	c    *errs
}

func (d *decoder) pos(n *yaml.Node) Pos { return Pos{File: d.file, Line: n.Line, Col: n.Column} }

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a scalar"
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

func (d *decoder) want(n *yaml.Node, k yaml.Kind, path, what string) bool {
	if n.Kind == k {
		return true
	}
	d.c.add(ErrInvalid, d.pos(n), path, "expected %s, found %s", what, kindName(n.Kind))
	return false
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// fields walks a mapping, rejecting unknown and repeated keys, and returns
// how many keys it rejected.
func (d *decoder) fields(n *yaml.Node, path string, known []string, fn func(key string, k, v *yaml.Node)) int {
	seen := map[string]bool{}
	bad := 0
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		switch {
		case !contains(known, key):
			d.c.add(ErrUnknownField, d.pos(k), path, "unknown field %q%s", key, suggest(key, known))
			bad++
			continue
		case seen[key]:
			d.c.add(ErrInvalid, d.pos(k), path, "field %q given twice", key)
			bad++
			continue
		}
		seen[key] = true
		fn(key, k, v)
	}
	return bad
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (d *decoder) str(n *yaml.Node, path string) string {
	if !d.want(n, yaml.ScalarNode, path, "a string") {
		return ""
	}
	return n.Value
}

func (d *decoder) boolean(n *yaml.Node, path string) bool {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		d.c.add(ErrType, d.pos(n), path, "expected true or false, found %q", n.Value)
		return false
	}
	return n.Value == "true"
}

// posMapFor returns where the text of a scalar starts in the file.
func (d *decoder) posMapFor(n *yaml.Node) posMap {
	m := posMap{file: d.file, line: n.Line, col: n.Column}
	switch n.Style {
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		m.col++
	case yaml.LiteralStyle, yaml.FoldedStyle:
		// The text starts on the line after the indicator, at the
		// indentation of that line.
		m.line++
		lines := bytes.Split(d.src, []byte("\n"))
		if m.line-1 < len(lines) {
			l := lines[m.line-1]
			m.col = len(l) - len(bytes.TrimLeft(l, " ")) + 1
			m.cont = m.col
		}
	}
	return m
}

// expr parses a scalar as an expression.
func (d *decoder) expr(n *yaml.Node, path string) node {
	if !d.want(n, yaml.ScalarNode, path, "an expression") {
		return nil
	}
	e, err := parseExpr(d.posMapFor(n), path, n.Value)
	if err != nil {
		d.c.addErr(err)
		return nil
	}
	return e
}

var hparamFields = []string{"key", "gguf", "len", "type", "default", "expr", "doc"}

func (d *decoder) hparams(n *yaml.Node) []*hparamDecl {
	if !d.want(n, yaml.MappingNode, "hparams", "a mapping of hyperparameter names") {
		return nil
	}
	var out []*hparamDecl
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := "hparams." + k.Value
		h := &hparamDecl{name: k.Value, pos: d.pos(k), path: p}
		if !validName(k.Value) {
			d.c.add(ErrInvalid, d.pos(k), "hparams", "bad name %q: names are letters, digits and _", k.Value)
			continue
		}
		switch {
		case isNull(v):
			h.deleted = true
		case v.Kind == yaml.ScalarNode:
			h.expr = d.expr(v, p)
		case v.Kind == yaml.MappingNode:
			d.fields(v, p, hparamFields, func(key string, kn, vn *yaml.Node) {
				switch key {
				case "key", "gguf":
					if h.key != "" {
						d.c.add(ErrInvalid, d.pos(kn), p, "give key (relative to the architecture) or gguf (absolute), not both")
					}
					h.key, h.keyPos, h.abs = d.str(vn, p+"."+key), d.pos(vn), key == "gguf"
				case "len":
					h.lenOf = d.boolean(vn, p+".len")
				case "type":
					h.typPos = d.pos(vn)
					t, ok := parseType(d.str(vn, p+".type"))
					if !ok {
						d.c.add(ErrType, d.pos(vn), p+".type", "unknown type %q (want int, float, bool or string)", vn.Value)
					}
					h.typ = t
				case "default":
					h.def = d.expr(vn, p+".default")
				case "expr":
					h.expr = d.expr(vn, p+".expr")
				case "doc":
					h.doc = d.str(vn, p+".doc")
				}
			})
			switch {
			case h.key == "" && h.expr == nil && !hasField(v, "expr"):
				d.c.add(ErrInvalid, d.pos(v), p, "give key (or gguf) to read metadata, or expr to derive a value")
			case h.key != "" && hasField(v, "expr"):
				d.c.add(ErrInvalid, d.pos(v), p, "expr derives a value; it cannot also read key %q (use default)", h.key)
			case h.key == "" && hasField(v, "default"):
				d.c.add(ErrInvalid, d.pos(v), p, "default applies to a key that may be absent; this hparam reads none")
			}
		default:
			d.want(v, yaml.MappingNode, p, "an expression or a mapping {key, type, default}")
			continue
		}
		out = append(out, h)
	}
	return out
}

func hasField(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

func parseType(s string) (Type, bool) {
	switch s {
	case "int":
		return tInt, true
	case "float":
		return tFloat, true
	case "bool":
		return tBool, true
	case "string":
		return tString, true
	}
	return tInvalid, false
}

var reName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func validName(s string) bool { return reName.MatchString(s) }

func (d *decoder) requires(n *yaml.Node) []*requireDecl {
	if !d.want(n, yaml.SequenceNode, "require", "a list of {check, message}") {
		return nil
	}
	var out []*requireDecl
	for i, v := range n.Content {
		p := fmt.Sprintf("require[%d]", i)
		if !d.want(v, yaml.MappingNode, p, "a mapping {check, message}") {
			continue
		}
		r := &requireDecl{pos: d.pos(v), path: p}
		bad := d.fields(v, p, []string{"check", "message"}, func(key string, _, vn *yaml.Node) {
			switch key {
			case "check":
				r.check = d.expr(vn, p+".check")
			case "message":
				r.message = d.str(vn, p+".message")
			}
		})
		if r.check == nil || r.message == "" {
			if bad == 0 && (!hasField(v, "check") || !hasField(v, "message")) {
				d.c.add(ErrInvalid, d.pos(v), p, "a requirement needs check and message")
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

var reTensorName = regexp.MustCompile(`^[A-Za-z0-9_.]*(\{layer\}[A-Za-z0-9_.]*)?$`)

func (d *decoder) tensors(n *yaml.Node) []*tensorDecl {
	if !d.want(n, yaml.MappingNode, "tensors", "a mapping of logical tensor names") {
		return nil
	}
	var out []*tensorDecl
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := "tensors." + k.Value
		t := &tensorDecl{logical: k.Value, pos: d.pos(v), path: p}
		if !validName(k.Value) {
			d.c.add(ErrInvalid, d.pos(k), "tensors", "bad name %q: names are letters, digits and _", k.Value)
			continue
		}
		if isNull(v) {
			t.deleted = true
			out = append(out, t)
			continue
		}
		if !d.want(v, yaml.ScalarNode, p, "a declaration: NAME [SHAPE] [optional] [f32] [fallback T] [if COND]") {
			continue
		}
		if d.tensor(t, v) {
			out = append(out, t)
		}
	}
	return out
}

// tensor parses "blk.{layer}.attn_q.weight [dim, heads * head_dim] optional".
func (d *decoder) tensor(t *tensorDecl, v *yaml.Node) bool {
	m := d.posMapFor(v)
	text := v.Value
	name := text
	rest := ""
	if i := strings.IndexAny(text, " \t["); i >= 0 {
		name, rest = text[:i], text[i:]
	}
	if name == "" || !reTensorName.MatchString(name) {
		d.c.add(ErrSyntax, m.start(), t.path, "bad tensor name %q: letters, digits, _ and ., with at most one {layer}", name)
		return false
	}
	t.pattern = name
	t.perLayer = strings.Contains(name, "{layer}")
	// The tail is parsed with the columns it has in the file.
	tail := m
	tail.col += len(name)
	ast, err := tensorParser.ParseString(d.file, rest)
	if err != nil {
		d.c.addErr(syntaxError(tail, t.path, err))
		return false
	}
	for _, s := range ast.Shape {
		e, err := buildExpr(tail, s)
		if err != nil {
			err.Path = t.path
			d.c.addErr(err)
			return false
		}
		t.shape = append(t.shape, e)
	}
	for _, f := range ast.Flags {
		switch {
		case f.Optional:
			t.optional = true
		case f.F32:
			t.f32 = true
		case f.Fallback != nil:
			t.optional = true
			t.fallback, t.fallbackPos = *f.Fallback, tail.at(f.Pos)
		case f.If != nil:
			e, err := buildExpr(tail, f.If)
			if err != nil {
				err.Path = t.path
				d.c.addErr(err)
				return false
			}
			t.cond = e
		}
	}
	if len(t.shape) == 0 {
		d.c.add(ErrInvalid, m.start(), t.path, "a tensor needs a shape: %s [dim, ...]", name)
		return false
	}
	return true
}

func (d *decoder) stmts(n *yaml.Node, path string) []*stmt {
	if isNull(n) {
		return nil
	}
	if !d.want(n, yaml.SequenceNode, path, "a list of statements") {
		return nil
	}
	var out []*stmt
	for i, v := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		if !d.want(v, yaml.ScalarNode, p, "a statement: NAME = op(ARGS) [if COND]") {
			continue
		}
		if s := d.stmt(v, p); s != nil {
			out = append(out, s)
		}
	}
	return out
}

func (d *decoder) stmt(v *yaml.Node, p string) *stmt {
	m := d.posMapFor(v)
	ast, err := stmtParser.ParseString(d.file, v.Value)
	if err != nil {
		d.c.addErr(syntaxError(m, p, err))
		return nil
	}
	s := &stmt{pos: m.at(ast.Pos), path: p, src: v.Value, targets: ast.Targets}
	val, e := buildExpr(m, ast.Value)
	if e != nil {
		e.Path = p
		d.c.addErr(e)
		return nil
	}
	s.value = val
	if ast.Cond != nil {
		cond, e := buildExpr(m, ast.Cond)
		if e != nil {
			e.Path = p
			d.c.addErr(e)
			return nil
		}
		s.cond = cond
	}
	return s
}

func (d *decoder) blocks(n *yaml.Node) []*block {
	if !d.want(n, yaml.MappingNode, "layer", "a mapping of named blocks (attn: [...], ffn: [...])") {
		return nil
	}
	var out []*block
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		b := &block{name: k.Value, pos: d.pos(k)}
		if !validName(k.Value) {
			d.c.add(ErrInvalid, d.pos(k), "layer", "bad block name %q", k.Value)
			continue
		}
		if isNull(v) {
			b.deleted = true
		} else {
			b.stmts = d.stmts(v, "layer."+k.Value)
		}
		out = append(out, b)
	}
	return out
}

// stem returns a file's name without directory and extension.
func stem(file string) string {
	base := path.Base(file)
	return strings.TrimSuffix(base, path.Ext(base))
}
