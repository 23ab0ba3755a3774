package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/akunu-dev/akunu/runtime/grammar"
)

// Options shape the conversion.
type Options struct {
	// Strict is OpenAI's strict mode: every object must list its
	// properties (additionalProperties true is refused), as OpenAI
	// requires; without it, an object with neither properties nor
	// additionalProperties is any object.
	Strict bool
}

// ErrUnsupported is wrapped by the error of a keyword the converter
// cannot honor.
var ErrUnsupported = errors.New("not supported")

// Error is a schema error: where in the schema (a JSON pointer, "" for
// the root) or, for malformed JSON, the line and column.
type Error struct {
	Pointer   string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg)
	}
	p := e.Pointer
	if p == "" {
		p = "/"
	}
	return p + ": " + e.Msg
}

// unsupportedError is an *Error that wraps ErrUnsupported.
type unsupportedError struct{ e *Error }

func (e unsupportedError) Error() string   { return e.e.Error() }
func (e unsupportedError) Unwrap() []error { return []error{ErrUnsupported, e.e} }

// ToGBNF converts a JSON schema to GBNF whose start rule is root.
func ToGBNF(schema []byte, o Options) (string, error) {
	root, err := parseJSON(schema)
	if err != nil {
		return "", err
	}
	c := &converter{o: o, root: root, rules: map[string]string{}, refs: map[string]string{}}
	name, err := c.visit(root, "", "root")
	if err != nil {
		return "", err
	}
	if name != "root" {
		c.add("root", name)
	}
	return c.render(), nil
}

// Grammar converts a JSON schema and parses the result.
func Grammar(schema []byte, o Options) (*grammar.Grammar, error) {
	src, err := ToGBNF(schema, o)
	if err != nil {
		return nil, err
	}
	g, err := grammar.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("jsonschema: the grammar made does not parse (a bug): %w", err)
	}
	return g, nil
}

// JSONObject is GBNF for any JSON object (OpenAI's json_object format).
func JSONObject() string {
	c := &converter{rules: map[string]string{}}
	c.add("root", c.prim("object"))
	return c.render()
}

// The shared rules, in llama.cpp's shapes: space allows nothing, a
// space, or a line break and an indent, so output stays compact. As in
// llama.cpp, space follows an opening bracket, a comma and a colon (and a
// declared key) and precedes a closing bracket; a value carries none, so
// a document ends with its last byte.
var primitives = map[string]struct {
	body string
	deps []string
}{
	"space":            {`| " " | "\n"{1,2} [ \t]{0,20}`, nil},
	"boolean":          {`("true" | "false")`, nil},
	"null":             {`"null"`, nil},
	"char":             {`[^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})`, nil},
	"string":           {`"\"" char* "\""`, []string{"char"}},
	"integral-part":    {`[0] | [1-9] [0-9]{0,15}`, nil},
	"decimal-part":     {`[0-9]{1,16}`, nil},
	"integer":          {`("-"? integral-part)`, []string{"integral-part"}},
	"number":           {`("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)?`, []string{"integral-part", "decimal-part"}},
	"value":            {`object | array | string | number | boolean | null`, []string{"object", "array", "string", "number", "boolean", "null"}},
	"object":           {`"{" space ( string ":" space value ("," space string ":" space value)* )? space "}"`, []string{"string", "value", "space"}},
	"array":            {`"[" space ( value ("," space value)* )? space "]"`, []string{"value", "space"}},
	"uuid":             {`"\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\""`, nil},
	"date":             {`[0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [1-2] [0-9] | "3" [0-1] )`, nil},
	"time":             {`([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{3} )? ( "Z" | ( "+" | "-" ) ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )`, nil},
	"date-time":        {`date "T" time`, []string{"date", "time"}},
	"date-string":      {`"\"" date "\""`, []string{"date"}},
	"time-string":      {`"\"" time "\""`, []string{"time"}},
	"date-time-string": {`"\"" date-time "\""`, []string{"date-time"}},
}

