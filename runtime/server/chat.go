package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/runtime/chat"
	"github.com/akunu-dev/akunu/runtime/conversation"
	"github.com/akunu-dev/akunu/runtime/toolcall"
)

// Response shapes (OpenAI's).
type (
	usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	}
	// timings are llama.cpp's server's extension: how fast it went.
	timings struct {
		PromptN            int     `json:"prompt_n"`
		PromptMS           float64 `json:"prompt_ms"`
		PromptPerSecond    float64 `json:"prompt_per_second"`
		PredictedN         int     `json:"predicted_n"`
		PredictedMS        float64 `json:"predicted_ms"`
		PredictedPerSecond float64 `json:"predicted_per_second"`
	}
	chatMsgOut struct {
		Role             string        `json:"role,omitempty"`
		Content          *string       `json:"content,omitempty"`
		ReasoningContent *string       `json:"reasoning_content,omitempty"`
		ToolCalls        []toolCallOut `json:"tool_calls,omitempty"`
	}
	tokenLogprob struct {
		Token   string  `json:"token"`
		Logprob float32 `json:"logprob"`
		Bytes   []int   `json:"bytes"`
	}
	chatLogprob struct {
		tokenLogprob
		TopLogprobs []tokenLogprob `json:"top_logprobs"`
	}
	chatLogprobs struct {
		Content []chatLogprob `json:"content"`
	}
	chatChoice struct {
		Index        int           `json:"index"`
		Message      *chatMsgOut   `json:"message,omitempty"`
		Delta        *chatMsgOut   `json:"delta,omitempty"`
		Logprobs     *chatLogprobs `json:"logprobs"`
		FinishReason *string       `json:"finish_reason"`
	}
	chatResponse struct {
		ID      string       `json:"id"`
		Object  string       `json:"object"`
		Created int64        `json:"created"`
		Model   string       `json:"model"`
		Choices []chatChoice `json:"choices"`
		Usage   *usage       `json:"usage,omitempty"`
		Timings *timings     `json:"timings,omitempty"`
	}
)

// newID is a response id: prefix and 24 random hex digits.
func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func usageOf(o *outcome, prompt int) *usage {
	u := &usage{PromptTokens: prompt, CompletionTokens: len(o.Res.Tokens), TotalTokens: prompt + len(o.Res.Tokens)}
	u.PromptTokensDetails.CachedTokens = o.Cached
	return u
}

func timingsOf(o *outcome, prompt int) *timings {
	r := o.Res
	t := &timings{PromptN: prompt - o.Cached, PromptMS: ms(r.PromptTime), PredictedN: len(r.Tokens), PredictedMS: ms(r.DecodeTime)}
	if r.PromptTime > 0 {
		t.PromptPerSecond = float64(t.PromptN) / r.PromptTime.Seconds()
	}
	if r.DecodeTime > 0 && len(r.Tokens) > 1 {
		t.PredictedPerSecond = float64(len(r.Tokens)-1) / r.DecodeTime.Seconds()
	}
	return t
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// pieceOf is a token's text, as logprobs show it.
func (e *entry) logprob(id int32, lp float32) tokenLogprob {
	p := e.tok.TokenToPiece(id, true)
	b := make([]int, len(p))
	for i := range len(p) {
		b[i] = int(p[i])
	}
	return tokenLogprob{Token: p, Logprob: lp, Bytes: b}
}

func (e *entry) chatLogprobs(lps []runtime.StepLogProbs) []chatLogprob {
	out := make([]chatLogprob, len(lps))
	for i, lp := range lps {
		out[i] = chatLogprob{tokenLogprob: e.logprob(lp.ID, lp.LogProb), TopLogprobs: []tokenLogprob{}}
		for _, t := range lp.Top {
			out[i].TopLogprobs = append(out[i].TopLogprobs, e.logprob(t.ID, t.LogProb))
		}
	}
	return out
}

// messages converts a request's messages for the template.
func (req *chatRequest) messages() ([]chat.Message, *apiError) {
	if len(req.Messages) == 0 {
		return nil, badRequest("messages", "messages: at least one message is required")
	}
	out := make([]chat.Message, 0, len(req.Messages))
	for i, m := range req.Messages {
		field := fmt.Sprintf("messages[%d]", i)
		role := m.Role
		switch role {
		case "system", "user", "assistant", "tool":
		case "developer":
			role = "system"
		case "":
			return nil, badRequest(field+".role", "%s.role: required", field)
		default:
			return nil, badRequest(field+".role", "%s.role: %q is not one of system, developer, user, assistant, tool", field, m.Role)
		}
		content, aerr := contentText(m.Content, field+".content")
		if aerr != nil {
			return nil, aerr
		}
		msg := chat.Message{Role: role, Content: content, Fields: map[string]any{}}
		if m.Name != "" {
			msg.Fields["name"] = m.Name
		}
		if m.ToolCallID != "" {
			msg.Fields["tool_call_id"] = m.ToolCallID
		}
		if m.ReasoningContent != "" {
			msg.Fields["reasoning_content"] = m.ReasoningContent
		}
		if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" {
			var calls []map[string]any
			if err := json.Unmarshal(m.ToolCalls, &calls); err != nil {
				return nil, badRequest(field+".tool_calls", "%s.tool_calls: expected an array of objects", field)
			}
			msg.Fields["tool_calls"] = m.ToolCalls
		}
		if len(msg.Fields) == 0 {
			msg.Fields = nil
		}
		out = append(out, msg)
	}
	return out, nil
}

