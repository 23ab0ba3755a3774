package server

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/runtime/grammar"
	"github.com/akunu-dev/akunu/runtime/grammar/jsonschema"
	"github.com/akunu-dev/akunu/runtime/toolcall"
)

// structured is what a chat request asks of its output's shape
// (docs/structured-output.md): a grammar the output must stay in
// (response_format json_object or json_schema, or tool_choice required or
// a named function), and whether the output is parsed into tool calls
// (tools offered and tool_choice not none) in the model's format.
type structured struct {
	gbnf  string          // "" : no constraint
	calls toolcall.Format // None: the output is all content
}

// structuredOf reads response_format, tools and tool_choice (already
// checked for shape by templateExtra) against e's tool-call format.
func (req *chatRequest) structuredOf(e *entry) (*structured, *apiError) {
	st := &structured{}
	choice, name := req.toolChoice()
	var tools []toolcall.Tool
	if len(req.Tools) > 0 && string(req.Tools) != "null" && choice != "none" {
		var err error
		if tools, err = toolcall.Tools(req.Tools); err != nil {
			return nil, badRequest("tools", "tools: %v", err)
		}
		if len(tools) > 0 {
			st.calls = e.tools // None: the template writes no calls, and the output is all content
		}
	}
	if choice == "required" || choice == "function" {
		if e.tools == toolcall.None {
			return nil, badRequest("tool_choice", "tool_choice: %s needs a tool-call format, and the model %q's chat template writes no tool calls (start the server with --tool-format to name one)", choice, e.id)
		}
		if name != "" && !hasTool(tools, name) {
			return nil, badRequest("tool_choice", "tool_choice: the function %q is not among the tools", name)
		}
		one := req.ParallelToolCalls != nil && !*req.ParallelToolCalls
		gbnf, err := toolcall.GrammarWith(e.tools, tools, name, toolcall.GrammarOptions{TagToken: e.tagToken, One: one})
		if err != nil {
			return nil, badRequest("tools", "tools: %v", err)
		}
		st.gbnf = gbnf
	}
	if len(req.ResponseFormat) == 0 || string(req.ResponseFormat) == "null" {
		return st, nil
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict bool            `json:"strict"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(req.ResponseFormat, &rf); err != nil {
		return nil, badRequest("response_format", "response_format: expected {\"type\": \"text\" | \"json_object\" | \"json_schema\", ...}")
	}
	if rf.Type != "text" && st.gbnf != "" {
		return nil, badRequest("response_format", "response_format: %q cannot be combined with tool_choice %s (the output is a tool call)", rf.Type, choice)
	}
	switch rf.Type {
	case "text":
	case "json_object":
		st.gbnf = jsonschema.JSONObject()
	case "json_schema":
		if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 || string(rf.JSONSchema.Schema) == "null" {
			return nil, badRequest("response_format.json_schema.schema", "response_format.json_schema.schema: expected a JSON schema object")
		}
		gbnf, err := jsonschema.ToGBNF(rf.JSONSchema.Schema, jsonschema.Options{Strict: rf.JSONSchema.Strict})
		if err != nil {
			return nil, badRequest("response_format.json_schema.schema", "response_format.json_schema.schema: %v", err)
		}
		st.gbnf = gbnf
	default:
		return nil, badRequest("response_format.type", "response_format.type: %q is not text, json_object or json_schema", rf.Type)
	}
	return st, nil
}

// toolChoice is the request's tool_choice: none, auto, required or
// function (with its name).
func (req *chatRequest) toolChoice() (choice, name string) {
	if len(req.ToolChoice) == 0 || string(req.ToolChoice) == "null" {
		return "auto", ""
	}
	var s string
	if json.Unmarshal(req.ToolChoice, &s) == nil {
		return s, ""
	}
	var named struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	_ = json.Unmarshal(req.ToolChoice, &named)
	return "function", named.Function.Name
}

func hasTool(tools []toolcall.Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// tagToken is the one token whose text is a tool-call tag, if the
// vocabulary has it (toolcall.GrammarOptions).
func (e *entry) tagToken(text string) (int32, bool) {
	ids := e.tok.Tokenize(text, false, true)
	if len(ids) == 1 && e.tok.TokenToPiece(ids[0], true) == text {
		return ids[0], true
	}
	return 0, false
}

// grammarCache keeps a loaded model's compiled grammars by their GBNF
// text, so that requests with one schema share its machine and its cache
// of masks (the costly part is the first walk of each grammar state).
type grammarCache struct {
	mu sync.Mutex
	m  map[string]*grammar.Index
}

// maxGrammars bounds the cache: past it, the cache starts over.
const maxGrammars = 32

// constraint is a new generation's constraint for gbnf on m.
func (c *grammarCache) constraint(m *runtime.Model, gbnf string) (*runtime.Constraint, error) {
	c.mu.Lock()
	x := c.m[gbnf]
	c.mu.Unlock()
	if x == nil {
		g, err := grammar.Parse(gbnf)
		if err != nil {
			return nil, fmt.Errorf("the generated grammar: %w", err)
		}
		if x, err = m.GrammarIndex(g); err != nil {
			return nil, err
		}
		c.mu.Lock()
		if c.m == nil || len(c.m) >= maxGrammars {
			c.m = map[string]*grammar.Index{} // a map has no order to evict by; a fresh start costs one compile each
		}
		c.m[gbnf] = x
		c.mu.Unlock()
	}
	return runtime.NewConstraint(x), nil
}

// toolCallOut is OpenAI's tool_calls[i]: whole in a message, in pieces in
// a stream's deltas (the first with index, id, type and name; then
// argument text with the index).
type toolCallOut struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// callsOut are parsed calls as a message's tool_calls.
func callsOut(calls []toolcall.Call) []toolCallOut {
	out := make([]toolCallOut, len(calls))
	for i, c := range calls {
		out[i].ID, out[i].Type = c.ID, "function"
		out[i].Function.Name, out[i].Function.Arguments = c.Name, c.Arguments
	}
	return out
}

// callDeltas turns a stream's events into one chunk's content delta and
// tool-call deltas. A client accumulates content and each call's pieces
// separately, so their order within one chunk carries nothing.
func callDeltas(evs []toolcall.Event) (content string, calls []toolCallOut) {
	for _, ev := range evs {
		switch ev.Kind {
		case toolcall.EventContent:
			content += ev.Text
		case toolcall.EventCall:
			i := ev.Index
			c := toolCallOut{Index: &i, ID: ev.ID, Type: "function"}
			c.Function.Name = ev.Name
			calls = append(calls, c)
		case toolcall.EventArgs:
			i := ev.Index
			if n := len(calls); n > 0 && *calls[n-1].Index == i {
				calls[n-1].Function.Arguments += ev.Text // one delta per call per chunk
				continue
			}
			c := toolCallOut{Index: &i}
			c.Function.Arguments = ev.Text
			calls = append(calls, c)
		}
	}
	return content, calls
}
