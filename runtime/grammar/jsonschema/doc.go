// Package jsonschema turns a JSON schema into a GBNF grammar (package
// grammar's dialect, llama.cpp's) whose language is the JSON texts that
// validate against the schema, with llama.cpp's whitespace conventions: a
// constrained model writes compact or lightly indented JSON.
//
// It covers what llama.cpp's converter covers: type (one or several),
// properties, required, additionalProperties (false or absent: none; true
// or a schema: more keys, never a declared one), enum, const, items,
// prefixItems (and, as llama.cpp reads them, items as an array for a
// tuple), minItems, maxItems, anyOf, oneOf (as anyOf), allOf (of objects:
// properties merged; of enums: their intersection), local $ref with $defs or definitions (recursion
// allowed), string minLength, maxLength, pattern (a regular-expression
// subset: literals, escapes, classes, '.', groups, alternation and
// quantifiers, anchored by ^ and $) and format (date, time, date-time,
// uuid), and integer minimum, maximum, exclusiveMinimum and
// exclusiveMaximum. A keyword it cannot honor is an error naming it and
// where it is (a JSON pointer), never dropped; annotations (title,
// description, examples, default, $schema, $id, $comment) are ignored.
//
// Properties keep the order they are written in (required and optional
// alike, as llama.cpp); Options.Strict is OpenAI's strict mode.
package jsonschema