// contentText is a message's content as text: a string, null, or text
// parts (joined with newlines).
func contentText(raw json.RawMessage, field string) (string, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest(field, "%s: expected a string or an array of content parts", field)
	}
	var b strings.Builder
	for i, p := range parts {
		if p.Type != "text" {
			return "", badRequest(fmt.Sprintf("%s[%d].type", field, i), "%s[%d]: content of type %q is not supported (text only)", field, i, p.Type)
		}
		if p.Text == nil {
			return "", badRequest(fmt.Sprintf("%s[%d].text", field, i), "%s[%d].text: required", field, i)
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(*p.Text)
	}
	return b.String(), nil
}

// templateExtra are the template variables of a request: its tools (unless
// tool_choice is "none") and chat_template_kwargs.
func (req *chatRequest) templateExtra() (map[string]any, *apiError) {
	extra := map[string]any{}
	for k, v := range req.ChatTemplateKwargs {
		switch k {
		case "messages", "add_generation_prompt", "bos_token", "eos_token", "tools":
			return nil, badRequest("chat_template_kwargs", "chat_template_kwargs: %q is set by the server", k)
		}
		extra[k] = v
	}
	choice := "auto"
	if len(req.ToolChoice) > 0 && string(req.ToolChoice) != "null" {
		var s string
		var named struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		switch {
		case json.Unmarshal(req.ToolChoice, &s) == nil:
			if s != "none" && s != "auto" && s != "required" {
				return nil, badRequest("tool_choice", "tool_choice: %q is not none, auto, required or a function", s)
			}
			choice = s
		case json.Unmarshal(req.ToolChoice, &named) == nil && named.Type == "function" && named.Function.Name != "":
			choice = "function"
		default:
			return nil, badRequest("tool_choice", `tool_choice: expected "none", "auto", "required" or {"type":"function","function":{"name":...}}`)
		}
	}
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		var tools []struct {
			Type     string `json:"type"`
			Function *struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(req.Tools, &tools); err != nil {
			return nil, badRequest("tools", "tools: expected an array of tool objects")
		}
		for i, t := range tools {
			if t.Type != "function" || t.Function == nil || t.Function.Name == "" {
				return nil, badRequest(fmt.Sprintf("tools[%d]", i), `tools[%d]: expected {"type":"function","function":{"name":...}}`, i)
			}
		}
		if choice != "none" && len(tools) > 0 {
			extra["tools"] = req.Tools
		}
	} else if choice == "required" || choice == "function" {
		return nil, badRequest("tool_choice", "tool_choice: %s needs tools", choice)
	}
	if len(req.ResponseFormat) > 0 && string(req.ResponseFormat) != "null" {
		var rf struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(req.ResponseFormat, &rf); err != nil {
			return nil, badRequest("response_format", "response_format: expected an object")
		}
		if rf.Type != "text" && rf.Type != "json_object" && rf.Type != "json_schema" {
			return nil, badRequest("response_format.type", "response_format.type: %q is not text, json_object or json_schema", rf.Type)
		}
	}
	return extra, nil
}

// entryFor resolves a request's model: 404 when no model has that id.
func (s *Server) entryFor(id string, info *reqInfo) (*entry, *apiError) {
	e := s.reg.find(id)
	if e == nil {
		return nil, &apiError{Status: http.StatusNotFound, Type: typeInvalid, Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("the model %q does not exist (have %s)", id, strings.Join(s.Models(), ", "))}
	}
	info.model = e.id
	return e, nil
}

