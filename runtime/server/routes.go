package server

import (
	"context"
	"net/http"
	"time"
)

// modelObject is one model of /v1/models; meta says what akunu knows.
type modelObject struct {
	ID      string    `json:"id"`
	Object  string    `json:"object"`
	Created int64     `json:"created"`
	OwnedBy string    `json:"owned_by"`
	Meta    modelMeta `json:"meta"`
}

type modelMeta struct {
	Loaded       bool   `json:"loaded"`
	Plan         string `json:"plan"`
	Arch         string `json:"arch"`
	Ctx          int    `json:"n_ctx"`
	Vocab        int    `json:"n_vocab"`
	Slots        int    `json:"slots"`
	MemoryBytes  int64  `json:"memory_bytes"`
	ChatTemplate bool   `json:"chat_template"`
	// Generates: chat and text completions; Embeddings: POST
	// /v1/embeddings, vectors of EmbeddingDim, inputs of at most
	// MaxEmbedTokens tokens.
	Generates      bool `json:"generates"`
	Embeddings     bool `json:"embeddings"`
	EmbeddingDim   int  `json:"embedding_dim,omitempty"`
	MaxEmbedTokens int  `json:"max_embedding_tokens,omitempty"`
}

func (s *Server) modelObject(e *entry, g gauge) modelObject {
	return modelObject{ID: e.id, Object: "model", Created: e.created.Unix(), OwnedBy: s.cfg.Name,
		Meta: modelMeta{Loaded: g.Loaded, Plan: e.path, Arch: e.plan.Model.HParams.Arch, Ctx: e.ctx, Vocab: int(e.plan.Model.HParams.Vocab),
			Slots: e.parallel, MemoryBytes: e.memory, ChatTemplate: e.tmpl != nil,
			Generates: e.generates, Embeddings: e.embeds, EmbeddingDim: e.embedDim, MaxEmbedTokens: e.maxEmbed}}
}

// listModels is GET /v1/models.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request, info *reqInfo) *apiError {
	g := s.reg.gauges()
	out := struct {
		Object string        `json:"object"`
		Data   []modelObject `json:"data"`
	}{Object: "list", Data: []modelObject{}}
	for _, e := range s.reg.entries {
		out.Data = append(out.Data, s.modelObject(e, g[e.id]))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getModel is GET /v1/models/{id}.
func (s *Server) getModel(w http.ResponseWriter, r *http.Request, info *reqInfo) *apiError {
	e := s.reg.find(r.PathValue("id"))
	if e == nil {
		_, aerr := s.entryFor(r.PathValue("id"), info)
		return aerr
	}
	info.model = e.id
	writeJSON(w, http.StatusOK, s.modelObject(e, s.reg.gauges()[e.id]))
	return nil
}

type modelRequest struct {
	Model string `json:"model"`
}

// loadModel is POST /v1/models/load: load a model now.
func (s *Server) loadModel(w http.ResponseWriter, r *http.Request, info *reqInfo) *apiError {
	var req modelRequest
	if aerr := s.readJSON(w, r, &req); aerr != nil {
		return aerr
	}
	e, aerr := s.entryFor(req.Model, info)
	if aerr != nil {
		return aerr
	}
	if _, err := s.reg.acquire(r.Context(), e); err != nil {
		return errorFor(err)
	}
	writeJSON(w, http.StatusOK, s.modelObject(e, s.reg.gauges()[e.id]))
	return nil
}

// unloadModel is POST /v1/models/unload: unload a model once its requests
// finish (the next request loads it again).
func (s *Server) unloadModel(w http.ResponseWriter, r *http.Request, info *reqInfo) *apiError {
	var req modelRequest
	if aerr := s.readJSON(w, r, &req); aerr != nil {
		return aerr
	}
	e, aerr := s.entryFor(req.Model, info)
	if aerr != nil {
		return aerr
	}
	// The client going away does not stop an unload.
	s.reg.unload(context.WithoutCancel(r.Context()), e)
	writeJSON(w, http.StatusOK, s.modelObject(e, s.reg.gauges()[e.id]))
	return nil
}

type tokenizeRequest struct {
	Model        string `json:"model"`
	Content      string `json:"content"`
	AddSpecial   bool   `json:"add_special"`
	ParseSpecial *bool  `json:"parse_special"`
	WithPieces   bool   `json:"with_pieces"`
}

type tokenPiece struct {
	ID    int32  `json:"id"`
	Piece string `json:"piece"`
}

// tokenize is POST /v1/tokenize.
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request, info *reqInfo) *apiError {
	var req tokenizeRequest
	if aerr := s.readJSON(w, r, &req); aerr != nil {
		return aerr
	}
	e, aerr := s.entryFor(req.Model, info)
	if aerr != nil {
		return aerr
	}
	parse := req.ParseSpecial == nil || *req.ParseSpecial
	ids := e.tok.Tokenize(req.Content, req.AddSpecial, parse)
	if req.WithPieces {
		out := make([]tokenPiece, len(ids))
		for i, id := range ids {
			out[i] = tokenPiece{ID: id, Piece: e.tok.TokenToPiece(id, true)}
		}
		writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
		return nil
	}
	if ids == nil {
		ids = []int32{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": ids})
	return nil
}

type detokenizeRequest struct {
	Model  string  `json:"model"`
	Tokens []int64 `json:"tokens"`
}

// detokenize is POST /v1/detokenize.
func (s *Server) detokenize(w http.ResponseWriter, r *http.Request, info *reqInfo) *apiError {
	var req detokenizeRequest
	if aerr := s.readJSON(w, r, &req); aerr != nil {
		return aerr
	}
	e, aerr := s.entryFor(req.Model, info)
	if aerr != nil {
		return aerr
	}
	_, text, aerr := e.checkIDs(req.Tokens, "tokens")
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, map[string]any{"content": text})
	return nil
}

// health is GET /health: 503 "loading" while a model loads at start, then
// "ok" with the slots busy and idle.
func (s *Server) health(w http.ResponseWriter, r *http.Request, info *reqInfo) *apiError {
	g := s.reg.gauges()
	busy, idle, queued, loaded := 0, 0, 0, 0
	for _, m := range g {
		if m.Loaded {
			loaded++
			busy += m.SlotsBusy
			idle += m.Slots - m.SlotsBusy
			queued += m.Queued
		}
	}
	body := map[string]any{"status": "ok", "slots_processing": busy, "slots_idle": idle, "queued": queued,
		"models_loaded": loaded, "models": len(g), "uptime_seconds": time.Since(s.met.start).Seconds()}
	status := http.StatusOK
	if s.reg.loadingAny() {
		body["status"], status = "loading", http.StatusServiceUnavailable
	}
	writeJSON(w, status, body)
	return nil
}

// metricsJSON is GET /v1/metrics.
func (s *Server) metricsJSON(w http.ResponseWriter, r *http.Request, info *reqInfo) *apiError {
	writeJSON(w, http.StatusOK, s.met.snapshot(s.reg.gauges()))
	return nil
}

// metricsText is GET /metrics, in Prometheus' text format.
func (s *Server) metricsText(w http.ResponseWriter, r *http.Request, info *reqInfo) *apiError {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	s.met.prometheus(w, s.reg.gauges())
	return nil
}
