package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/akunu-dev/akunu/runtime/grammar"
	"github.com/akunu-dev/akunu/runtime/grammar/jsonschema"
)

// Tool is a function a request offers the model.
type Tool struct {
	Name string
	// Parameters is the JSON schema of the arguments (empty: any object).
	Parameters json.RawMessage
	// Strict is OpenAI's strict mode for the schema.
	Strict bool
}

// maxTools bounds a request's tools, as the grammar holds a rule set per tool.
const maxTools = 128

// Tools reads an OpenAI request's tools array:
// [{"type": "function", "function": {"name", "parameters", "strict"}}].
func Tools(raw []byte) ([]Tool, error) {
	var list []struct {
		Type     string `json:"type"`
		Function *struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
			Strict     *bool           `json:"strict"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("tools: expected an array of tool objects")
	}
	if len(list) > maxTools {
		return nil, fmt.Errorf("tools: %d tools, more than %d", len(list), maxTools)
	}
	tools := make([]Tool, len(list))
	seen := map[string]bool{}
	for i, t := range list {
		if t.Type != "function" || t.Function == nil || t.Function.Name == "" {
			return nil, fmt.Errorf(`tools[%d]: expected {"type": "function", "function": {"name": ...}}`, i)
		}
		if seen[t.Function.Name] {
			return nil, fmt.Errorf("tools[%d].function.name: %q is declared twice", i, t.Function.Name)
		}
		seen[t.Function.Name] = true
		tools[i] = Tool{Name: t.Function.Name, Parameters: t.Function.Parameters, Strict: t.Function.Strict != nil && *t.Function.Strict}
	}
	return tools, nil
}

// Grammar is GBNF for output that is only calls, in format f, of the tools
// (of the one named name, when not empty: tool_choice naming a function),
// whose arguments follow each tool's parameters schema. Hermes and Mistral
// allow one or more calls, Llama3 exactly one (its template refuses more);
// Mistral's carry the 9-character id its template writes (the parser
// ignores it and gives the call an id of its own). The text is the template's own rendering of a call, byte for byte, so
// that a constrained model writes what it was trained on.
func Grammar(f Format, tools []Tool, name string) (string, error) {
	return GrammarWith(f, tools, name, GrammarOptions{})
}

// GrammarOptions shape a tool-call grammar.
type GrammarOptions struct {
	// TagToken, when set, gives the id of the one token whose text is a
	// tag ("<tool_call>", "</tool_call>", "[TOOL_CALLS]"), if the
	// vocabulary has one: the grammar then asks for that token (<[id]>),
	// as the model was trained to write it, rather than for its text
	// spelled in other tokens (a control token, such as Mistral's, has no
	// text a mask could match at all).
	TagToken func(text string) (id int32, ok bool)
	// One allows exactly one call (OpenAI's parallel_tool_calls: false);
	// otherwise one or more, as the format separates them.
	One bool
}

// GrammarWith is Grammar with options.
func GrammarWith(f Format, tools []Tool, name string, o GrammarOptions) (string, error) {
	if f == None {
		return "", fmt.Errorf("tool_choice: the model's chat template declares no tool-call format (set one with --tool-format)")
	}
	if len(tools) == 0 {
		return "", fmt.Errorf("tool_choice: no tools to call")
	}
	argsKey := "arguments"
	if f == Llama3 {
		argsKey = "parameters"
	}
	var fns, rules []string
	found := false
	for i, t := range tools {
		if name != "" && t.Name != name {
			continue
		}
		found = true
		args, err := argsGrammar(t, fmt.Sprintf("t%d-", i))
		if err != nil {
			return "", fmt.Errorf("tools[%d].function.parameters: %w", i, err)
		}
		nameJSON, _ := json.Marshal(t.Name)
		fn := fmt.Sprintf("fn-%d", i)
		fns = append(fns, fn)
		rules = append(rules, fmt.Sprintf("%s ::= %s t%d-root", fn, grammar.Literal(string(nameJSON)+`, "`+argsKey+`": `), i), args)
	}
	if !found {
		return "", fmt.Errorf("tool_choice: function %q is not among the request's tools", name)
	}
	more := func(sep string) string { // further calls, unless One
		if o.One {
			return ""
		}
		return " (" + grammar.Literal(sep) + " call)*"
	}
	var b strings.Builder
	switch f {
	case Hermes:
		b.WriteString("root ::= call" + more("\n") + "\n")
		fmt.Fprintf(&b, "call ::= %s %s fn %s %s\n", o.tag(f.openTag()), grammar.Literal("\n{\"name\": "), grammar.Literal("}\n"), o.tag(hermesClose))
	case Llama3:
		b.WriteString(`root ::= "{\"name\": " fn "}"` + "\n")
	case Mistral:
		fmt.Fprintf(&b, "root ::= %s \"[\" call%s \"]\"\n", o.tag(f.openTag()), more(", "))
		// The template writes each call's id after its function, and
		// the model was trained to write one.
		b.WriteString(`call ::= "{\"name\": " fn ", \"id\": \"" [a-zA-Z0-9]{9} "\"}"` + "\n")
	default:
		return "", fmt.Errorf("tool format %v has no grammar", f)
	}
	fmt.Fprintf(&b, "fn ::= %s\n", strings.Join(fns, " | "))
	for _, r := range rules {
		b.WriteString(r)
		if !strings.HasSuffix(r, "\n") {
			b.WriteByte('\n')
		}
	}
	src := b.String()
	if _, err := grammar.Parse(src); err != nil {
		return "", fmt.Errorf("toolcall: the grammar made does not parse (a bug): %w", err)
	}
	return src, nil
}

// argsGrammar is the GBNF of a tool's arguments, its rules renamed with
// prefix so that several tools' rules live in one grammar.
func argsGrammar(t Tool, prefix string) (string, error) {
	schema := bytes.TrimSpace(t.Parameters)
	if len(schema) == 0 || string(schema) == "null" {
		schema = []byte(`{"type": "object"}`)
	}
	// Arguments are an object: a schema of another type could never be a
	// call (the parser reads only objects).
	var top struct {
		Type json.RawMessage `json:"type"`
	}
	if json.Unmarshal(schema, &top) == nil && len(top.Type) > 0 && string(top.Type) != `"object"` {
		return "", fmt.Errorf(`type must be "object", not %s`, top.Type)
	}
	g, err := jsonschema.Grammar(schema, jsonschema.Options{Strict: t.Strict})
	if err != nil {
		return "", err
	}
	for i := range g.Rules {
		g.Rules[i].Name = prefix + g.Rules[i].Name
	}
	return g.String(), nil
}

// tag is GBNF for a tag: its token, or its text.
func (o GrammarOptions) tag(text string) string {
	if o.TagToken != nil {
		if id, ok := o.TagToken(text); ok && id >= 0 {
			return fmt.Sprintf("<[%d]>", id)
		}
	}
	return grammar.Literal(text)
}
