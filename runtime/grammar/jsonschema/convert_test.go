package jsonschema

import (
	"testing"

	"github.com/akunu-dev/akunu/runtime/grammar"
)

func accepts(t *testing.T, schema string) func(string) bool {
	t.Helper()
	g, err := Grammar([]byte(schema), Options{})
	if err != nil {
		t.Fatalf("%s: %v", schema, err)
	}
	if len(g.Warnings) > 0 { // the converter writes only rules it uses
		t.Errorf("%s: %v", schema, g.Warnings)
	}
	m, err := grammar.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	return m.Accepts
}

func TestConvertLanguages(t *testing.T) {
	for _, tc := range []struct {
		schema   string
		yes, not []string
	}{
		{`{"type":"integer","minimum":-12,"maximum":305}`, []string{"-12", "-1", "0", "-0", "9", "10", "99", "100", "305", "299"}, []string{"-13", "306", "310", "01", "-00", "1000", "3050"}},
		{`{"type":"integer","exclusiveMinimum":7}`, []string{"8", "9", "10", "123456"}, []string{"7", "0", "-1", "08"}},
		{`{"type":"integer","maximum":-3}`, []string{"-3", "-4", "-1000"}, []string{"-2", "0", "3"}},
		{`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a"]}`,
			[]string{`{"a":"x"}`, `{"a": "x", "b": 3}`, "{\n  \"a\": \"\"\n}"}, []string{`{}`, `{"b":3}`, `{"b":3,"a":"x"}`, `{"a":"x","c":1}`}},
		{`{"properties":{"a":{"const":1},"b":{"enum":["x",null]}}}`, []string{`{}`, `{"a":1}`, `{"b":null}`, `{"a":1,"b":"x"}`}, []string{`{"a":2}`, `{"b":"y"}`}},
		{`{"type":"object","properties":{"n":{"type":"string"}},"additionalProperties":{"type":"integer"}}`,
			[]string{`{"n":"a","x":1}`, `{"x":1,"y":2}`, `{"nn":3}`, `{}`}, []string{`{"n":1}`, `{"x":"s"}`}},
		{`{"type":"array","items":{"type":"boolean"},"minItems":1,"maxItems":3}`, []string{`[true]`, `[true, false, true]`}, []string{`[]`, `[true,true,true,true]`, `[1]`}},
		{`{"prefixItems":[{"type":"string"},{"type":"number"}]}`, []string{`["a", 1.5e3]`}, []string{`["a"]`, `[1, "a"]`}},
		{`{"type":"string","minLength":2,"maxLength":3}`, []string{`"ab"`, `"abc"`, `"\n\""`}, []string{`"a"`, `"abcd"`}},
		{`{"type":"string","pattern":"^[A-Z]{2}-\\d{3}(x|yz)?$"}`, []string{`"AB-123"`, `"QQ-000yz"`}, []string{`"ab-123"`, `"AB-12"`, `"AB-123y"`}},
		{`{"type":"string","format":"date"}`, []string{`"2024-02-29"`}, []string{`"2024-13-01"`, `"24-01-01"`}},
		{`{"type":"string","format":"uuid"}`, []string{`"123e4567-e89b-12d3-a456-426614174000"`}, []string{`"123e4567e89b12d3a456426614174000"`}},
		{`{"$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}}}},"$ref":"#/$defs/node"}`,
			[]string{`{}`, `{"next":{}}`, `{"next":{"next":{}}}`}, []string{`{"next":1}`}},
		{`{"anyOf":[{"type":"integer"},{"type":"null"}]}`, []string{`3`, `null`}, []string{`"3"`}},
		{`{"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},{"properties":{"b":{"type":"integer"}}}]}`,
			[]string{`{"a":1}`, `{"a":1,"b":2}`}, []string{`{"b":2}`}},
		{`{"type":["string","null"]}`, []string{`"x"`, `null`}, []string{`1`}},
	} {
		ok := accepts(t, tc.schema)
		for _, s := range tc.yes {
			if !ok(s) {
				t.Errorf("%s: refuses %q", tc.schema, s)
			}
		}
		for _, s := range tc.not {
			if ok(s) {
				t.Errorf("%s: accepts %q", tc.schema, s)
			}
		}
	}
}

func TestConvertErrors(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type":"integer","multipleOf":3}`, `/multipleOf: keyword "multipleOf" is not supported`},
		{`{"properties":{"a":{"not":{}}}}`, `/properties/a/not: keyword "not" is not supported`},
		{"{\n  \"type\": \"object\",\n  \"properties\": {\n    \"a\": }\n}", `4:10: malformed JSON: invalid character '}' looking for beginning of value`},
		{`{"$ref":"http://x/y.json"}`, `/$ref: remote reference "http://x/y.json" is not supported`},
		{`{"type":"string","format":"email"}`, `/format: format "email" (date, time, date-time and uuid are) is not supported`},
		{`{"type":"string","pattern":"abc"}`, `/pattern: a pattern not anchored by ^ and $ is not supported`},
		{`{"type":"number","minimum":0.5}`, `/minimum: "minimum" on a number (bounds are honored on integers) is not supported`},
		{`{"type":"integer","minimum":5,"maximum":4}`, `/: no integer lies within the bounds`},
		{`{"required":["x"],"properties":{"a":{}}}`, `/required: property "x" is required but not declared in properties`},
		{`{"type":"object","properties":{},"additionalProperties":true}`, ``},
		{`{"$defs":{"a":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},"$ref":"#/$defs/a"}`, `/$ref: reference "#/$defs/a" refers to itself without an object or array between (no JSON value is finite)`},
	} {
		_, err := ToGBNF([]byte(tc.schema), Options{})
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.schema, got, tc.want)
		}
	}
}
