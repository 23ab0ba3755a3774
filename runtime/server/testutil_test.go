package server

// Shared helpers of the server's tests: stories260K compiled once per test
// binary, servers on real 127.0.0.1 listeners, small HTTP helpers and a
// goroutine-leak check.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/plans"
	rt "github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/specs/chips"
)

// testChip is the target the test plans are compiled for: the CPU backend
// runs any amd64 target, and 2 cores is what CI has.
const testChip = "cpu-avx2:2"

// compiled is stories260K's plan, compiled once per test binary into a
// directory that TestMain removes.
var compiled struct {
	once       sync.Once
	dir        string
	plan, gguf string
	err        string
}

// storiesGGUF is the shared test model's path; the test is skipped when
// the model is not there.
func storiesGGUF(t testing.TB) string {
	t.Helper()
	return proof.Shared(t, "models", "stories260K.gguf")
}

// storiesPlan is stories260K's plan (compiled at the first call) and its
// GGUF file.
func storiesPlan(t testing.TB) (plan, gguf string) {
	t.Helper()
	gguf = storiesGGUF(t)
	compiled.once.Do(func() {
		prof, err := chips.Resolve(testChip, 0)
		if err != nil {
			compiled.err = err.Error()
			return
		}
		p, err := compiler.Compile(gguf, compiler.Options{Chip: prof})
		if err != nil {
			compiled.err = fmt.Sprintf("compile %s: %v", gguf, err)
			return
		}
		dir, err := os.MkdirTemp("", "akunu-server-test")
		if err != nil {
			compiled.err = err.Error()
			return
		}
		compiled.dir = dir
		compiled.plan = filepath.Join(dir, "stories260K.plan")
		if err := plans.WriteFile(compiled.plan, p); err != nil {
			compiled.err = err.Error()
		}
		compiled.gguf = gguf
	})
	if compiled.err != "" {
		t.Fatal(compiled.err)
	}
	return compiled.plan, compiled.gguf
}

// planCopies writes copies of stories260K's plan named name.plan into a
// test's directory: several models of one GGUF file (cfg.Models maps each
// to it).
func planCopies(t testing.TB, names ...string) (paths []string, models map[string]string) {
	t.Helper()
	plan, gguf := storiesPlan(t)
	b, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	models = map[string]string{}
	for _, n := range names {
		p := filepath.Join(dir, n+".plan")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		models[p] = gguf
	}
	return paths, models
}

func TestMain(m *testing.M) {
	code := m.Run()
	if compiled.dir != "" {
		os.RemoveAll(compiled.dir)
	}
	if embedCompiled.dir != "" {
		os.RemoveAll(embedCompiled.dir)
	}
	os.Exit(code)
}

// slowBackend is the CPU backend with every wait for a submission (one
// batched step, one prefill chunk) made longer by a delay the test sets:
// stories260K decodes ~10k tokens/s, too fast for a generation to hold a
// slot while a test does something else. Steps, not wall time, order
// what the tests compare.
type slowBackend struct {
	rt.Backend
	delay *atomic.Int64 // nanoseconds
	// after is the waits that are not delayed (then every one is); waits
	// counts them.
	after int64
	waits *atomic.Int64
}

func (b slowBackend) pause() {
	if b.waits.Add(1) <= b.after {
		return
	}
	if d := time.Duration(b.delay.Load()); d > 0 {
		time.Sleep(d)
	}
}

func (b slowBackend) Wait() error       { b.pause(); return b.Backend.Wait() }
func (b slowBackend) WaitOldest() error { b.pause(); return b.Backend.WaitOldest() }

// slow makes cfg's models run on a slowBackend of step delay d (changed
// later through the result).
func slow(cfg *Config, d time.Duration) *atomic.Int64 { return slowAfter(cfg, d, 0) }

// slowAfter is slow from the after+1st wait for a submission on.
func slowAfter(cfg *Config, d time.Duration, after int64) *atomic.Int64 {
	delay := new(atomic.Int64)
	delay.Store(int64(d))
	threads := cfg.Threads
	cfg.Backend = func() (rt.Backend, error) {
		return slowBackend{Backend: rt.NewCPU(threads), delay: delay, after: after, waits: new(atomic.Int64)}, nil
	}
	return delay
}

// testServer is a Server on a real listener, and a client of its own.
type testServer struct {
	srv    *Server
	cfg    Config
	url    string
	addr   string
	client *http.Client
	tr     *http.Transport
	served chan error
	down   bool
	// hs, when set, serves srv in place of srv.Serve (which would load
	// every model at once).
	hs *http.Server
}

// startServer starts a server of cfg (stories260K and the chatml template
// when cfg names no plan) on 127.0.0.1:0, its models loaded; it is shut
// down when the test ends.
func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startServerOn(t, cfg, l)
}

