package server

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
)

// embeddingRequest is POST /v1/embeddings (OpenAI's).
type embeddingRequest struct {
	Model string `json:"model"`
	// Input is a string, an array of strings, an array of token ids or an
	// array of arrays of token ids.
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"`
}

type (
	embeddingObject struct {
		Object string `json:"object"`
		Index  int    `json:"index"`
		// Embedding is the vector as numbers, or with encoding_format
		// base64 its float32 values' little-endian bytes in base64.
		Embedding any `json:"embedding"`
	}
	embeddingUsage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	}
	embeddingResponse struct {
		Object string            `json:"object"`
		Data   []embeddingObject `json:"data"`
		Model  string            `json:"model"`
		Usage  embeddingUsage    `json:"usage"`
	}
)

// maxEmbedInputs bounds the inputs of one request, as OpenAI does.
const maxEmbedInputs = 2048

// embedInputs reads a request's input as token ids, one list per input: a
// string is tokenized with the model's special tokens (a BERT's [CLS] and
// [SEP]) and its text never read as special tokens; token ids are taken as
// they are. An input that is empty, or an id outside the vocabulary, is a
// 400 naming it.
func (e *entry) embedInputs(raw json.RawMessage) ([][]int32, *apiError) {
	const want = "expected a string, an array of strings, an array of token ids or an array of arrays of token ids"
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("input", "input: required")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		ids, aerr := e.embedText(text, "input")
		if aerr != nil {
			return nil, aerr
		}
		return [][]int32{ids}, nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, badRequest("input", "input: %s", want)
	}
	switch {
	case len(items) == 0:
		return nil, badRequest("input", "input: an empty array: give at least one text or token")
	case len(items) > maxEmbedInputs:
		return nil, badRequest("input", "input: %d inputs, at most %d in one request", len(items), maxEmbedInputs)
	}
	var ids []int64
	if json.Unmarshal(raw, &ids) == nil {
		one, aerr := e.vocabIDs(ids, "input")
		if aerr != nil {
			return nil, aerr
		}
		return [][]int32{one}, nil
	}
	out := make([][]int32, len(items))
	for i, it := range items {
		field := fmt.Sprintf("input[%d]", i)
		var aerr *apiError
		switch {
		case json.Unmarshal(it, &text) == nil:
			out[i], aerr = e.embedText(text, field)
		case json.Unmarshal(it, &ids) == nil:
			if len(ids) == 0 {
				return nil, badRequest("input", "%s: an empty array of token ids", field)
			}
			out[i], aerr = e.vocabIDs(ids, field)
		default:
			return nil, badRequest("input", "%s: %s", field, "expected a string or an array of token ids")
		}
		if aerr != nil {
			aerr.Param = "input"
			return nil, aerr
		}
	}
	return out, nil
}

// embedText tokenizes one text input.
func (e *entry) embedText(text, field string) ([]int32, *apiError) {
	if text == "" {
		return nil, badRequest("input", "%s: an empty string", field)
	}
	ids := e.tok.Tokenize(text, true, false)
	if len(ids) == 0 {
		return nil, badRequest("input", "%s: the text has no tokens", field)
	}
	return ids, nil
}

// embedFormat checks an embedding request's options and its inputs'
// lengths against the model: whether the vectors go as base64.
func (req *embeddingRequest) embedFormat(e *entry, inputs [][]int32) (bool, *apiError) {
	b64 := false
	switch req.EncodingFormat {
	case "", "float":
	case "base64":
		b64 = true
	default:
		return false, badRequest("encoding_format", "encoding_format: %q is not float or base64", req.EncodingFormat)
	}
	if d := req.Dimensions; d != nil && *d != e.embedDim {
		return false, badRequest("dimensions", "dimensions: this model's embeddings have %d dimensions and cannot be shortened, got %d (leave dimensions out, or give %d)", e.embedDim, *d, e.embedDim)
	}
	for i, in := range inputs {
		if len(in) > e.maxEmbed {
			field := "input"
			if len(inputs) > 1 {
				field = fmt.Sprintf("input[%d]", i)
			}
			return false, &apiError{Status: http.StatusBadRequest, Type: typeInvalid, Param: "input", Code: "context_length_exceeded",
				Message: fmt.Sprintf("this model's maximum context length is %d tokens for one input, and %s is %d tokens: shorten it", e.maxEmbed, field, len(in))}
		}
	}
	return b64, nil
}

