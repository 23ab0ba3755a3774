// Package toolcall turns a model's raw output into OpenAI tool calls and
// back into a grammar that forces them.
//
// A model announces a call in the one format its chat template was trained
// on (Format): Hermes/Qwen wrap a {"name", "arguments"} object in
// <tool_call> tags, Llama 3.1 emits a bare {"name", "parameters"} object
// (possibly after <|python_tag|>), Mistral a [TOOL_CALLS] array. FormatOf
// finds a template's format by rendering a probe call through it and
// keeping the format whose parser recovers exactly that call: the template
// declares the format, nothing is guessed from the model's name.
//
// Stream parses output as it is generated into content deltas, call starts
// and argument deltas, holding back only the text that may still become a
// tag or a call; Parse is the same machine fed the whole text at once, so
// the two agree by construction. Grammar writes GBNF (package grammar's
// dialect) for calls whose arguments follow each tool's JSON schema, for
// tool_choice "required" or a named function.
//
// It knows chat templates (package chat) and JSON schemas (package
// grammar/jsonschema), nothing of tokens, models or HTTP.
// docs/adr/0016-tool-calls.md says why the format is derived at load and
// what happens to a malformed call.
package toolcall