type converter struct {
	o     Options
	root  *node
	rules map[string]string
	order []string
	refs  map[string]string // ref → rule name (set before visiting: recursion)
	// bare are the refs being visited with no bracket written since they
	// began: meeting one again is a cycle that reads nothing.
	bare map[string]bool
}

func (c *converter) errf(ptr, format string, args ...any) error {
	return &Error{Pointer: ptr, Msg: fmt.Sprintf(format, args...)}
}

func (c *converter) unsupported(ptr, format string, args ...any) error {
	return unsupportedError{&Error{Pointer: ptr, Msg: fmt.Sprintf(format, args...) + " is not supported"}}
}

// add defines rule name as body (a new name when name holds another
// body) and returns the name used.
func (c *converter) add(name, body string) string {
	name = ruleName(name)
	if old, ok := c.rules[name]; ok {
		if old == body {
			return name
		}
		for i := 1; ; i++ {
			n := name + strconv.Itoa(i)
			if old, ok := c.rules[n]; !ok || old == body {
				name = n
				break
			}
		}
	}
	if _, ok := c.rules[name]; !ok {
		c.order = append(c.order, name)
	}
	c.rules[name] = body
	return name
}

// reserve claims a name for a rule defined later (a $ref's target).
func (c *converter) reserve(name string) string {
	name = ruleName(name)
	for i := 1; ; i++ {
		if _, ok := c.rules[name]; !ok {
			break
		}
		name = ruleName(name) + strconv.Itoa(i)
	}
	c.rules[name] = ""
	c.order = append(c.order, name)
	return name
}

// prim is the shared rule name, added with what it needs.
func (c *converter) prim(name string) string {
	if _, ok := c.rules[name]; ok {
		return name
	}
	p := primitives[name]
	c.add(name, p.body) // first: value and object refer to each other
	for _, d := range p.deps {
		c.prim(d)
	}
	return name
}

func (c *converter) render() string {
	names := append([]string(nil), c.order...)
	sort.SliceStable(names, func(i, j int) bool { return names[i] == "root" && names[j] != "root" })
	text := func() string {
		var b strings.Builder
		for _, n := range names {
			fmt.Fprintf(&b, "%s ::= %s\n", n, c.rules[n])
		}
		return b.String()
	}
	out := text()
	// Rules the root does not reach (a default made before a keyword
	// replaced it, a shared rule's unused kin) are left out: the parser
	// names them as warnings, one rule a line.
	g, err := grammar.Parse(out)
	if err != nil || len(g.Warnings) == 0 {
		return out
	}
	unused := map[int]bool{}
	for _, w := range g.Warnings {
		unused[w.Line-1] = true
	}
	kept := names[:0]
	for i, n := range names {
		if !unused[i] {
			kept = append(kept, n)
		}
	}
	names = kept
	return text()
}

// ruleName makes a GBNF rule name of s.
func ruleName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "r"
	}
	return b.String()
}

// jsonLiteral is GBNF for a JSON value written compactly.
func (c *converter) jsonLiteral(n *node) string {
	return grammar.Literal(n.compact())
}

var ignored = map[string]bool{
	"title": true, "description": true, "examples": true, "default": true, "$schema": true, "$id": true,
	"$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true, "$defs": true, "definitions": true,
	"contentMediaType": true, "contentEncoding": true,
}

// known are the keywords the converter honors.
var known = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true, "enum": true, "const": true,
	"items": true, "prefixItems": true, "minItems": true, "maxItems": true, "anyOf": true, "oneOf": true, "allOf": true,
	"$ref": true, "minLength": true, "maxLength": true, "pattern": true, "format": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true,
}