// embeddable refuses a model that has no embedding program.
func (e *entry) embeddable() *apiError {
	if e.embeds {
		return nil
	}
	return badRequest("model", "the model %q does not embed: its plan has no embedding program (serve an embedding model's plan, or a decoder compiled with akunuc compile --pooling mean|cls|last)", e.id)
}

// generative refuses a model that only embeds.
func (e *entry) generative() *apiError {
	if e.generates {
		return nil
	}
	return badRequest("model", "the model %q is an embedding model: it embeds text (POST /v1/embeddings), it does not generate", e.id)
}

// embeddings is POST /v1/embeddings.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request, info *reqInfo) *apiError {
	var req embeddingRequest
	if aerr := s.readJSON(w, r, &req); aerr != nil {
		return aerr
	}
	e, aerr := s.entryFor(req.Model, info)
	if aerr != nil {
		return aerr
	}
	if aerr := e.embeddable(); aerr != nil {
		return aerr
	}
	inputs, aerr := e.embedInputs(req.Input)
	if aerr != nil {
		return aerr
	}
	b64, aerr := req.embedFormat(e, inputs)
	if aerr != nil {
		return aerr
	}
	tokens := 0
	for _, in := range inputs {
		tokens += len(in)
	}
	eng, err := s.reg.acquire(r.Context(), e)
	if err != nil {
		return errorFor(err)
	}
	if err := s.clearReadDeadline(w); err != nil {
		return errorFor(err)
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	j := &job{ctx: ctx, embed: &embedWork{inputs: inputs}, ev: newEvents()}
	if _, aerr := s.submit(ctx, e, eng, j); aerr != nil {
		return aerr
	}
	// An embedding job has one event: its end.
	evs, ok := j.ev.next(ctx, nil)
	if !ok {
		info.finish = "cancelled"
		return errorFor(ctx.Err())
	}
	if err := evs[len(evs)-1].Err; err != nil {
		return errorFor(err)
	}
	work := j.embed
	info.inputs, info.prompt, info.promptTime = len(inputs), tokens, work.took
	s.met.embedding(e.id, len(inputs), tokens, work.took)
	resp := embeddingResponse{Object: "list", Data: make([]embeddingObject, len(work.vecs)), Model: e.id,
		Usage: embeddingUsage{PromptTokens: tokens, TotalTokens: tokens}}
	for i, v := range work.vecs {
		resp.Data[i] = embeddingObject{Object: "embedding", Index: i, Embedding: v}
		if b64 {
			resp.Data[i].Embedding = float32Base64(v)
		}
	}
	s.setWriteDeadline(w)
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// float32Base64 is v's little-endian float32 bytes in base64: what
// encoding_format base64 sends (the openai clients ask for it by default
// and decode it themselves).
func float32Base64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// submit queues j on e's engine; when the engine was unloaded between
// acquire and submit (idle, evicted), it loads the model again, unless
// the server stops. It returns the engine that took j.
func (s *Server) submit(ctx context.Context, e *entry, eng *engine, j *job) (*engine, *apiError) {
	for try := 0; ; try++ {
		err := eng.submit(j)
		if err == nil {
			return eng, nil
		}
		if !errors.Is(err, errClosed) || try == 2 {
			return nil, errorFor(err)
		}
		if eng, err = s.reg.acquire(ctx, e); err != nil {
			return nil, errorFor(err)
		}
	}
}
