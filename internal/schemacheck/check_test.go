package schemacheck

import "testing"

func TestValidate(t *testing.T) {
	cases := []struct {
		name, schema, doc string
		ok                bool
	}{
		{"an object with its required keys validates", `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`, `{"a": 3}`, true},
		{"a missing required key fails", `{"type":"object","required":["a"]}`, `{}`, false},
		{"an extra key fails under additionalProperties false", `{"type":"object","properties":{"a":{}},"additionalProperties":false}`, `{"a":1,"b":2}`, false},
		{"an extra key follows an additionalProperties schema", `{"type":"object","additionalProperties":{"type":"string"}}`, `{"b":2}`, false},
		{"1.5 is not an integer", `{"type":"integer"}`, `1.5`, false},
		{"1.0 is an integer", `{"type":"integer"}`, `1.0`, true},
		{"a type list admits either", `{"type":["string","null"]}`, `null`, true},
		{"an enum value validates", `{"enum":["a",1,null]}`, `1.0`, true},
		{"a value outside the enum fails", `{"enum":["a",1,null]}`, `"b"`, false},
		{"const compares objects by value", `{"const":{"k":[1,2]}}`, `{"k":[1,2]}`, true},
		{"maxItems bounds arrays", `{"type":"array","maxItems":1}`, `[1,2]`, false},
		{"prefixItems check by position", `{"prefixItems":[{"type":"string"},{"type":"integer"}]}`, `["a","b"]`, false},
		{"items false forbids items past the prefix", `{"prefixItems":[{}],"items":false}`, `[1,2]`, false},
		{"maxLength counts characters, not bytes", `{"type":"string","maxLength":2}`, `"éé"`, true},
		{"minLength fails short strings", `{"type":"string","minLength":2}`, `"a"`, false},
		{"pattern is a search unless anchored", `{"type":"string","pattern":"^[A-Z]{2}$"}`, `"ABC"`, false},
		{"uuid format", `{"type":"string","format":"uuid"}`, `"123e4567-e89b-12d3-a456-426614174000"`, true},
		{"a bad date fails", `{"type":"string","format":"date"}`, `"2024-13-01"`, false},
		{"exclusiveMaximum excludes the bound", `{"type":"integer","exclusiveMaximum":10}`, `10`, false},
		{"minimum includes the bound", `{"type":"integer","minimum":-3}`, `-3`, true},
		{"oneOf refuses two matches", `{"oneOf":[{"type":"integer"},{"type":"number"}]}`, `1`, false},
		{"anyOf takes one match", `{"anyOf":[{"type":"string"},{"type":"null"}]}`, `null`, true},
		{"allOf needs every member", `{"allOf":[{"required":["a"]},{"required":["b"]}]}`, `{"a":1}`, false},
		{"a $ref resolves in $defs", `{"$defs":{"p":{"type":"integer","maximum":2}},"$ref":"#/$defs/p"}`, `3`, false},
		{"an unknown keyword is refused, not ignored", `{"multipleOf":2}`, `4`, false},
		{"two JSON values are not one document", `{}`, `{} {}`, false},
		{"a $ref cycle without progress ends", `{"$ref":"#"}`, `1`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Validate([]byte(c.schema), []byte(c.doc))
			if (err == nil) != c.ok {
				t.Fatalf("Validate(%s, %s) = %v, want ok=%v", c.schema, c.doc, err, c.ok)
			}
		})
	}
}
