package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/internal/schemacheck"
)

type structOut struct {
	Choices []struct {
		Message struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// TestResponseFormat: json_schema output validates against the schema,
// json_object output is an object, greedy and sampled; text is no
// constraint; a schema the converter refuses is a 400 naming the field.
func TestResponseFormat(t *testing.T) {
	ts := startServer(t, Config{})
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","maxLength":10},"age":{"type":"integer","minimum":0,"maximum":99},"pet":{"enum":["cat","dog"]}},"required":["name","age","pet"],"additionalProperties":false}`)
	for seed := 0; seed < 3; seed++ {
		temp := 0.0
		if seed > 0 {
			temp = 1
		}
		for _, rf := range []map[string]any{
			{"type": "json_schema", "json_schema": map[string]any{"name": "person", "schema": schema, "strict": true}},
			{"type": "json_object"},
		} {
			var out structOut
			ts.postOK(t, "/v1/chat/completions", map[string]any{"model": "stories260K", "messages": []map[string]string{{"role": "user", "content": "Tell me about a person."}},
				"response_format": rf, "temperature": temp, "seed": seed, "max_tokens": 300}, &out)
			ch := out.Choices[0]
			text := deref(ch.Message.Content)
			if ch.FinishReason != "stop" {
				t.Fatalf("%v seed %d: finish %q after %q, want stop where the grammar ends", rf["type"], seed, ch.FinishReason, text)
			}
			if rf["type"] == "json_schema" {
				if err := schemacheck.Validate(schema, []byte(text)); err != nil {
					t.Fatalf("seed %d: %q: %v", seed, text, err)
				}
			} else {
				var obj map[string]any
				if err := json.Unmarshal([]byte(text), &obj); err != nil {
					t.Fatalf("seed %d: %q is not a JSON object: %v", seed, text, err)
				}
			}
		}
	}
	for _, c := range []struct {
		name, param string
		rf          any
	}{
		{"an unsupported keyword", "response_format.json_schema.schema", map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": map[string]any{"type": "integer", "multipleOf": 3}}}},
		{"no schema", "response_format.json_schema.schema", map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x"}}},
		{"an unknown type", "response_format.type", map[string]any{"type": "yaml"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, b := ts.post(t, "/v1/chat/completions", map[string]any{"model": "stories260K", "messages": []map[string]string{{"role": "user", "content": "hi"}}, "response_format": c.rf})
			e := wantError(t, resp, b, 400, c.param, "")
			if c.name == "an unsupported keyword" && !strings.Contains(e.Error.Message, "multipleOf") {
				t.Fatalf("message %q does not name the keyword", e.Error.Message)
			}
		})
	}
}

// TestToolChoiceNeedsAFormat: chatml writes no tool calls, so tools
// leave the output as content, and forcing a call is a 400 on tool_choice.
func TestToolChoiceNeedsAFormat(t *testing.T) {
	ts := startServer(t, Config{})
	tools := []map[string]any{{"type": "function", "function": map[string]any{"name": "f", "parameters": map[string]any{"type": "object"}}}}
	msgs := []map[string]string{{"role": "user", "content": "hi"}}
	var out structOut
	ts.postOK(t, "/v1/chat/completions", map[string]any{"model": "stories260K", "messages": msgs, "tools": tools, "max_tokens": 8}, &out)
	if ch := out.Choices[0]; ch.Message.Content == nil || len(ch.Message.ToolCalls) != 0 || ch.FinishReason == "tool_calls" {
		t.Fatalf("tools under chatml: %+v", ch)
	}
	resp, b := ts.post(t, "/v1/chat/completions", map[string]any{"model": "stories260K", "messages": msgs, "tools": tools, "tool_choice": "required"})
	wantError(t, resp, b, 400, "tool_choice", "")
}

// TestToolCalls: with a template that writes Hermes calls, tool_choice
// required makes stories260K call a tool whose arguments follow its
// schema; the message carries tool_calls and finish_reason tool_calls,
// and the stream's deltas add up to the same calls with no part of a tag
// in content.
func TestToolCalls(t *testing.T) {
	qwen, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "templates", "Qwen-Qwen2.5-7B-Instruct.jinja"))
	if err != nil {
		proof.Missing(t, "tool calls through the server are not checked", "../shared/templates: "+err.Error())
	}
	ts := startServer(t, Config{TemplateSource: string(qwen)})
	params := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":12},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","days"],"additionalProperties":false}`)
	tools := []map[string]any{
		{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": params}},
		{"type": "function", "function": map[string]any{"name": "get_time", "parameters": map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false}}},
	}
	for seed := 0; seed < 3; seed++ {
		for _, choice := range []any{"required", map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}} {
			req := map[string]any{"model": "stories260K", "messages": []map[string]string{{"role": "user", "content": "Weather in Paris?"}},
				"tools": tools, "tool_choice": choice, "parallel_tool_calls": false, "temperature": 1, "seed": seed, "max_tokens": 300}
			var out structOut
			ts.postOK(t, "/v1/chat/completions", req, &out)
			ch := out.Choices[0]
			if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) == 0 {
				t.Fatalf("seed %d %v: finish %q, calls %+v, content %q", seed, choice, ch.FinishReason, ch.Message.ToolCalls, deref(ch.Message.Content))
			}
			for _, c := range ch.Message.ToolCalls {
				if c.ID == "" || c.Type != "function" {
					t.Fatalf("call %+v lacks an id or type", c)
				}
				if _, named := choice.(map[string]any); named && c.Function.Name != "get_weather" {
					t.Fatalf("named get_weather, called %q", c.Function.Name)
				}
				if c.Function.Name == "get_weather" {
					if err := schemacheck.Validate(params, []byte(c.Function.Arguments)); err != nil {
						t.Fatalf("arguments %q: %v", c.Function.Arguments, err)
					}
				}
			}
			// The same request streamed: deltas add up to the calls.
			req["stream"] = true
			s := ts.openStream(t, "/v1/chat/completions", req)
			type acc struct{ id, name, args string }
			var calls []acc
			var content, finish string
			for {
				data, err := s.next()
				if err != nil {
					t.Fatal(err)
				}
				if data == "[DONE]" {
					break
				}
				var ck struct {
					Choices []struct {
						Delta struct {
							Content   *string `json:"content"`
							ToolCalls []struct {
								Index    *int   `json:"index"`
								ID       string `json:"id"`
								Function struct {
									Name      string `json:"name"`
									Arguments string `json:"arguments"`
								} `json:"function"`
							} `json:"tool_calls"`
						} `json:"delta"`
						FinishReason *string `json:"finish_reason"`
					} `json:"choices"`
				}
				if err := json.Unmarshal([]byte(data), &ck); err != nil {
					t.Fatal(err)
				}
				for _, c := range ck.Choices {
					content += deref(c.Delta.Content)
					if c.FinishReason != nil {
						finish = *c.FinishReason
					}
					for _, d := range c.Delta.ToolCalls {
						if d.Index == nil || *d.Index > len(calls) {
							t.Fatalf("a tool_calls delta without its index in order: %s", data)
						}
						if *d.Index == len(calls) {
							if d.ID == "" || d.Function.Name == "" {
								t.Fatalf("a call's first delta lacks its id or name: %s", data)
							}
							calls = append(calls, acc{id: d.ID, name: d.Function.Name})
						}
						calls[*d.Index].args += d.Function.Arguments
					}
				}
			}
			s.close()
			if strings.Contains(content, "<tool") || strings.Contains(content, "</") {
				t.Fatalf("streamed content %q holds part of a tag", content)
			}
			if finish != "tool_calls" || len(calls) != len(ch.Message.ToolCalls) {
				t.Fatalf("stream: finish %q, %d calls; whole: %d calls", finish, len(calls), len(ch.Message.ToolCalls))
			}
			for i, c := range calls {
				w := ch.Message.ToolCalls[i].Function
				if c.name != w.Name || c.args != w.Arguments {
					t.Fatalf("streamed call %d %s(%s), whole %s(%s)", i, c.name, c.args, w.Name, w.Arguments)
				}
			}
			delete(req, "stream")
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
