package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/akunu-dev/akunu/runtime"
)

type (
	completionLogprobs struct {
		Tokens        []string             `json:"tokens"`
		TokenLogprobs []float32            `json:"token_logprobs"`
		TopLogprobs   []map[string]float32 `json:"top_logprobs"`
		TextOffset    []int                `json:"text_offset"`
	}
	completionChoice struct {
		Index        int                 `json:"index"`
		Text         string              `json:"text"`
		Logprobs     *completionLogprobs `json:"logprobs"`
		FinishReason *string             `json:"finish_reason"`
	}
	completionResponse struct {
		ID      string             `json:"id"`
		Object  string             `json:"object"`
		Created int64              `json:"created"`
		Model   string             `json:"model"`
		Choices []completionChoice `json:"choices"`
		Usage   *usage             `json:"usage,omitempty"`
		Timings *timings           `json:"timings,omitempty"`
	}
)

// promptIDs is a completion's prompt: a string, or token ids, or an array
// of one of either.
func (e *entry) promptIDs(raw json.RawMessage) ([]int32, string, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, "", badRequest("prompt", "prompt: required")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return e.tok.Tokenize(s, true, true), s, nil
	}
	var ids []int64
	if json.Unmarshal(raw, &ids) == nil {
		return e.checkIDs(ids, "prompt")
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		if len(ss) != 1 {
			return nil, "", badRequest("prompt", "prompt: one prompt per request is supported, got %d", len(ss))
		}
		return e.tok.Tokenize(ss[0], true, true), ss[0], nil
	}
	var idss [][]int64
	if json.Unmarshal(raw, &idss) == nil {
		if len(idss) != 1 {
			return nil, "", badRequest("prompt", "prompt: one prompt per request is supported, got %d", len(idss))
		}
		return e.checkIDs(idss[0], "prompt")
	}
	return nil, "", badRequest("prompt", "prompt: expected a string, an array of token ids, or an array of one of either")
}

// checkIDs refuses token ids outside the vocabulary; it returns them and
// their text.
func (e *entry) checkIDs(ids []int64, field string) ([]int32, string, *apiError) {
	out, aerr := e.vocabIDs(ids, field)
	if aerr != nil {
		return nil, "", aerr
	}
	return out, e.tok.Detokenize(out, false), nil
}

// vocabIDs refuses token ids outside the vocabulary.
func (e *entry) vocabIDs(ids []int64, field string) ([]int32, *apiError) {
	n := int64(e.plan.Model.HParams.Vocab)
	out := make([]int32, len(ids))
	for i, id := range ids {
		if id < 0 || id >= n {
			return nil, badRequest(field, "%s[%d]: token %d is outside the vocabulary of %d", field, i, id, n)
		}
		out[i] = int32(id)
	}
	return out, nil
}

// completionLogprobs are the text completion's logprobs of some tokens,
// at offset in the text.
func (e *entry) completionLogprobs(lps []runtime.StepLogProbs, into *completionLogprobs, offset int) int {
	for _, lp := range lps {
		p := e.tok.TokenToPiece(lp.ID, true)
		into.Tokens = append(into.Tokens, p)
		into.TokenLogprobs = append(into.TokenLogprobs, lp.LogProb)
		top := map[string]float32{}
		for _, t := range lp.Top {
			top[e.tok.TokenToPiece(t.ID, true)] = t.LogProb
		}
		into.TopLogprobs = append(into.TopLogprobs, top)
		into.TextOffset = append(into.TextOffset, offset)
		offset += len(p)
	}
	return offset
}