// visit returns the name of a rule matching schema n (at pointer ptr),
// named after name.
func (c *converter) visit(n *node, ptr, name string) (string, error) {
	if n.kind == kBool {
		if n.b {
			return c.add(name, c.prim("value")), nil
		}
		return "", c.unsupported(ptr, "the schema false (nothing validates)")
	}
	if n.kind != kObject {
		return "", c.errf(ptr, "expected a schema (an object or a boolean), found %s", n.kindName())
	}
	for _, kv := range n.obj {
		if !known[kv.k] && !ignored[kv.k] {
			return "", c.unsupported(ptr+"/"+escapePtr(kv.k), "keyword %q", kv.k)
		}
	}
	if ref := n.get("$ref"); ref != nil {
		if len(n.obj) > 1 {
			for _, kv := range n.obj {
				if kv.k != "$ref" && !ignored[kv.k] {
					return "", c.unsupported(ptr+"/"+escapePtr(kv.k), "keyword %q beside $ref", kv.k)
				}
			}
		}
		return c.ref(ref, ptr+"/$ref")
	}
	if v := n.get("const"); v != nil {
		return c.add(name, c.jsonLiteral(v)), nil
	}
	if v := n.get("enum"); v != nil {
		if v.kind != kArray || len(v.arr) == 0 {
			return "", c.errf(ptr+"/enum", "expected a non-empty array")
		}
		alts := make([]string, len(v.arr))
		for i, e := range v.arr {
			alts[i] = c.jsonLiteral(e)
		}
		return c.add(name, "("+strings.Join(alts, " | ")+")"), nil
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if v := n.get(k); v != nil {
			if v.kind != kArray || len(v.arr) == 0 {
				return "", c.errf(ptr+"/"+k, "expected a non-empty array of schemas")
			}
			if err := c.onlyWith(n, ptr, k); err != nil {
				return "", err
			}
			alts := make([]string, len(v.arr))
			for i, e := range v.arr {
				r, err := c.visit(e, fmt.Sprintf("%s/%s/%d", ptr, k, i), fmt.Sprintf("%s-%d", name, i))
				if err != nil {
					return "", err
				}
				alts[i] = r
			}
			return c.add(name, strings.Join(alts, " | ")), nil
		}
	}
	if v := n.get("allOf"); v != nil {
		return c.allOf(n, v, ptr, name)
	}
	var types []string
	if t := n.get("type"); t != nil {
		switch t.kind {
		case kString:
			types = []string{t.s}
		case kArray:
			for _, e := range t.arr {
				if e.kind != kString {
					return "", c.errf(ptr+"/type", "expected type names")
				}
				types = append(types, e.s)
			}
		default:
			return "", c.errf(ptr+"/type", "expected a type name or an array of them")
		}
	} else {
		switch {
		case n.get("properties") != nil || n.get("additionalProperties") != nil:
			types = []string{"object"}
		case n.get("items") != nil || n.get("prefixItems") != nil:
			types = []string{"array"}
		case n.get("pattern") != nil || n.get("format") != nil || n.get("minLength") != nil || n.get("maxLength") != nil:
			types = []string{"string"}
		}
	}
	if len(types) == 0 {
		return c.add(name, c.prim("value")), nil
	}
	if len(types) > 1 {
		alts := make([]string, len(types))
		for i, t := range types {
			r, err := c.typed(n, ptr, name+"-"+t, t)
			if err != nil {
				return "", err
			}
			alts[i] = r
		}
		return c.add(name, strings.Join(alts, " | ")), nil
	}
	return c.typed(n, ptr, name, types[0])
}

// onlyWith refuses keywords beside a combinator that would be dropped.
func (c *converter) onlyWith(n *node, ptr, k string) error {
	for _, kv := range n.obj {
		if kv.k != k && !ignored[kv.k] && kv.k != "type" {
			return c.unsupported(ptr+"/"+escapePtr(kv.k), "keyword %q beside %s", kv.k, k)
		}
	}
	return nil
}

