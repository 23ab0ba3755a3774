package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/akunu-dev/akunu/runtime"
)

// Server is akunu's OpenAI-compatible server over a set of plans.
type Server struct {
	cfg     Config
	reg     *registry
	met     *metrics
	limiter *limiter
	keys    [][32]byte // SHA-256 of each API key
	mux     *http.ServeMux
	hs      *http.Server

	logMu sync.Mutex
	reqs  atomic.Uint64 // request numbers, for the log
	stop  chan struct{}
	wg    sync.WaitGroup
}

// New reads every plan's header (a plan that cannot be served is an
// error now, not at its first request) and prepares the routes. Models
// load in the background once Serve starts (Load loads them now).
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, met: newMetrics(), stop: make(chan struct{})}
	if s.reg, err = newRegistry(cfg, s.met, s.logf); err != nil {
		return nil, err
	}
	for _, k := range cfg.APIKeys {
		s.keys = append(s.keys, sha256.Sum256([]byte(k)))
	}
	if cfg.RateLimit > 0 {
		s.limiter = newLimiter(cfg.RateLimit)
	}
	s.routes()
	s.hs = &http.Server{Handler: s, ReadHeaderTimeout: cfg.HeaderTimeout, ReadTimeout: cfg.ReadTimeout,
		IdleTimeout: cfg.IdleTimeout, MaxHeaderBytes: 64 << 10, ErrorLog: nil}
	s.wg.Go(s.housekeeping)
	return s, nil
}

// Models are the ids the server serves.
func (s *Server) Models() []string {
	var ids []string
	for _, e := range s.reg.entries {
		ids = append(ids, e.id)
	}
	return ids
}

// Load loads every model now (the first failure is returned).
func (s *Server) Load(ctx context.Context) error {
	for _, e := range s.reg.entries {
		if _, err := s.reg.acquire(ctx, e); err != nil {
			return fmt.Errorf("%s: %w", e.id, err)
		}
	}
	return nil
}

// Serve answers requests on l until Shutdown (http.ErrServerClosed then)
// and loads every model in the background meanwhile (/health says
// "loading" until they are).
func (s *Server) Serve(l net.Listener) error {
	s.wg.Go(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-s.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		defer cancel()
		if err := s.Load(ctx); err != nil && ctx.Err() == nil {
			s.logf("%v", err)
		}
	})
	return s.hs.Serve(l)
}

// Shutdown stops taking connections, lets the requests in flight finish
// (streams run to their end) until ctx ends, which cancels them; then it
// unloads every model.
func (s *Server) Shutdown(ctx context.Context) error {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	done := make(chan error, 1)
	go func() { done <- s.hs.Shutdown(ctx) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		// Cancel the generations: their handlers end, and Shutdown
		// with them.
		s.reg.close(ctx)
		err = <-done
	}
	s.reg.close(ctx)
	s.hs.Close()
	s.wg.Wait()
	return err
}

// housekeeping unloads idle models and forgets idle clients' rate limits.
func (s *Server) housekeeping() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		if s.cfg.IdleUnload > 0 {
			s.reg.sweep(s.cfg.IdleUnload)
		}
		if s.limiter != nil {
			s.limiter.prune()
		}
	}
}

// logf writes one line to the log.
func (s *Server) logf(format string, args ...any) {
	if s.cfg.Log == nil {
		return
	}
	line := time.Now().Format("2006-01-02 15:04:05.000") + " " + fmt.Sprintf(format, args...) + "\n"
	s.logMu.Lock()
	io.WriteString(s.cfg.Log, line)
	s.logMu.Unlock()
}

