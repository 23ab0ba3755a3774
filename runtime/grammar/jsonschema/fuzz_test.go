package jsonschema

import (
	"errors"
	"testing"

	"github.com/akunu-dev/akunu/runtime/grammar"
)

// FuzzToGBNF: no input panics; an error is one line; a success parses and
// compiles.
func FuzzToGBNF(f *testing.F) {
	for _, s := range []string{
		`{}`, `true`, `{"type":"integer","minimum":-5,"maximum":120}`,
		`{"type":"object","properties":{"a":{"type":"string","minLength":1},"b":{"enum":[1,"x",null]}},"required":["a"],"additionalProperties":{"type":"number"}}`,
		`{"type":"array","items":{"type":"boolean"},"minItems":1,"maxItems":4}`,
		`{"prefixItems":[{"const":"x"},{"type":"null"}]}`,
		`{"type":"string","pattern":"^[a-z]{2,3}(-\\d+)?$"}`,
		`{"type":"string","format":"date-time"}`,
		`{"$defs":{"n":{"properties":{"k":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`,
		`{"anyOf":[{"type":"integer"},{"type":"string"}]}`,
		`{"allOf":[{"enum":["a","b"]},{"enum":["b"]}]}`,
		`{"type":"integer","exclusiveMaximum":0}`,
	} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, schema string, strict bool) {
		src, err := ToGBNF([]byte(schema), Options{Strict: strict})
		if err != nil {
			if msg := err.Error(); msg == "" || containsNewline(msg) {
				t.Fatalf("error not one line: %q", msg)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is not an *Error: %v", err)
			}
			return
		}
		g, err := grammar.Parse(src)
		if err != nil {
			t.Fatalf("output does not parse: %v\n%s", err, src)
		}
		if _, err := grammar.Compile(g); err != nil {
			t.Fatalf("output does not compile: %v\n%s", err, src)
		}
	})
}

func containsNewline(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return true
		}
	}
	return false
}
