package server

import (
	"encoding/json"
	"net/http"
	"time"
)

// sse writes server-sent events: one "data: JSON" event per chunk, flushed
// at once, each write bounded by the write timeout (a client that stops
// reading is dropped, not waited for).
type sse struct {
	s     *Server
	w     http.ResponseWriter
	rc    *http.ResponseController
	begun bool
	buf   []byte
}

func newSSE(s *Server, w http.ResponseWriter) *sse {
	return &sse{s: s, w: w, rc: http.NewResponseController(w)}
}

func (e *sse) begin() {
	if e.begun {
		return
	}
	e.begun = true
	h := e.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	e.w.WriteHeader(http.StatusOK)
}

// send writes one event of v's JSON.
func (e *sse) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return e.raw(b)
}

func (e *sse) raw(b []byte) error {
	e.begin()
	e.buf = append(append(append(e.buf[:0], "data: "...), b...), "\n\n"...)
	_ = e.rc.SetWriteDeadline(time.Now().Add(e.s.cfg.WriteTimeout))
	if _, err := e.w.Write(e.buf); err != nil {
		return err
	}
	return e.rc.Flush()
}

// sendError ends a stream that failed after it began with the error, in
// OpenAI's shape.
func (e *sse) sendError(a *apiError) {
	v := map[string]any{"error": map[string]any{"message": a.Message, "type": a.Type, "param": nilIfEmpty(a.Param), "code": nilIfEmpty(a.Code)}}
	_ = e.send(v)
}

// done ends the stream.
func (e *sse) done() { _ = e.raw([]byte("[DONE]")) }

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// readJSON decodes a request body (see decodeBody).
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, v any) *apiError {
	return decodeBody(w, r, s.cfg.MaxBody, v)
}

// clearReadDeadline lifts the read deadline once the body is read, so that
// a long generation is not cut by it (the connection is still watched for
// the client going away).
func (s *Server) clearReadDeadline(w http.ResponseWriter) error {
	err := http.NewResponseController(w).SetReadDeadline(time.Time{})
	if err == http.ErrNotSupported {
		return nil
	}
	return err
}

// setWriteDeadline bounds the writing of a whole response.
func (s *Server) setWriteDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
}