// route is one route: its handler and whether it needs no key.
type route struct {
	pattern string
	h       func(w http.ResponseWriter, r *http.Request, info *reqInfo) *apiError
	open    bool
}

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	for _, rt := range []route{
		{"POST /v1/chat/completions", s.chatCompletions, false},
		{"POST /v1/completions", s.completions, false},
		{"POST /v1/embeddings", s.embeddings, false},
		{"GET /v1/models", s.listModels, false},
		{"GET /v1/models/{id...}", s.getModel, false},
		{"POST /v1/models/load", s.loadModel, false},
		{"POST /v1/models/unload", s.unloadModel, false},
		{"POST /v1/tokenize", s.tokenize, false},
		{"POST /v1/chat/template", s.applyTemplate, false},
		{"POST /v1/detokenize", s.detokenize, false},
		{"GET /health", s.health, true},
		{"GET /v1/metrics", s.metricsJSON, false},
		{"GET /metrics", s.metricsText, false},
	} {
		s.mux.Handle(rt.pattern, s.wrap(rt))
	}
	// Aliases llama.cpp's server answers.
	s.mux.Handle("POST /chat/completions", s.wrap(route{"POST /v1/chat/completions", s.chatCompletions, false}))
	s.mux.Handle("POST /completions", s.wrap(route{"POST /v1/completions", s.completions, false}))
	s.mux.Handle("POST /embeddings", s.wrap(route{"POST /v1/embeddings", s.embeddings, false}))
	s.mux.Handle("POST /tokenize", s.wrap(route{"POST /v1/tokenize", s.tokenize, false}))
	s.mux.Handle("POST /detokenize", s.wrap(route{"POST /v1/detokenize", s.detokenize, false}))
	s.mux.Handle("POST /apply-template", s.wrap(route{"POST /v1/chat/template", s.applyTemplate, false}))
	s.mux.Handle("GET /v1/health", s.wrap(route{"GET /health", s.health, true}))
}

// ServeHTTP answers one request; a route the server lacks is a 404 (or
// 405) in OpenAI's shape.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r) // it sets the path's values; Handler does not
		return
	}
	s.serve(w, r, &reqInfo{route: "unknown"}, func(w http.ResponseWriter, r *http.Request, info *reqInfo) *apiError {
		// The mux says 404 or 405; keep its status, in our shape.
		rec := &statusOnly{header: http.Header{}}
		h.ServeHTTP(rec, r)
		if rec.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", rec.header.Get("Allow"))
			return &apiError{Status: rec.status, Type: typeInvalid, Message: fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path)}
		}
		return &apiError{Status: http.StatusNotFound, Type: typeNotFound, Message: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)}
	}, true)
}

// statusOnly records the status a handler writes, and nothing else.
type statusOnly struct {
	header http.Header
	status int
}

func (s *statusOnly) Header() http.Header         { return s.header }
func (s *statusOnly) Write(b []byte) (int, error) { return len(b), nil }
func (s *statusOnly) WriteHeader(code int)        { s.status = code }

// reqInfo is what a request's log line and metrics say; handlers fill it.
type reqInfo struct {
	n          uint64
	route      string
	model      string
	prompt     int
	cached     int
	completion int
	promptTime time.Duration
	decodeTime time.Duration
	finish     string
	// inputs, for an embedding request: its inputs (prompt is their
	// tokens, promptTime the model's time on them).
	inputs int
}

// wrap adds what every route has: the log lines, the key and the rate
// limit, errors in OpenAI's shape, the metrics.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(strings.TrimPrefix(rt.pattern, "GET "), "POST ")
		s.serve(w, r, &reqInfo{route: name}, rt.h, rt.open)
	})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, info *reqInfo, h func(http.ResponseWriter, *http.Request, *reqInfo) *apiError, open bool) {
	start := time.Now()
	info.n = s.reqs.Add(1)
	s.logf("#%d <- %s %s from %s", info.n, r.Method, r.URL.Path, r.RemoteAddr)
	sw := &statusWriter{ResponseWriter: w}
	aerr := s.admitRequest(r, open)
	if aerr == nil {
		aerr = h(sw, r, info)
	}
	if aerr != nil {
		if sw.status == 0 {
			writeError(sw, aerr)
		} else if sw.status < 400 {
			// A stream that failed after it began: the error went
			// into the stream; log the status it would have had.
			sw.status = aerr.Status
		}
	}
	status := sw.status
	if status == 0 {
		status = http.StatusOK
	}
	s.met.request(info.route, status)
	line := fmt.Sprintf("#%d -> %d %s %s", info.n, status, r.Method, r.URL.Path)
	if info.model != "" {
		line += " model=" + info.model
	}
	if info.inputs > 0 {
		line += fmt.Sprintf(" inputs=%d tokens=%d", info.inputs, info.prompt)
		if info.promptTime > 0 {
			line += fmt.Sprintf(" embed=%.1ftok/s", float64(info.prompt)/info.promptTime.Seconds())
		}
	} else if info.prompt > 0 || info.completion > 0 {
		line += fmt.Sprintf(" prompt=%d cached=%d completion=%d", info.prompt, info.cached, info.completion)
		if fed := info.prompt - info.cached; fed > 0 && info.promptTime > 0 {
			line += fmt.Sprintf(" prefill=%.1ftok/s", float64(fed)/info.promptTime.Seconds())
		}
		if info.completion > 1 && info.decodeTime > 0 {
			line += fmt.Sprintf(" decode=%.1ftok/s", float64(info.completion-1)/info.decodeTime.Seconds())
		}
	}
	line += fmt.Sprintf(" time=%s", time.Since(start).Round(time.Millisecond))
	if info.finish != "" {
		line += " finish=" + info.finish
	}
	if aerr != nil {
		line += fmt.Sprintf(" error=%q", aerr.Message)
	}
	s.logf("%s", line)
}

