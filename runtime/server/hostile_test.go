package server

// Clients that misbehave, on purpose or not: the server refuses or drops
// them and keeps serving everyone else, and leaves no goroutine behind
// once it shuts down.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// rawRequest sends raw bytes on a new connection and reads the response's
// status line (the connection is closed after).
func rawRequest(t *testing.T, addr string, req []byte) (status string, rest []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	go c.Write(req) // the server may answer before it reads it all
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	rest, _ = io.ReadAll(r)
	return strings.TrimSpace(line), rest
}

// serveOK checks that a normal request is still served, and promptly: the
// server is not stuck behind a hostile client.
func serveOK(t *testing.T, ts *testServer) {
	t.Helper()
	start := time.Now()
	resp, b := ts.post(t, "/v1/chat/completions", chatBody("Once upon a time", map[string]any{"max_tokens": 8}))
	if resp.StatusCode != 200 {
		t.Fatalf("a normal request: %d %s", resp.StatusCode, b)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a normal request took %s", d)
	}
}

func TestHostileBodies(t *testing.T) {
	base := goroutines()
	ts := startServer(t, Config{MaxBody: 256 << 10})
	post := func(hdr string, body string) []byte {
		return []byte("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + hdr + "\r\n" + body)
	}
	t.Run("a declared body over MaxBody is a 413", func(t *testing.T) {
		resp, b := ts.post(t, "/v1/completions", completionBody(strings.Repeat("x", 300<<10), nil))
		wantError(t, resp, b, 413, "", "")
	})
	t.Run("a declared length of 10 GB is a 413 after MaxBody bytes", func(t *testing.T) {
		status, _ := rawRequest(t, ts.addr, post("Content-Length: 10000000000\r\n", `{"messages":"`+strings.Repeat("x", 300<<10)))
		if !strings.HasPrefix(status, "HTTP/1.1 413") {
			t.Errorf("status %q, want 413", status)
		}
	})
	t.Run("an endless chunked body is a 413", func(t *testing.T) {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		var wg sync.WaitGroup
		defer wg.Wait()
		defer c.Close()
		wg.Go(func() {
			if _, err := c.Write(post("Transfer-Encoding: chunked\r\n", "")); err != nil {
				return
			}
			piece := []byte(fmt.Sprintf("1000\r\n%s\r\n", strings.Repeat("[", 0x1000)))
			for {
				if _, err := c.Write(piece); err != nil {
					return // the server stopped reading and closed
				}
			}
		})
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 413") {
			t.Errorf("status %q (%v), want 413", line, err)
		}
	})
	for _, tc := range []struct {
		name string
		body string
		msg  string
	}{
		{"100k nested arrays are a 400", strings.Repeat("[", 100_000), "depth"},
		{"100k nested arrays in messages are a 400", `{"messages":` + strings.Repeat("[", 100_000), "depth"},
		{"100k nested objects are a 400", strings.Repeat(`{"a":`, 20_000), "depth"},
		{"nesting under the decoder's limit is still no object", strings.Repeat("[", 5000) + strings.Repeat("]", 5000), "JSON object"},
		{"invalid UTF-8 is a 400", "{\"messages\":[{\"role\":\"user\",\"content\":\"a\xff\xfeb\"}]}", "UTF-8"},
		{"a lone surrogate's bytes are a 400", "{\"messages\":[{\"role\":\"user\",\"content\":\"\xed\xa0\x80\"}]}", "UTF-8"},
		{"a NUL byte outside strings is a 400", "{\"messages\":\x00[]}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := ts.post(t, "/v1/chat/completions", tc.body)
			e := wantError(t, resp, b, 400, "", "")
			if !strings.Contains(e.Error.Message, tc.msg) {
				t.Errorf("message %q does not say %q", e.Error.Message, tc.msg)
			}
		})
	}
	t.Run("deep chat_template_kwargs under the decoder's limit are a 400", func(t *testing.T) {
		// The template's context refuses values nested too deep.
		deep := strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000)
		resp, b := ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"chat_template_kwargs":{"x":`+deep+`}}`)
		wantError(t, resp, b, 400, "*", "")
	})
	t.Run("a header over 64 KiB is a 431", func(t *testing.T) {
		status, _ := rawRequest(t, ts.addr, []byte("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("y", 100<<10)+"\r\n\r\n"))
		if !strings.HasPrefix(status, "HTTP/1.1 431") {
			t.Errorf("status %q, want 431", status)
		}
	})
	t.Run("a request line of garbage is a 400", func(t *testing.T) {
		status, _ := rawRequest(t, ts.addr, []byte("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"))
		if !strings.HasPrefix(status, "HTTP/1.1 400") {
			t.Errorf("status %q, want 400", status)
		}
	})
	serveOK(t, ts)
	ts.shutdown(t)
	noLeak(t, base)
}

// trickle writes b one byte every gap until it is written, stop closes or
// a write fails; it reports the bytes written.
func trickle(c net.Conn, b []byte, gap time.Duration, stop <-chan struct{}) int {
	for i := range b {
		if _, err := c.Write(b[i : i+1]); err != nil {
			return i
		}
		select {
		case <-stop:
			return i + 1
		case <-time.After(gap):
		}
	}
	return len(b)
}

// dropped waits for the server to close c (a read ends), at most d.
func dropped(c net.Conn, d time.Duration) (time.Duration, []byte, bool) {
	start := time.Now()
	c.SetReadDeadline(start.Add(d))
	b, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return time.Since(start), b, false
	}
	return time.Since(start), b, true
}

// Slow-loris clients: one sends its header a byte at a time, one its body;
// with HeaderTimeout and ReadTimeout small the server drops both, and
// serves a normal request meanwhile.
func TestSlowClientsAreDropped(t *testing.T) {
	base := goroutines()
	ts := startServer(t, Config{HeaderTimeout: time.Second, ReadTimeout: 2 * time.Second})
	for _, tc := range []struct {
		name  string
		head  string // sent at once
		slow  string // a byte every 300 ms
		limit time.Duration
	}{
		{"a header sent a byte at a time", "", "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n", time.Second},
		{"a body sent a byte at a time", "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60\r\n\r\n",
			`{"model":"stories260K","prompt":"Once upon a time","max_tokens":4}`[:60], 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", ts.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			if _, err := c.Write([]byte(tc.head)); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var sent int
			wg.Go(func() { sent = trickle(c, []byte(tc.slow), 300*time.Millisecond, stop) })
			serveOK(t, ts)
			// Trickled whole, it would take len·300 ms (≥ 18 s).
			took, resp, ok := dropped(c, tc.limit+8*time.Second)
			close(stop)
			wg.Wait()
			if !ok {
				t.Fatalf("the server kept the connection %s (limit %s)", took, tc.limit)
			}
			if d := time.Since(start); d > tc.limit+5*time.Second {
				t.Errorf("dropped after %s, limit %s", d, tc.limit)
			}
			if sent >= len(tc.slow) {
				t.Errorf("the whole request got through (%d bytes)", sent)
			}
			if len(resp) > 0 && !bytes.HasPrefix(resp, []byte("HTTP/1.1 4")) {
				t.Errorf("the server answered %q", resp)
			}
			t.Logf("dropped after %s, %d of %d bytes sent, answered %q", time.Since(start).Round(time.Millisecond), sent, len(tc.slow), firstLine(resp))
		})
	}
	ts.shutdown(t)
	noLeak(t, base)
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\r\n")
	return s
}

// syncBuffer is a log the server writes from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A client that stops reading a stream: once the socket's buffers fill,
// a write waits WriteTimeout, fails, and the server drops the client and
// cancels its generation, long before that would have ended (2000 steps
// of 10 ms). The server's send buffers are 16 KiB, the client's receive
// buffer 4 KiB, and every token's event carries 20 alternatives (~1 KB):
// they fill in a few dozen tokens.
func TestStalledReaderIsDropped(t *testing.T) {
	base := goroutines()
	log := &syncBuffer{}
	cfg := Config{Parallel: 2, WriteTimeout: time.Second, Log: log}
	slow(&cfg, 10*time.Millisecond)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := startServerOn(t, cfg, smallSendBuffers{l, 16 << 10})
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	c, err := d.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := `{"model":"stories260K","messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":2000,"ignore_eos":true,"logprobs":true,"top_logprobs":20}`
	start := time.Now()
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(req), req)
	if !eventually(5*time.Second, func() bool { return ts.health(t).SlotsProcessing == 1 }) {
		t.Fatalf("the stream never started: %+v", ts.health(t))
	}
	serveOK(t, ts)
	if !eventually(8*time.Second, func() bool { return ts.health(t).SlotsProcessing == 0 }) {
		c.SetReadDeadline(time.Now().Add(time.Second))
		n, _ := io.Copy(io.Discard, c)
		t.Fatalf("the stalled stream still holds its slot after %s: %+v (%d bytes were buffered)", time.Since(start), ts.health(t), n)
	}
	t.Logf("the slot freed %s after the request", time.Since(start).Round(time.Millisecond))
	if !eventually(5*time.Second, func() bool { return strings.Contains(log.String(), "-> 499 POST /v1/chat/completions") }) {
		t.Errorf("no 499 in the log:\n%s", log.String())
	}
	if m := ts.metrics(t); m.Total.Cancelled != 1 {
		t.Errorf("cancelled %d, want 1", m.Total.Cancelled)
	}
	// What the client gets, once it reads, ends: the server closed it.
	took, b, ok := dropped(c, 10*time.Second)
	if !ok {
		t.Errorf("the connection is still open after %s", took)
	}
	if bytes.Contains(b, []byte("[DONE]")) {
		t.Errorf("the stream ran to its end")
	}
	t.Logf("the client had %d bytes to read", len(b))
	serveOK(t, ts)
	ts.shutdown(t)
	noLeak(t, base)
}

// Thousands of idle connections do not keep a normal request from being
// served; closed, they leave nothing behind.
func TestThousandsOfConnections(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	// Each connection is two descriptors here (client and server side).
	n := min(2000, (int(lim.Cur)-256)/2)
	if n < 100 {
		t.Skipf("ulimit -n %d leaves room for %d connections", lim.Cur, n)
	}
	base := goroutines()
	ts := startServer(t, Config{})
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	// Half of them started a request and stopped.
	for i, c := range conns {
		if i%2 == 0 {
			if _, err := c.Write([]byte("POST /v1/completions HTTP/1.1\r\nHost: x\r\n")); err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
		}
	}
	serveOK(t, ts)
	if h := ts.health(t); h.Status != "ok" {
		t.Errorf("health %+v", h)
	}
	t.Logf("%d idle connections (ulimit -n %d), %d goroutines", n, lim.Cur, goroutines())
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	serveOK(t, ts)
	ts.shutdown(t)
	noLeak(t, base)
}

// Shutdown with a stream in flight cancels it when its context ends, and
// leaves no goroutine behind.
func TestShutdownWithAStreamInFlight(t *testing.T) {
	base := goroutines()
	cfg := Config{Parallel: 1}
	slow(&cfg, 10*time.Millisecond)
	ts := startServer(t, cfg)
	s := holdSlot(t, ts, "Once upon a time")
	defer s.close()
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, s.r)
		done <- err
	}()
	ts.down = true
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := ts.srv.Shutdown(ctx)
	if err == nil {
		t.Errorf("Shutdown returned nil with a 15 s stream in flight and 0.5 s to drain")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Shutdown took %s", d)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end after Shutdown")
	}
	if err := <-ts.served; err != http.ErrServerClosed {
		t.Errorf("Serve returned %v", err)
	}
	s.close()
	ts.tr.CloseIdleConnections()
	noLeak(t, base)
}