// prompt tokenizes a rendered conversation (with a BOS when the model
// wants one and the template did not write it).
func (e *entry) promptOf(text string) []int32 {
	tk := &e.plan.Model.Tokenizer
	ids := e.tok.Tokenize(text, false, true)
	if tk.AddBOS && tk.BOS >= 0 && (len(ids) == 0 || ids[0] != tk.BOS) {
		ids = append([]int32{tk.BOS}, ids...)
	}
	return ids
}

// special is a special token's text ("" when the model has none).
func (e *entry) special(id int32) string {
	if id < 0 || int(id) >= e.tok.NumTokens() {
		return ""
	}
	return e.tok.TokenToPiece(id, true)
}

// render renders a chat request's conversation through its model's
// template, the assistant's turn opened.
func (s *Server) render(req *chatRequest, info *reqInfo) (*entry, string, *apiError) {
	e, aerr := s.entryFor(req.Model, info)
	if aerr != nil {
		return nil, "", aerr
	}
	if aerr := e.generative(); aerr != nil {
		return nil, "", aerr
	}
	if e.tmpl == nil {
		return nil, "", badRequest("model", "the model %q has no chat template (%v): start the server with --template or --chat-template-file, or use /v1/completions", e.id, e.tmplErr)
	}
	msgs, aerr := req.messages()
	if aerr != nil {
		return nil, "", aerr
	}
	extra, aerr := req.templateExtra()
	if aerr != nil {
		return nil, "", aerr
	}
	tk := &e.plan.Model.Tokenizer
	text, err := e.tmpl.Render(chat.Context{Messages: msgs, AddGenerationPrompt: true, BOS: e.special(tk.BOS), EOS: e.special(tk.EOS), Extra: extra})
	if err != nil {
		if errors.Is(err, chat.ErrRaised) {
			return nil, "", badRequest("messages", "the model's chat template refused the messages: %v", err)
		}
		return nil, "", badRequest("messages", "rendering the chat template: %v", err)
	}
	return e, text, nil
}

// applyTemplate is POST /v1/chat/template (llama.cpp's /apply-template):
// the prompt a chat request renders to, and its tokens.
func (s *Server) applyTemplate(w http.ResponseWriter, r *http.Request, info *reqInfo) *apiError {
	var req chatRequest
	if aerr := s.readJSON(w, r, &req); aerr != nil {
		return aerr
	}
	e, text, aerr := s.render(&req, info)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, map[string]any{"prompt": text, "tokens": e.promptOf(text)})
	return nil
}