// keywordsFor are the keywords that apply to each type.
var keywordsFor = map[string][]string{
	"object":  {"properties", "required", "additionalProperties"},
	"array":   {"items", "prefixItems", "minItems", "maxItems"},
	"string":  {"minLength", "maxLength", "pattern", "format"},
	"integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
	"number":  {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
}

func (c *converter) typed(n *node, ptr, name, t string) (string, error) {
	switch t {
	case "object", "array":
		// A bracket is read before anything inside: refs met within
		// recurse on a shorter rest.
		saved := c.bare
		c.bare = nil
		defer func() { c.bare = saved }()
		if t == "object" {
			return c.object(n, ptr, name)
		}
		return c.array(n, ptr, name)
	case "string":
		return c.str(n, ptr, name)
	case "integer":
		return c.integer(n, ptr, name)
	case "number":
		for _, k := range keywordsFor["number"] {
			if n.get(k) != nil {
				return "", c.unsupported(ptr+"/"+k, "%q on a number (bounds are honored on integers)", k)
			}
		}
		return c.add(name, c.prim("number")), nil
	case "boolean":
		return c.add(name, c.prim("boolean")), nil
	case "null":
		return c.add(name, c.prim("null")), nil
	}
	return "", c.errf(ptr+"/type", "unknown type %q", t)
}

type prop struct {
	name   string
	schema *node
	ptr    string
}

func (c *converter) object(n *node, ptr, name string) (string, error) {
	var props []prop
	if p := n.get("properties"); p != nil {
		if p.kind != kObject {
			return "", c.errf(ptr+"/properties", "expected an object")
		}
		for _, kv := range p.obj {
			props = append(props, prop{kv.k, kv.v, ptr + "/properties/" + escapePtr(kv.k)})
		}
	}
	required := map[string]bool{}
	if r := n.get("required"); r != nil {
		if r.kind != kArray {
			return "", c.errf(ptr+"/required", "expected an array of property names")
		}
		for i, e := range r.arr {
			if e.kind != kString {
				return "", c.errf(fmt.Sprintf("%s/required/%d", ptr, i), "expected a property name")
			}
			required[e.s] = true
		}
	}
	add := n.get("additionalProperties")
	if add == nil && len(props) == 0 && !c.o.Strict {
		return c.add(name, c.prim("object")), nil
	}
	return c.buildObject(props, required, add, ptr, name)
}

func (c *converter) buildObject(props []prop, required map[string]bool, add *node, ptr, name string) (string, error) {
	sp := c.prim("space")
	kvs := make([]string, len(props))
	for i, p := range props {
		v, err := c.visit(p.schema, p.ptr, name+"-"+p.name)
		if err != nil {
			return "", err
		}
		kvs[i] = c.add(name+"-"+p.name+"-kv", grammar.Literal(strconv.Quote(p.name))+" "+sp+` ":" `+sp+" "+v)
	}
	declared := map[string]bool{}
	for _, p := range props {
		declared[p.name] = true
	}
	for k := range required {
		if !declared[k] {
			return "", c.errf(ptr+"/required", "property %q is required but not declared in properties", k)
		}
	}
	var req, opt []string
	for i, p := range props {
		if required[p.name] {
			req = append(req, kvs[i])
		} else {
			opt = append(opt, kvs[i])
		}
	}
	if add != nil && !(add.kind == kBool && !add.b) {
		if c.o.Strict {
			return "", c.unsupported(ptr+"/additionalProperties", "additionalProperties other than false in strict mode")
		}
		var val string
		if add.kind == kBool {
			val = c.prim("value")
		} else {
			var err error
			if val, err = c.visit(add, ptr+"/additionalProperties", name+"-additional-value"); err != nil {
				return "", err
			}
		}
		key := c.prim("string")
		if len(props) > 0 {
			names := make([]string, len(props))
			for i, p := range props {
				names[i] = p.name
			}
			key = c.add(name+"-additional-k", c.notStrings(names))
		}
		opt = append(opt, c.add(name+"-additional-kv", key+` ":" `+sp+" "+val))
		// Any number of additional keys: the last optional repeats.
		last := opt[len(opt)-1]
		opt[len(opt)-1] = c.add(name+"-additional-kvs", last+` ( "," `+sp+" "+last+" )*")
	}
	var b strings.Builder
	b.WriteString(`"{" ` + sp)
	for i, r := range req {
		if i > 0 {
			b.WriteString(` "," ` + sp)
		}
		b.WriteString(" " + r)
	}
	if len(opt) > 0 {
		// Optional properties keep their order, any subset of them.
		tail := func(j int) string {
			var t strings.Builder
			for _, o := range opt[j:] {
				t.WriteString(` ( "," ` + sp + " " + o + " )?")
			}
			return t.String()
		}
		if len(req) > 0 {
			b.WriteString(tail(0))
		} else {
			alts := make([]string, len(opt))
			for i, o := range opt {
				alts[i] = o + tail(i+1)
			}
			b.WriteString(" ( " + strings.Join(alts, " | ") + " )?")
		}
	}
	if len(req) > 0 || len(opt) > 0 {
		b.WriteString(" " + sp)
	}
	b.WriteString(` "}"`)
	return c.add(name, b.String()), nil
}

// notStrings is GBNF for a JSON string (quotes included) that is none of
// names: along the trie of the names, a character off every name's path
// frees the rest; a name's end must be followed by more.
func (c *converter) notStrings(names []string) string {
	type trie struct {
		kids map[rune]*trie
		end  bool
	}
	root := &trie{kids: map[rune]*trie{}}
	for _, n := range names {
		t := root
		for _, r := range n {
			k := t.kids[r]
			if k == nil {
				k = &trie{kids: map[rune]*trie{}}
				t.kids[r] = k
			}
			t = k
		}
		t.end = true
	}
	ch := c.prim("char")
	var visit func(t *trie) string
	visit = func(t *trie) string {
		var alts []string
		var rs []rune
		for r := range t.kids {
			rs = append(rs, r)
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i] < rs[j] })
		for _, r := range rs {
			alts = append(alts, grammar.Literal(string(r))+" ("+visit(t.kids[r])+")")
		}
		// A character no name continues with here: anything after.
		var class strings.Builder
		class.WriteString(`[^"\\\x7F\x00-\x1F`)
		for _, r := range rs {
			class.WriteString(classChar(r))
		}
		class.WriteString("]")
		alts = append(alts, class.String()+" "+ch+"*")
		// An escape spells a character too; like llama.cpp, one is taken
		// as off every name's path (\u0061 for "a" is not tracked).
		alts = append(alts, `[\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4}) `+ch+"*")
		body := strings.Join(alts, " | ")
		if !t.end {
			body += ` | ""` // stopping here spells no name
		}
		return body
	}
	_ = ch
	return `"\"" ( ` + visit(root) + ` ) "\""`
}