// admitRequest checks the key and the rate limit.
func (s *Server) admitRequest(r *http.Request, open bool) *apiError {
	if open {
		return nil
	}
	who := clientAddr(r)
	if len(s.keys) > 0 {
		key, ok := bearer(r)
		if !ok {
			return &apiError{Status: http.StatusUnauthorized, Type: typeAuth, Code: "invalid_api_key",
				Message: "missing API key: send it as Authorization: Bearer KEY"}
		}
		sum := sha256.Sum256([]byte(key))
		match := 0
		for _, k := range s.keys {
			match |= subtle.ConstantTimeCompare(sum[:], k[:])
		}
		if match != 1 {
			return &apiError{Status: http.StatusUnauthorized, Type: typeAuth, Code: "invalid_api_key", Message: "incorrect API key"}
		}
		who = "key:" + fmt.Sprintf("%x", sum[:8])
	}
	if s.limiter != nil {
		if wait := s.limiter.take(who, time.Now()); wait > 0 {
			return &apiError{Status: http.StatusTooManyRequests, Type: typeRateLimit, Code: "rate_limit_exceeded", RetryAfter: wait,
				Message: fmt.Sprintf("rate limit of %d requests a minute reached: retry in %s", s.cfg.RateLimit, wait.Round(time.Second))}
		}
	}
	return nil
}

// bearer is the request's API key: Authorization: Bearer KEY (or the
// x-api-key header).
func bearer(r *http.Request) (string, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, key, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(key), true
		}
		return "", false
	}
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k, true
	}
	return "", false
}

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// statusWriter records the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes,
// deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// limiter is a token bucket per client: rate requests a minute, as a burst
// of up to rate.
type limiter struct {
	mu      sync.Mutex
	rate    float64 // per second
	burst   float64
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newLimiter(perMinute int) *limiter {
	return &limiter{rate: float64(perMinute) / 60, burst: float64(perMinute), buckets: map[string]*bucket{}}
}

// take spends one request of who's; a positive result is how long until
// one is available (the request is refused).
func (l *limiter) take(who string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[who]
	if b == nil {
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[who] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// prune forgets clients whose buckets are full again.
func (l *limiter) prune() {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}

// errorFor maps an engine or registry error to its response.
func errorFor(err error) *apiError {
	switch {
	case errors.Is(err, errQueueFull):
		return unavailable(time.Second, "the model's queue is full (%v): retry later", err)
	case errors.Is(err, errClosed):
		return unavailable(time.Second, "the server is shutting down or the model was unloaded: retry")
	case errors.Is(err, errNoMemory):
		return unavailable(5*time.Second, "%v", err)
	case errors.Is(err, runtime.ErrNotGenerative):
		// Handlers refuse such a request before it reaches the model.
		return badRequest("model", "%v", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{Status: 499, Type: typeInvalid, Message: "the client closed the request"}
	}
	return serverError(err)
}