// startServerOn is startServer on listener l.
func startServerOn(t testing.TB, cfg Config, l net.Listener) *testServer {
	t.Helper()
	return start(t, cfg, l, true)
}

// startUnloaded starts a server whose models load only when a request
// needs them (not srv.Serve, which loads them all in the background).
func startUnloaded(t testing.TB, cfg Config) *testServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return start(t, cfg, l, false)
}

func start(t testing.TB, cfg Config, l net.Listener, load bool) *testServer {
	t.Helper()
	if len(cfg.Plans) == 0 {
		plan, gguf := storiesPlan(t)
		cfg.Plans = []string{plan}
		cfg.Models = map[string]string{plan: gguf}
	}
	if cfg.Template == "" && cfg.TemplateSource == "" {
		cfg.Template = "chatml"
	}
	srv, err := New(cfg)
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}
	ts := &testServer{srv: srv, cfg: cfg, url: "http://" + l.Addr().String(), addr: l.Addr().String(),
		client: &http.Client{Transport: tr, Timeout: 2 * time.Minute}, tr: tr, served: make(chan error, 1)}
	t.Cleanup(func() { ts.shutdown(t) })
	if !load {
		ts.hs = &http.Server{Handler: srv}
		go func() { ts.served <- ts.hs.Serve(l) }()
		return ts
	}
	go func() { ts.served <- srv.Serve(l) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Load(ctx); err != nil {
		t.Fatal(err)
	}
	return ts
}

// smallSendBuffers is a listener whose connections have a send buffer of
// n bytes, fixed (no autotuning): a slow network link. On loopback the
// kernel otherwise grows it to megabytes, more than a stories260K stream
// ever writes.
type smallSendBuffers struct {
	net.Listener
	n int
}

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		if err := tc.SetWriteBuffer(l.n); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, err
}

// shutdown stops the server (once) and checks that Serve returned
// http.ErrServerClosed.
func (ts *testServer) shutdown(t testing.TB) {
	t.Helper()
	if ts.down {
		return
	}
	ts.down = true
	ts.tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if ts.hs != nil {
		if err := ts.hs.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	select {
	case err := <-ts.served:
		if err != http.ErrServerClosed {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("Serve did not return after Shutdown")
	}
	ts.tr.CloseIdleConnections()
}

// body is a request body: raw bytes or a string as they are, anything else
// as JSON.
func body(t testing.TB, v any) io.Reader {
	t.Helper()
	switch b := v.(type) {
	case nil:
		return nil
	case []byte:
		return bytes.NewReader(b)
	case string:
		return strings.NewReader(b)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(b)
}

// do sends one request and reads the whole response; hdr is header
// name-value pairs.
func (ts *testServer) do(t testing.TB, method, path string, v any, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, ts.url+path, body(t, v))
	if err != nil {
		t.Fatal(err)
	}
	if v != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the response: %v", method, path, err)
	}
	return resp, b
}

func (ts *testServer) post(t testing.TB, path string, v any, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	return ts.do(t, http.MethodPost, path, v, hdr...)
}

func (ts *testServer) get(t testing.TB, path string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	return ts.do(t, http.MethodGet, path, nil, hdr...)
}

// postOK posts v and decodes the 200 response into out.
func (ts *testServer) postOK(t testing.TB, path string, v, out any) {
	t.Helper()
	resp, b := ts.post(t, path, v)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("POST %s: %v in %s", path, err, b)
	}
}

// errBody is an error response's body, OpenAI's shape; Param and Code are
// null or a string.
type errBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// wantError checks that a response is an error of status in OpenAI's
// shape: exactly the keys message, type, param and code, the message and
// type not empty, param and code as given ("" for null, "*" for any
// string).
func wantError(t testing.TB, resp *http.Response, b []byte, status int, param, code string) errBody {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || len(raw) != 1 || raw["error"] == nil {
		t.Fatalf("the body is not {\"error\":{...}}: %v: %s", err, b)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := raw["error"][k]; !ok {
			t.Errorf("error.%s is missing: %s", k, b)
		}
	}
	if len(raw["error"]) != 4 {
		t.Errorf("error has %d keys, want message, type, param, code: %s", len(raw["error"]), b)
	}
	var e errBody
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if e.Error.Message == "" || e.Error.Type == "" {
		t.Errorf("an empty message or type: %s", b)
	}
	check := func(name string, got *string, want string) {
		switch {
		case want == "" && got != nil:
			t.Errorf("error.%s = %q, want null: %s", name, *got, b)
		case want == "*" && got == nil, want != "" && want != "*" && (got == nil || *got != want):
			t.Errorf("error.%s = %s, want %q: %s", name, show(got), want, b)
		}
	}
	check("param", e.Error.Param, param)
	check("code", e.Error.Code, code)
	return e
}