// completions is POST /v1/completions.
func (s *Server) completions(w http.ResponseWriter, r *http.Request, info *reqInfo) *apiError {
	var req completionRequest
	if aerr := s.readJSON(w, r, &req); aerr != nil {
		return aerr
	}
	e, aerr := s.entryFor(req.Model, info)
	if aerr != nil {
		return aerr
	}
	if aerr := e.generative(); aerr != nil {
		return aerr
	}
	switch {
	case req.Suffix != nil && *req.Suffix != "":
		return badRequest("suffix", "suffix: not supported")
	case req.BestOf != nil && *req.BestOf != 1:
		return badRequest("best_of", "best_of: only 1 is supported, got %d", *req.BestOf)
	}
	ids, text, aerr := e.promptIDs(req.Prompt)
	if aerr != nil {
		return aerr
	}
	if len(ids) == 0 {
		return badRequest("prompt", "prompt: empty")
	}
	opts, aerr := req.options(int(e.plan.Model.HParams.Vocab), e.ctx, len(ids), "prompt")
	if aerr != nil {
		return aerr
	}
	if req.Logprobs != nil {
		if *req.Logprobs < 0 || *req.Logprobs > maxTopLogprobs {
			return badRequest("logprobs", "logprobs: must be between 0 and %d, got %d", maxTopLogprobs, *req.Logprobs)
		}
		opts.LogProbs, opts.TopLogProbs = true, *req.Logprobs
	}
	eng, err := s.reg.acquire(r.Context(), e)
	if err != nil {
		return errorFor(err)
	}
	if err := s.clearReadDeadline(w); err != nil {
		return errorFor(err)
	}
	g := &generation{e: e, eng: eng, ids: ids, opts: opts}
	resp := completionResponse{ID: newID("cmpl-"), Object: "text_completion", Created: time.Now().Unix(), Model: e.id}
	echo := ""
	if req.Echo {
		echo = text
	}
	if req.Stream {
		return s.streamCompletion(w, r, info, g, resp, echo, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
	}
	var out strings.Builder
	out.WriteString(echo)
	var lps *completionLogprobs
	if opts.LogProbs {
		lps = &completionLogprobs{Tokens: []string{}, TokenLogprobs: []float32{}, TopLogprobs: []map[string]float32{}, TextOffset: []int{}}
	}
	offset := len(echo)
	g.onDelta = func(d delta) error {
		out.WriteString(d.Content)
		if lps != nil {
			offset = e.completionLogprobs(d.LogProbs, lps, offset)
		}
		return nil
	}
	o, aerr := s.run(r, info, g)
	if aerr != nil {
		return aerr
	}
	fr := finishReason(o.Res.Stop)
	resp.Choices = []completionChoice{{Text: out.String(), Logprobs: lps, FinishReason: &fr}}
	resp.Usage, resp.Timings = usageOf(o, len(ids)), timingsOf(o, len(ids))
	s.setWriteDeadline(w)
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// streamCompletion streams a text completion as server-sent events.
func (s *Server) streamCompletion(w http.ResponseWriter, r *http.Request, info *reqInfo, g *generation, base completionResponse, echo string, includeUsage bool) *apiError {
	sse := newSSE(s, w)
	offset := len(echo)
	chunk := func(text string, lps *completionLogprobs, finish *string) completionResponse {
		c := base
		c.Choices = []completionChoice{{Text: text, Logprobs: lps, FinishReason: finish}}
		return c
	}
	g.started = func() error {
		if echo == "" {
			sse.begin()
			return http.NewResponseController(w).Flush()
		}
		return sse.send(chunk(echo, nil, nil))
	}
	g.onDelta = func(d delta) error {
		var lps *completionLogprobs
		if g.opts.LogProbs {
			lps = &completionLogprobs{}
			offset = g.e.completionLogprobs(d.LogProbs, lps, offset)
		} else if d.Content == "" {
			return nil
		}
		return sse.send(chunk(d.Content, lps, nil))
	}
	o, aerr := s.run(r, info, g)
	if aerr != nil {
		if sse.begun {
			sse.sendError(aerr)
		}
		return aerr
	}
	fr := finishReason(o.Res.Stop)
	last := chunk("", nil, &fr)
	last.Timings = timingsOf(o, len(g.ids))
	if err := sse.send(last); err != nil {
		return nil
	}
	if includeUsage {
		u := base
		u.Choices = []completionChoice{}
		u.Usage = usageOf(o, len(g.ids))
		if err := sse.send(u); err != nil {
			return nil
		}
	}
	sse.done()
	return nil
}