// chatCompletions is POST /v1/chat/completions.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request, info *reqInfo) *apiError {
	var req chatRequest
	if aerr := s.readJSON(w, r, &req); aerr != nil {
		return aerr
	}
	e, text, aerr := s.render(&req, info)
	if aerr != nil {
		return aerr
	}
	ids := e.promptOf(text)
	opts, aerr := req.options(int(e.plan.Model.HParams.Vocab), e.ctx, len(ids), "messages")
	if aerr != nil {
		return aerr
	}
	if req.Logprobs != nil && *req.Logprobs {
		opts.LogProbs = true
		if req.TopLogprobs != nil {
			if *req.TopLogprobs < 0 || *req.TopLogprobs > maxTopLogprobs {
				return badRequest("top_logprobs", "top_logprobs: must be between 0 and %d, got %d", maxTopLogprobs, *req.TopLogprobs)
			}
			opts.TopLogProbs = *req.TopLogprobs
		}
	} else if req.TopLogprobs != nil && *req.TopLogprobs > 0 {
		return badRequest("top_logprobs", "top_logprobs: needs logprobs: true")
	}
	st, aerr := req.structuredOf(e)
	if aerr != nil {
		return aerr
	}
	eng, err := s.reg.acquire(r.Context(), e)
	if err != nil {
		return errorFor(err)
	}
	if st.gbnf != "" {
		c, err := eng.grammars.constraint(eng.m, st.gbnf)
		if err != nil {
			return badRequest("response_format", "the output's grammar: %v", err)
		}
		opts.Processors = append(opts.Processors, c)
	}
	if err := s.clearReadDeadline(w); err != nil {
		return errorFor(err)
	}
	g := &generation{e: e, eng: eng, ids: ids, opts: opts, split: conversation.NewSplitter(e.tmpl.Source(), text)}
	resp := chatResponse{ID: newID("chatcmpl-"), Object: "chat.completion", Created: time.Now().Unix(), Model: e.id}
	if req.Stream {
		return s.streamChat(w, r, info, g, resp, req.StreamOptions != nil && req.StreamOptions.IncludeUsage, st.calls)
	}
	var content, reasoning strings.Builder
	var lps []chatLogprob
	g.onDelta = func(d delta) error {
		content.WriteString(d.Content)
		reasoning.WriteString(d.Reasoning)
		if opts.LogProbs {
			lps = append(lps, e.chatLogprobs(d.LogProbs)...)
		}
		return nil
	}
	out, aerr := s.run(r, info, g)
	if aerr != nil {
		return aerr
	}
	c := content.String()
	msg := &chatMsgOut{Role: "assistant", Content: &c}
	if reasoning.Len() > 0 {
		rs := reasoning.String()
		msg.ReasoningContent = &rs
	}
	fr := finishReason(out.Res.Stop)
	if st.calls != toolcall.None {
		// A call that breaks is returned as far as it got, and the text
		// from the break on is content (ADR 0016).
		text, calls, _ := toolcall.Parse(st.calls, c)
		if len(calls) > 0 {
			msg.ToolCalls = callsOut(calls)
			msg.Content = nil
			if text != "" {
				msg.Content = &text
			}
			if fr == "stop" {
				fr = "tool_calls"
			}
		}
	}
	ch := chatChoice{Message: msg, FinishReason: &fr}
	if opts.LogProbs {
		ch.Logprobs = &chatLogprobs{Content: lps}
		if lps == nil {
			ch.Logprobs.Content = []chatLogprob{}
		}
	}
	resp.Choices = []chatChoice{ch}
	resp.Usage, resp.Timings = usageOf(out, len(ids)), timingsOf(out, len(ids))
	s.setWriteDeadline(w)
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// streamChat streams a chat completion as server-sent events.
func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, info *reqInfo, g *generation, base chatResponse, includeUsage bool, calls toolcall.Format) *apiError {
	base.Object = "chat.completion.chunk"
	sse := newSSE(s, w)
	chunk := func(d *chatMsgOut, lps []chatLogprob, finish *string) chatResponse {
		c := base
		ch := chatChoice{Delta: d, FinishReason: finish}
		if g.opts.LogProbs && lps != nil {
			ch.Logprobs = &chatLogprobs{Content: lps}
		}
		c.Choices = []chatChoice{ch}
		return c
	}
	g.started = func() error {
		empty := ""
		return sse.send(chunk(&chatMsgOut{Role: "assistant", Content: &empty}, nil, nil))
	}
	// With tools, content passes through the model's call format first:
	// what may still become a call is held back, so no part of a tag
	// reaches content, and calls go out as tool_calls deltas.
	var ts *toolcall.Stream
	var tcs []toolCallOut
	if calls != toolcall.None {
		ts = toolcall.NewStream(calls)
	}
	g.onDelta = func(d delta) error {
		tcs = nil
		if ts != nil && d.Content != "" {
			d.Content, tcs = callDeltas(ts.Feed(d.Content))
		}
		if d.Content == "" && d.Reasoning == "" && tcs == nil && !g.opts.LogProbs {
			return nil
		}
		m := &chatMsgOut{ToolCalls: tcs}
		if d.Content != "" || d.Reasoning == "" && tcs == nil {
			m.Content = &d.Content
		}
		if d.Reasoning != "" {
			m.ReasoningContent = &d.Reasoning
		}
		var lps []chatLogprob
		if g.opts.LogProbs {
			lps = g.e.chatLogprobs(d.LogProbs)
		}
		return sse.send(chunk(m, lps, nil))
	}
	out, aerr := s.run(r, info, g)
	if aerr != nil {
		if sse.begun {
			sse.sendError(aerr)
		}
		return aerr
	}
	fr := finishReason(out.Res.Stop)
	if ts != nil {
		content, tcs := callDeltas(ts.Finish())
		if content != "" || tcs != nil {
			m := &chatMsgOut{ToolCalls: tcs}
			if content != "" {
				m.Content = &content
			}
			if err := sse.send(chunk(m, nil, nil)); err != nil {
				return nil
			}
		}
		if ts.Calls() > 0 && fr == "stop" {
			fr = "tool_calls"
		}
	}
	last := chunk(&chatMsgOut{}, nil, &fr)
	last.Timings = timingsOf(out, len(g.ids))
	if err := sse.send(last); err != nil {
		return nil
	}
	if includeUsage {
		u := base
		u.Choices = []chatChoice{}
		u.Usage = usageOf(out, len(g.ids))
		if err := sse.send(u); err != nil {
			return nil
		}
	}
	sse.done()
	return nil
}
