package schemacheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Validate reports whether doc is one JSON value that validates against
// schema; the error names the JSON pointer in doc and the keyword that
// failed, or the schema's fault.
func Validate(schema, doc []byte) error {
	s, err := decode(schema)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	v, err := decode(doc)
	if err != nil {
		return fmt.Errorf("document: %w", err)
	}
	c := &checker{root: s}
	return c.check(s, v, "", 0)
}

func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("text after the JSON value")
	}
	if _, err := d.Token(); err == nil {
		return nil, fmt.Errorf("text after the JSON value")
	}
	return v, nil
}

type checker struct{ root any }

var annotations = map[string]bool{
	"title": true, "description": true, "examples": true, "default": true,
	"$schema": true, "$id": true, "$comment": true, "$defs": true, "definitions": true,
}

var formats = map[string]*regexp.Regexp{
	"date":      regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$`),
	"time":      regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{3})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`),
	"date-time": regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{3})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`),
	"uuid":      regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`),
}

func (c *checker) check(schema, v any, at string, depth int) error {
	if depth > 64 {
		return fmt.Errorf("%s: $ref nests deeper than 64", ptr(at))
	}
	switch s := schema.(type) {
	case bool:
		if !s {
			return fmt.Errorf("%s: the schema false admits nothing", ptr(at))
		}
		return nil
	case map[string]any:
		for k, kv := range s {
			if err := c.keyword(s, k, kv, v, at, depth); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%s: a schema must be an object or a boolean, not %T", ptr(at), schema)
}

func ptr(at string) string {
	if at == "" {
		return "(root)"
	}
	return at
}

func (c *checker) keyword(s map[string]any, k string, kv, v any, at string, depth int) error {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%s: %s: %s", ptr(at), k, fmt.Sprintf(format, a...))
	}
	switch k {
	case "type":
		var types []string
		switch t := kv.(type) {
		case string:
			types = []string{t}
		case []any:
			for _, x := range t {
				if str, ok := x.(string); ok {
					types = append(types, str)
				}
			}
		}
		for _, t := range types {
			if hasType(v, t) {
				return nil
			}
		}
		return fail("%s is not %s", kindOf(v), strings.Join(types, " or "))
	case "properties":
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		props, _ := kv.(map[string]any)
		for name, sub := range props {
			if x, ok := obj[name]; ok {
				if err := c.check(sub, x, at+"/"+name, depth); err != nil {
					return err
				}
			}
		}
	case "required":
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		names, _ := kv.([]any)
		for _, n := range names {
			if str, _ := n.(string); str != "" {
				if _, ok := obj[str]; !ok {
					return fail("%q is missing", str)
				}
			}
		}
	case "additionalProperties":
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		props, _ := s["properties"].(map[string]any)
		for name, x := range obj {
			if _, declared := props[name]; declared {
				continue
			}
			if err := c.check(kv, x, at+"/"+name, depth); err != nil {
				return fail("%q: %v", name, err)
			}
		}
	case "enum":
		list, _ := kv.([]any)
		for _, x := range list {
			if equal(x, v) {
				return nil
			}
		}
		return fail("%s is not one of the %d values", short(v), len(list))
	case "const":
		if !equal(kv, v) {
			return fail("%s is not %s", short(v), short(kv))
		}
	case "items":
		arr, ok := v.([]any)
		if !ok {
			return nil
		}
		pre, _ := s["prefixItems"].([]any)
		for i := len(pre); i < len(arr); i++ {
			if err := c.check(kv, arr[i], fmt.Sprintf("%s/%d", at, i), depth); err != nil {
				return err
			}
		}
	case "prefixItems":
		arr, ok := v.([]any)
		if !ok {
			return nil
		}
		pre, _ := kv.([]any)
		for i := 0; i < len(pre) && i < len(arr); i++ {
			if err := c.check(pre[i], arr[i], fmt.Sprintf("%s/%d", at, i), depth); err != nil {
				return err
			}
		}
	case "minItems", "maxItems":
		arr, ok := v.([]any)
		if !ok {
			return nil
		}
		n, err := count(kv)
		if err != nil {
			return fail("%v", err)
		}
		if k == "minItems" && len(arr) < n || k == "maxItems" && len(arr) > n {
			return fail("%d items", len(arr))
		}
	case "minLength", "maxLength":
		str, ok := v.(string)
		if !ok {
			return nil
		}
		n, err := count(kv)
		if err != nil {
			return fail("%v", err)
		}
		l := utf8.RuneCountInString(str)
		if k == "minLength" && l < n || k == "maxLength" && l > n {
			return fail("%q has %d characters", str, l)
		}
	case "pattern":
		str, ok := v.(string)
		if !ok {
			return nil
		}
		p, _ := kv.(string)
		re, err := regexp.Compile(p)
		if err != nil {
			return fail("%v", err)
		}
		if !re.MatchString(str) {
			return fail("%q does not match %s", str, p)
		}
	case "format":
		str, ok := v.(string)
		if !ok {
			return nil
		}
		f, _ := kv.(string)
		re := formats[f]
		if re == nil {
			return fail("format %q is not checked by this validator", f)
		}
		if !re.MatchString(str) {
			return fail("%q is not a %s", str, f)
		}
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		n, ok := v.(json.Number)
		if !ok {
			return nil
		}
		bound, ok := kv.(json.Number)
		if !ok {
			return fail("expected a number")
		}
		x, _ := new(big.Rat).SetString(n.String())
		b, _ := new(big.Rat).SetString(bound.String())
		if x == nil || b == nil {
			return fail("a number out of range")
		}
		cmp := x.Cmp(b)
		bad := k == "minimum" && cmp < 0 || k == "maximum" && cmp > 0 ||
			k == "exclusiveMinimum" && cmp <= 0 || k == "exclusiveMaximum" && cmp >= 0
		if bad {
			return fail("%s is out of bounds (%s)", n, bound)
		}
	case "anyOf", "oneOf":
		list, _ := kv.([]any)
		matched := 0
		var last error
		for _, sub := range list {
			if err := c.check(sub, v, at, depth); err != nil {
				last = err
			} else {
				matched++
			}
		}
		if matched == 0 {
			return fail("no branch matches (last: %v)", last)
		}
		if k == "oneOf" && matched > 1 {
			return fail("%d branches match, want exactly one", matched)
		}
	case "allOf":
		list, _ := kv.([]any)
		for _, sub := range list {
			if err := c.check(sub, v, at, depth); err != nil {
				return err
			}
		}
	case "$ref":
		ref, _ := kv.(string)
		target, err := c.resolve(ref)
		if err != nil {
			return fail("%v", err)
		}
		return c.check(target, v, at, depth+1)
	default:
		if !annotations[k] {
			return fail("keyword not checked by this validator")
		}
	}
	return nil
}

// resolve follows a local reference ("#", "#/$defs/x", "#/definitions/x").
func (c *checker) resolve(ref string) (any, error) {
	if !strings.HasPrefix(ref, "#") {
		return nil, fmt.Errorf("%q is not a local reference", ref)
	}
	cur := c.root
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#"), "/")[1:] {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%q does not resolve", ref)
		}
		if cur, ok = m[part]; !ok {
			return nil, fmt.Errorf("%q does not resolve", ref)
		}
	}
	return cur, nil
}

func count(v any) (int, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("expected a count")
	}
	i, err := n.Int64()
	if err != nil || i < 0 || i > 1<<30 {
		return 0, fmt.Errorf("expected a count, not %s", n)
	}
	return int(i), nil
}

func hasType(v any, t string) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		r, ok := new(big.Rat).SetString(n.String())
		return ok && r.IsInt()
	}
	return false
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}

// equal compares JSON values, numbers by value (1.0 equals 1).
func equal(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		p, ok1 := new(big.Rat).SetString(x.String())
		q, ok2 := new(big.Rat).SetString(y.String())
		return ok1 && ok2 && p.Cmp(q) == 0
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equal(xv, yv) {
				return false
			}
		}
		return true
	}
	return a == b
}