func show(s *string) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *s)
}

// health is GET /health's body.
type healthBody struct {
	Status          string `json:"status"`
	SlotsProcessing int    `json:"slots_processing"`
	SlotsIdle       int    `json:"slots_idle"`
	Queued          int    `json:"queued"`
	ModelsLoaded    int    `json:"models_loaded"`
}

func (ts *testServer) health(t testing.TB) healthBody {
	t.Helper()
	_, b := ts.get(t, "/health")
	var h healthBody
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("/health: %v: %s", err, b)
	}
	return h
}

// metricsBody is the part of /v1/metrics the tests read.
type metricsBody struct {
	Total struct {
		Requests  uint64 `json:"requests"`
		Cancelled uint64 `json:"cancelled"`
		Loads     uint64 `json:"loads"`
		Unloads   uint64 `json:"unloads"`
		SlotsBusy int    `json:"slots_busy"`
		Queued    int    `json:"queued"`
	} `json:"total"`
	Models []struct {
		ID           string `json:"id"`
		Loaded       bool   `json:"loaded"`
		SlotsBusy    int    `json:"slots_busy"`
		Queued       int    `json:"queued"`
		Requests     uint64 `json:"requests"`
		CachedTokens uint64 `json:"cached_tokens"`
		Cancelled    uint64 `json:"cancelled"`
		Loads        uint64 `json:"loads"`
		Unloads      uint64 `json:"unloads"`
	} `json:"models"`
}

func (ts *testServer) metrics(t testing.TB) metricsBody {
	t.Helper()
	resp, b := ts.get(t, "/v1/metrics", ts.auth()...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/v1/metrics: %d %s", resp.StatusCode, b)
	}
	var m metricsBody
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("/v1/metrics: %v: %s", err, b)
	}
	return m
}

// auth is the header pair that bears the server's first key, if it has
// keys.
func (ts *testServer) auth() []string {
	if len(ts.cfg.APIKeys) == 0 {
		return nil
	}
	return []string{"Authorization", "Bearer " + ts.cfg.APIKeys[0]}
}

// eventually polls cond every 20 ms until it holds or d passes; it reports
// whether it held.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stream is an open server-sent-events response.
type stream struct {
	resp   *http.Response
	r      *bufio.Reader
	cancel context.CancelFunc
}

// openStream posts a streaming request (v should say "stream": true) and
// checks that it answered 200 with an event stream.
func (ts *testServer) openStream(t testing.TB, path string, v any) *stream {
	t.Helper()
	s, err := ts.tryStream(path, v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tryStream is openStream for any goroutine: it returns the failure.
func (ts *testServer) tryStream(path string, v any) (*stream, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.url+path, bytes.NewReader(b))
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for i, h := 0, ts.auth(); i+1 < len(h); i += 2 {
		req.Header.Set(h[i], h[i+1])
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("POST %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("POST %s: Content-Type %q", path, ct)
	}
	return &stream{resp: resp, r: bufio.NewReader(resp.Body), cancel: cancel}, nil
}

// next is the next event's data ("[DONE]" at the end); io.EOF when the
// stream ended.
func (s *stream) next() (string, error) {
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return "", err
		}
		line = strings.TrimRight(line, "\r\n")
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			return data, nil
		}
	}
}

// close drops the connection (the client going away).
func (s *stream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// chunk is the part of a streamed chunk (chat or text) the tests read.
type chunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
}

// usageBody is a response's usage.
type usageBody struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// text is a chunk's text: a chat delta's content or a completion's text.
func (c *chunk) text() string {
	if len(c.Choices) == 0 {
		return ""
	}
	if c.Choices[0].Delta.Content != nil {
		return *c.Choices[0].Delta.Content
	}
	return c.Choices[0].Text
}

// goroutines is the goroutine count before a test starts its server(s);
// noLeak checks, after they shut down, that the count returns to it
// (idle HTTP client connections closed first), printing every stack when
// it does not.
func goroutines() int { return runtime.NumGoroutine() }

func noLeak(t testing.TB, base int) {
	t.Helper()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	var n int
	if eventually(10*time.Second, func() bool { n = runtime.NumGoroutine(); return n <= base }) {
		return
	}
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	t.Errorf("%d goroutines after shutdown, %d before:\n%s", n, base, buf)
}

// chatBody is a chat request of one user message.
func chatBody(content string, extra map[string]any) map[string]any {
	m := map[string]any{"model": "stories260K", "messages": []map[string]any{{"role": "user", "content": content}}}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// completionBody is a text completion request.
func completionBody(prompt string, extra map[string]any) map[string]any {
	m := map[string]any{"model": "stories260K", "prompt": prompt}
	for k, v := range extra {
		m[k] = v
	}
	return m
}