func classChar(r rune) string {
	switch r {
	case ']', '\\', '-', '^', '[':
		return `\` + string(r)
	case '\n':
		return `\n`
	case '\t':
		return `\t`
	case '\r':
		return `\r`
	}
	if r < 0x20 || r == 0x7f {
		return fmt.Sprintf(`\x%02X`, r)
	}
	return string(r)
}

func (c *converter) allOf(n, v *node, ptr, name string) (string, error) {
	if v.kind != kArray || len(v.arr) == 0 {
		return "", c.errf(ptr+"/allOf", "expected a non-empty array of schemas")
	}
	if err := c.onlyWith(n, ptr, "allOf"); err != nil {
		return "", err
	}
	if r, ok, err := c.allOfEnums(v, ptr, name); ok || err != nil {
		return r, err
	}
	var props []prop
	required := map[string]bool{}
	var merge func(s *node, p string, req bool) error
	merge = func(s *node, p string, req bool) error {
		if r := s.get("$ref"); r != nil {
			t, tp, err := c.resolve(r, p+"/$ref")
			if err != nil {
				return err
			}
			return merge(t, tp, req)
		}
		if any := s.get("anyOf"); any != nil && any.kind == kArray {
			for i, e := range any.arr {
				if err := merge(e, fmt.Sprintf("%s/anyOf/%d", p, i), false); err != nil {
					return err
				}
			}
			return nil
		}
		if s.kind != kObject {
			return c.unsupported(p, "allOf of a non-object schema")
		}
		t := s.get("type")
		if (t != nil && (t.kind != kString || t.s != "object")) || s.get("properties") == nil {
			return c.unsupported(p, "allOf of schemas other than objects with properties")
		}
		for _, kv := range s.obj {
			if kv.k != "type" && kv.k != "properties" && kv.k != "required" && !ignored[kv.k] {
				return c.unsupported(p+"/"+escapePtr(kv.k), "keyword %q in an allOf member", kv.k)
			}
		}
		for _, kv := range s.get("properties").obj {
			props = append(props, prop{kv.k, kv.v, p + "/properties/" + escapePtr(kv.k)})
		}
		if r := s.get("required"); r != nil && req {
			for _, e := range r.arr {
				if e.kind == kString {
					required[e.s] = true
				}
			}
		}
		return nil
	}
	for i, e := range v.arr {
		if err := merge(e, fmt.Sprintf("%s/allOf/%d", ptr, i), true); err != nil {
			return "", err
		}
	}
	return c.buildObject(props, required, nil, ptr, name)
}

// resolve finds a local $ref's target.
func (c *converter) resolve(r *node, ptr string) (*node, string, error) {
	if r.kind != kString {
		return nil, "", c.errf(ptr, "expected a string")
	}
	if !strings.HasPrefix(r.s, "#") {
		return nil, "", c.unsupported(ptr, "remote reference %q", r.s)
	}
	t := c.root
	path := ""
	for _, part := range strings.Split(strings.TrimPrefix(r.s, "#"), "/")[1:] {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		path += "/" + escapePtr(part)
		switch t.kind {
		case kObject:
			t = t.get(part)
		case kArray:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(t.arr) {
				t = nil
			} else {
				t = t.arr[i]
			}
		default:
			t = nil
		}
		if t == nil {
			return nil, "", c.errf(ptr, "reference %q leads nowhere", r.s)
		}
	}
	return t, path, nil
}

func (c *converter) ref(r *node, ptr string) (string, error) {
	t, tp, err := c.resolve(r, ptr)
	if err != nil {
		return "", err
	}
	if c.bare[r.s] {
		return "", c.errf(ptr, "reference %q refers to itself without an object or array between (no JSON value is finite)", r.s)
	}
	if name, ok := c.refs[r.s]; ok {
		return name, nil
	}
	base := r.s[strings.LastIndexByte(r.s, '/')+1:]
	if base == "" || base == "#" {
		base = "root"
	}
	name := c.reserve("ref-" + base)
	c.refs[r.s] = name
	if c.bare == nil {
		c.bare = map[string]bool{}
	}
	c.bare[r.s] = true
	body, err := c.visit(t, tp, name+"-body")
	delete(c.bare, r.s)
	if err != nil {
		return "", err
	}
	c.rules[name] = body
	return name, nil
}

func (c *converter) array(n *node, ptr, name string) (string, error) {
	sp := c.prim("space")
	// As llama.cpp reads them: items as an array is a tuple (draft 4's
	// form of prefixItems), prefixItems as one schema is items.
	pi, piKey := n.get("prefixItems"), "prefixItems"
	it, itKey := n.get("items"), "items"
	if it != nil && it.kind == kArray && pi == nil {
		pi, piKey, it = it, "items", nil
	}
	if pi != nil && pi.kind == kObject && it == nil {
		it, itKey, pi = pi, "prefixItems", nil
	}
	if pi != nil {
		if pi.kind != kArray {
			return "", c.errf(ptr+"/"+piKey, "expected an array of schemas")
		}
		for _, k := range []string{"minItems", "maxItems"} {
			if n.get(k) != nil {
				return "", c.unsupported(ptr+"/"+k, "%q with prefixItems", k)
			}
		}
		if it != nil && !(it.kind == kBool && !it.b) {
			return "", c.unsupported(ptr+"/"+itKey, "items beside prefixItems (only items: false)")
		}
		var b strings.Builder
		b.WriteString(`"[" ` + sp)
		for i, e := range pi.arr {
			r, err := c.visit(e, fmt.Sprintf("%s/%s/%d", ptr, piKey, i), fmt.Sprintf("%s-tuple-%d", name, i))
			if err != nil {
				return "", err
			}
			if i > 0 {
				b.WriteString(` "," ` + sp)
			}
			b.WriteString(" " + r)
		}
		b.WriteString(" " + sp + ` "]"`)
		return c.add(name, b.String()), nil
	}
	lo, hi := 0, -1
	var err error
	if lo, err = c.count(n, ptr, "minItems", 0); err != nil {
		return "", err
	}
	if hi, err = c.count(n, ptr, "maxItems", -1); err != nil {
		return "", err
	}
	if hi >= 0 && hi < lo {
		return "", c.errf(ptr+"/maxItems", "maxItems %d is below minItems %d", hi, lo)
	}
	var item string
	switch {
	case it == nil:
		item = c.prim("value")
	case it.kind == kArray:
		return "", c.errf(ptr+"/"+itKey, "expected a schema")
	default:
		if item, err = c.visit(it, ptr+"/"+itKey, name+"-item"); err != nil {
			return "", err
		}
	}
	return c.add(name, `"[" `+sp+" "+repetition(item, lo, hi, `"," `+sp)+" "+sp+` "]"`), nil
}

// repetition is GBNF for lo..hi (hi < 0: unbounded) items separated by
// sep.
func repetition(item string, lo, hi int, sep string) string {
	if hi == 0 {
		return ""
	}
	more := func(n int) string { // n more items, each after sep
		if sep == "" {
			return item
		}
		return "( " + sep + " " + item + " )"
	}
	var rest string
	switch {
	case hi < 0:
		rest = more(0) + "*"
		if lo > 1 {
			rest = more(0) + fmt.Sprintf("{%d,}", lo-1)
		}
	case hi == 1:
		rest = ""
	default:
		rest = more(0) + fmt.Sprintf("{%d,%d}", max(lo-1, 0), hi-1)
	}
	body := strings.TrimSpace(item + " " + rest)
	if lo == 0 {
		return "( " + body + " )?"
	}
	return body
}

func (c *converter) count(n *node, ptr, k string, def int) (int, error) {
	v := n.get(k)
	if v == nil {
		return def, nil
	}
	f, ok := v.num()
	if !ok || f < 0 || f != math.Trunc(f) || f > 1e6 {
		return 0, c.errf(ptr+"/"+k, "expected a non-negative integer")
	}
	return int(f), nil
}

func (c *converter) str(n *node, ptr, name string) (string, error) {
	if p := n.get("pattern"); p != nil {
		if p.kind != kString {
			return "", c.errf(ptr+"/pattern", "expected a string")
		}
		for _, k := range []string{"minLength", "maxLength", "format"} {
			if n.get(k) != nil {
				return "", c.unsupported(ptr+"/"+k, "%q beside pattern", k)
			}
		}
		body, err := c.pattern(p.s, ptr+"/pattern", name)
		if err != nil {
			return "", err
		}
		return c.add(name, `"\"" `+body+` "\""`), nil
	}
	if f := n.get("format"); f != nil {
		if f.kind != kString {
			return "", c.errf(ptr+"/format", "expected a string")
		}
		for _, k := range []string{"minLength", "maxLength"} {
			if n.get(k) != nil {
				return "", c.unsupported(ptr+"/"+k, "%q beside format", k)
			}
		}
		switch f.s {
		case "uuid":
			return c.add(name, c.prim("uuid")), nil
		case "date", "time", "date-time":
			return c.add(name, c.prim(f.s+"-string")), nil
		}
		return "", c.unsupported(ptr+"/format", "format %q (date, time, date-time and uuid are)", f.s)
	}
	lo, err := c.count(n, ptr, "minLength", 0)
	if err != nil {
		return "", err
	}
	hi, err := c.count(n, ptr, "maxLength", -1)
	if err != nil {
		return "", err
	}
	if hi >= 0 && hi < lo {
		return "", c.errf(ptr+"/maxLength", "maxLength %d is below minLength %d", hi, lo)
	}
	if lo == 0 && hi < 0 {
		return c.add(name, c.prim("string")), nil
	}
	ch := c.prim("char")
	rep := ch + "*"
	switch {
	case hi < 0:
		rep = fmt.Sprintf("%s{%d,}", ch, lo)
	case lo == hi:
		rep = fmt.Sprintf("%s{%d}", ch, lo)
	default:
		rep = fmt.Sprintf("%s{%d,%d}", ch, lo, hi)
	}
	return c.add(name, `"\"" `+rep+` "\""`), nil
}

func (c *converter) integer(n *node, ptr, name string) (string, error) {
	const big = 1 << 53
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	for _, k := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} {
		v := n.get(k)
		if v == nil {
			continue
		}
		f, ok := v.num()
		if !ok {
			return "", c.errf(ptr+"/"+k, "expected a number")
		}
		if math.Abs(f) > big {
			return "", c.unsupported(ptr+"/"+k, "a bound beyond ±2^53")
		}
		switch k {
		case "minimum":
			lo = max(lo, int64(math.Ceil(f)))
		case "exclusiveMinimum":
			lo = max(lo, int64(math.Floor(f))+1)
		case "maximum":
			hi = min(hi, int64(math.Floor(f)))
		case "exclusiveMaximum":
			hi = min(hi, int64(math.Ceil(f))-1)
		}
	}
	if lo == math.MinInt64 && hi == math.MaxInt64 {
		return c.add(name, c.prim("integer")), nil
	}
	if lo > hi {
		return "", c.errf(ptr, "no integer lies within the bounds")
	}
	return c.add(name, "("+intRange(lo, hi)+")"), nil // no space after, as llama.cpp
}

// escapePtr escapes a JSON pointer token.
func escapePtr(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// compactJSON re-encodes raw JSON compactly (for literals).
func compactJSON(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// allOfEnums is allOf whose members (through $ref) each list their values
// (enum or const): the values every member lists, in the first's order.
// ok is false when some member is not of that form.
func (c *converter) allOfEnums(v *node, ptr, name string) (string, bool, error) {
	var sets [][]*node
	for i, e := range v.arr {
		p := fmt.Sprintf("%s/allOf/%d", ptr, i)
		for depth := 0; e.kind == kObject && e.get("$ref") != nil && depth < 64; depth++ {
			t, tp, err := c.resolve(e.get("$ref"), p+"/$ref")
			if err != nil {
				return "", false, nil // allOf's own path reports it
			}
			e, p = t, tp
		}
		if e.kind != kObject {
			return "", false, nil
		}
		var vals []*node
		for _, kv := range e.obj {
			switch {
			case kv.k == "enum" && kv.v.kind == kArray:
				vals = kv.v.arr
			case kv.k == "const":
				vals = []*node{kv.v}
			case kv.k == "type" || ignored[kv.k]:
			default:
				return "", false, nil
			}
		}
		if vals == nil {
			return "", false, nil
		}
		sets = append(sets, vals)
	}
	var alts []string
	for _, x := range sets[0] {
		lit, in := c.jsonLiteral(x), true
		for _, s := range sets[1:] {
			found := false
			for _, y := range s {
				found = found || c.jsonLiteral(y) == lit
			}
			in = in && found
		}
		if in {
			alts = append(alts, lit)
		}
	}
	if len(alts) == 0 {
		return "", true, c.errf(ptr+"/allOf", "no value is in every member's enum")
	}
	return c.add(name, "("+strings.Join(alts, " | ")+")"), true, nil
}
