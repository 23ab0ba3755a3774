package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/akunu-dev/akunu/runtime"
)

// samplingParams are the knobs chat and text completions share.
type samplingParams struct {
	Model               string             `json:"model"`
	Stream              bool               `json:"stream"`
	StreamOptions       *streamOptions     `json:"stream_options"`
	MaxTokens           *int               `json:"max_tokens"`
	MaxCompletionTokens *int               `json:"max_completion_tokens"`
	Temperature         *float64           `json:"temperature"`
	TopP                *float64           `json:"top_p"`
	TopK                *int               `json:"top_k"`
	MinP                *float64           `json:"min_p"`
	FrequencyPenalty    *float64           `json:"frequency_penalty"`
	PresencePenalty     *float64           `json:"presence_penalty"`
	RepeatPenalty       *float64           `json:"repeat_penalty"`
	RepeatLastN         *int               `json:"repeat_last_n"`
	LogitBias           map[string]float64 `json:"logit_bias"`
	Seed                *int64             `json:"seed"`
	Stop                json.RawMessage    `json:"stop"`
	N                   *int               `json:"n"`
	User                string             `json:"user"`
	IgnoreEOS           bool               `json:"ignore_eos"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatRequest is POST /v1/chat/completions.
type chatRequest struct {
	samplingParams
	Messages           []chatMessage   `json:"messages"`
	Logprobs           *bool           `json:"logprobs"`
	TopLogprobs        *int            `json:"top_logprobs"`
	Tools              json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	ResponseFormat     json.RawMessage `json:"response_format"`
	ChatTemplateKwargs map[string]any  `json:"chat_template_kwargs"`
}

type chatMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Name             string          `json:"name"`
	ToolCalls        json.RawMessage `json:"tool_calls"`
	ToolCallID       string          `json:"tool_call_id"`
	ReasoningContent string          `json:"reasoning_content"`
}

// completionRequest is POST /v1/completions.
type completionRequest struct {
	samplingParams
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int            `json:"logprobs"`
	Echo     bool            `json:"echo"`
	Suffix   *string         `json:"suffix"`
	BestOf   *int            `json:"best_of"`
}

// Defaults where a request leaves a knob out: llama.cpp's server's.
const (
	defaultTemperature = 0.8
	defaultTopK        = 40
	defaultTopP        = 0.95
	defaultMinP        = 0.05
	maxTopLogprobs     = 20
	maxStops           = 16
	maxStopLen         = 512
)

// decodeBody reads a JSON request body into v: 413 past the limit, 400
// for bytes that are not UTF-8 JSON of v's shape (naming the field).
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) *apiError {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &apiError{Status: http.StatusRequestEntityTooLarge, Type: typeInvalid,
				Message: fmt.Sprintf("the request body exceeds %d bytes", limit)}
		}
		return badRequest("", "reading the request body: %v", err)
	}
	if !utf8.Valid(body) {
		return badRequest("", "the request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return badRequest("", "the request body holds more than one JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("", "the request body holds more than one JSON value")
	}
	return nil
}

// jsonError turns a decoding error into a 400 that names the field.
func jsonError(err error) *apiError {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		// Fields of an embedded struct carry its type's name.
		field := strings.TrimPrefix(te.Field, "samplingParams.")
		if field == "" {
			return badRequest("", "the request body must be a JSON object, not %s", te.Value)
		}
		return badRequest(field, "%s: expected %s, got %s", field, jsonType(te.Type.String()), te.Value)
	case errors.As(err, &se):
		return badRequest("", "malformed JSON at byte %d: %v", se.Offset, se)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "the request body is empty or cut short")
	}
	return badRequest("", "malformed JSON: %v", err)
}

// jsonType names a Go type as a JSON one.
func jsonType(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "map["), strings.Contains(t, "."):
		return "an object"
	case t == "string":
		return "a string"
	case t == "bool":
		return "a boolean"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	}
	return t
}

// stops parses stop: null, a string or an array of strings.
func parseStops(raw json.RawMessage) ([]string, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, badRequest("stop", "stop: expected a string or an array of strings")
	}
	if len(many) > maxStops {
		return nil, badRequest("stop", "stop: at most %d strings, got %d", maxStops, len(many))
	}
	out := many[:0]
	for _, s := range many {
		if len(s) > maxStopLen {
			return nil, badRequest("stop", "stop: a string of %d bytes (at most %d)", len(s), maxStopLen)
		}
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// options turns the shared knobs into GenerateOptions for a model of vocab
// tokens whose request context is ctx, after a prompt of promptLen tokens
// (from the request's field promptField).
func (p *samplingParams) options(vocab, ctx, promptLen int, promptField string) (runtime.GenerateOptions, *apiError) {
	var o runtime.GenerateOptions
	if p.N != nil && *p.N != 1 {
		return o, badRequest("n", "n: only 1 choice per request is supported, got %d", *p.N)
	}
	maxTok, param := p.MaxTokens, "max_tokens"
	if p.MaxCompletionTokens != nil {
		maxTok, param = p.MaxCompletionTokens, "max_completion_tokens"
	}
	if promptLen >= ctx {
		return o, &apiError{Status: http.StatusBadRequest, Type: typeInvalid, Param: promptField, Code: "context_length_exceeded",
			Message: fmt.Sprintf("this model's context is %d tokens, and the prompt is %d tokens: it leaves no room to generate", ctx, promptLen)}
	}
	if maxTok != nil {
		switch {
		case *maxTok < 1:
			return o, badRequest(param, "%s: must be at least 1, got %d", param, *maxTok)
		case promptLen+*maxTok > ctx:
			return o, &apiError{Status: http.StatusBadRequest, Type: typeInvalid, Param: param, Code: "context_length_exceeded",
				Message: fmt.Sprintf("this model's context is %d tokens; the prompt is %d tokens and %s %d: %d in all", ctx, promptLen, param, *maxTok, promptLen+*maxTok)}
		}
		o.MaxTokens = *maxTok
	} else {
		o.MaxTokens = ctx - promptLen
	}
	s := runtime.Sampling{Temperature: defaultTemperature, TopK: defaultTopK, TopP: defaultTopP, MinP: defaultMinP}
	if v := p.Temperature; v != nil {
		if !(*v >= 0 && *v <= 2) {
			return o, badRequest("temperature", "temperature: must be between 0 and 2, got %v", *v)
		}
		s.Temperature = float32(*v)
	}
	if v := p.TopP; v != nil {
		if !(*v >= 0 && *v <= 1) {
			return o, badRequest("top_p", "top_p: must be between 0 and 1, got %v", *v)
		}
		s.TopP = float32(*v)
	}
	if v := p.TopK; v != nil {
		if *v < 0 {
			return o, badRequest("top_k", "top_k: must be 0 (all) or more, got %d", *v)
		}
		s.TopK = *v
	}
	if v := p.MinP; v != nil {
		if !(*v >= 0 && *v <= 1) {
			return o, badRequest("min_p", "min_p: must be between 0 and 1, got %v", *v)
		}
		s.MinP = float32(*v)
	}
	if p.Seed != nil {
		s.Seed = uint32(*p.Seed)
	} else {
		s.Unseeded = true
	}
	o.Sampling = s
	pen := &runtime.Penalties{Repeat: 1}
	for _, k := range []struct {
		name   string
		v      *float64
		lo, hi float64
		dst    *float32
	}{{"frequency_penalty", p.FrequencyPenalty, -2, 2, &pen.Frequency}, {"presence_penalty", p.PresencePenalty, -2, 2, &pen.Presence},
		{"repeat_penalty", p.RepeatPenalty, 0, 10, &pen.Repeat}} {
		if k.v == nil {
			continue
		}
		if !(*k.v >= k.lo && *k.v <= k.hi) {
			return o, badRequest(k.name, "%s: must be between %g and %g, got %v", k.name, k.lo, k.hi, *k.v)
		}
		*k.dst = float32(*k.v)
	}
	if p.RepeatLastN != nil {
		if *p.RepeatLastN < 0 || *p.RepeatLastN > ctx {
			return o, badRequest("repeat_last_n", "repeat_last_n: must be between 0 and %d, got %d", ctx, *p.RepeatLastN)
		}
		pen.LastN = *p.RepeatLastN
	}
	if pen.Frequency != 0 || pen.Presence != 0 || (pen.Repeat != 1 && pen.Repeat != 0) {
		if pen.Repeat == 0 {
			pen.Repeat = 1
		}
		o.Processors = append(o.Processors, pen)
	}
	if len(p.LogitBias) > 0 {
		bias := runtime.LogitBias{}
		for k, v := range p.LogitBias {
			id, err := strconv.ParseInt(k, 10, 32)
			if err != nil || id < 0 || int(id) >= vocab {
				return o, badRequest("logit_bias", "logit_bias: key %q is not a token id of this model (0 to %d)", k, vocab-1)
			}
			if !(v >= -100 && v <= 100) {
				return o, badRequest("logit_bias", "logit_bias: the bias of token %d must be between -100 and 100, got %v", id, v)
			}
			b := float32(v)
			if v <= -100 {
				b = float32(math.Inf(-1))
			}
			bias[int32(id)] = b
		}
		o.Processors = append(o.Processors, bias)
	}
	stops, aerr := parseStops(p.Stop)
	if aerr != nil {
		return o, aerr
	}
	o.Stop = stops
	o.IgnoreEOS = p.IgnoreEOS
	return o, nil
}
