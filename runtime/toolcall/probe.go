package toolcall

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"time"

	"github.com/akunu-dev/akunu/runtime/chat"
)

// The probe: one tool, and an assistant turn that calls it, in OpenAI's
// shape (which every template reads). The id is 9 alphanumerics, so that
// Mistral's template, which refuses any other, renders it.
const (
	probeName  = "akunu_probe"
	probeArgs  = `{"city": "Paris", "days": 3, "units": ["metric"]}`
	probeTools = `[{"type": "function", "function": {"name": "akunu_probe", "description": "Probe a chat template's tool-call format.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "units": {"type": "array", "items": {"type": "string"}}}, "required": ["city"]}}}]`
	probeCalls = `[{"id": "pr0beCa11", "type": "function", "function": {"name": "akunu_probe", "arguments": ` + probeArgs + `}}]`
)

// probeNow fixes strftime_now, so that a probe renders the same text twice.
var probeNow = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// FormatOf is the tool-call format template t declares: it renders a
// conversation whose last turn is an assistant's call of a probe tool, and
// returns the one format whose parser reads exactly that call back from
// what the template wrote for the turn. A template that writes no call (it
// ignores tool_calls) has None. The result depends only on the template,
// so a caller computes it once per loaded model.
//
// The error says why the probe could not be rendered (the template raised,
// or rendered the turn so that no text of it could be found); the format is
// then None.
func FormatOf(t *chat.Template) (Format, error) {
	if t == nil {
		return None, nil
	}
	turn, err := renderTurn(t, probeTools, probeCalls)
	if err != nil {
		// Some templates refuse tools they cannot place; the call may
		// still render without them.
		var err2 error
		if turn, err2 = renderTurn(t, "", probeCalls); err2 != nil {
			return None, fmt.Errorf("tool format probe: %w", err)
		}
	}
	var found []Format
	for _, f := range Formats {
		if recovers(f, turn) {
			found = append(found, f)
		}
	}
	switch len(found) {
	case 0:
		return None, nil
	case 1:
		return found[0], nil
	}
	return None, fmt.Errorf("tool format probe: the call the template renders reads as %v alike; name one with --tool-format", found)
}

// renderTurn renders a conversation without and with an assistant turn
// making calls (OpenAI's tool_calls JSON), offering tools (JSON, "" for
// none), and returns what the turn added: the text after the longest
// common prefix (the prompt up to the generation prompt).
func renderTurn(t *chat.Template, tools, calls string) (string, error) {
	user := chat.Message{Role: "user", Content: "What is the weather in Paris?"}
	asst := chat.Message{Role: "assistant", Fields: map[string]any{"tool_calls": json.RawMessage(calls)}}
	extra := map[string]any{}
	if tools != "" {
		extra["tools"] = json.RawMessage(tools)
	}
	prompt, err := t.Render(chat.Context{Messages: []chat.Message{user}, AddGenerationPrompt: true, Now: probeNow, Extra: extra})
	if err != nil {
		return "", err
	}
	full, err := t.Render(chat.Context{Messages: []chat.Message{user, asst}, Now: probeNow, Extra: extra})
	if err != nil {
		return "", err
	}
	n := 0
	for n < len(prompt) && n < len(full) && prompt[n] == full[n] {
		n++
	}
	if n == len(full) {
		return "", fmt.Errorf("the assistant's turn renders no text")
	}
	return full[n:], nil
}

// recovers reports whether parsing turn in format f gives exactly the
// probe's call: one call, its name, arguments equal as JSON.
func recovers(f Format, turn string) bool {
	_, calls, err := ParseWith(f, turn, Options{Rand: rand.New(rand.NewPCG(0, 0))})
	if err != nil || len(calls) != 1 || calls[0].Name != probeName {
		return false
	}
	var got, want any
	if json.Unmarshal([]byte(calls[0].Arguments), &got) != nil || json.Unmarshal([]byte(probeArgs), &want) != nil {
		return false
	}
	return reflect.DeepEqual(got, want)
}

// FormatFor is the format a model uses: override when not empty (a
// --tool-format flag: hermes, llama3, mistral or none), else its
// template's.
func FormatFor(t *chat.Template, override string) (Format, error) {
	if s := strings.TrimSpace(override); s != "" {
		return ParseFormat(s)
	}
	return FormatOf(t)
}
