package server

// Every error the server promises, over real HTTP: its status, OpenAI's
// shape {"error":{"message","type","param","code"}} and the fields that
// say what was wrong. Then the engine's promises a client can see: a
// client that goes away frees its slot, a conversation's next turn reuses
// its cached prefix, a long prompt is prefilled in chunks while others
// keep decoding.

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRequestErrors(t *testing.T) {
	ts := startServer(t, Config{Parallel: 2, MaxBody: 64 << 10})
	long := strings.Repeat("word ", 20<<10) // 100 KiB
	for _, tc := range []struct {
		name        string
		method      string
		path        string
		body        any
		status      int
		param, code string // "" for null
		msg         string // a piece the message holds
	}{
		{"malformed JSON is a 400", "POST", "/v1/chat/completions", `{"model": "stories260K", "messages": [}`, 400, "", "", "malformed JSON"},
		{"a body cut short is a 400", "POST", "/v1/chat/completions", `{"model": "stories260K", "messages": [`, 400, "", "", ""},
		{"an empty body is a 400", "POST", "/v1/completions", ``, 400, "", "", ""},
		{"two JSON values are a 400", "POST", "/v1/completions", `{"prompt":"a"} {"prompt":"b"}`, 400, "", "", "more than one JSON value"},
		{"a body that is not an object is a 400", "POST", "/v1/completions", `["prompt"]`, 400, "", "", "JSON object"},
		{"max_tokens as a string names max_tokens", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":"x"}`, 400, "max_tokens", "", "max_tokens"},
		{"messages as a string names messages", "POST", "/v1/chat/completions", `{"messages":"x"}`, 400, "messages", "", "messages"},
		{"temperature as a word names temperature", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"temperature":"hot"}`, 400, "temperature", "", "temperature"},
		{"stream as a number names stream", "POST", "/v1/completions", `{"prompt":"hi","stream":1}`, 400, "stream", "", "stream"},
		{"a temperature out of range names temperature", "POST", "/v1/chat/completions", chatBody("hi", map[string]any{"temperature": 3}), 400, "temperature", "", "temperature"},
		{"a negative top_k names top_k", "POST", "/v1/completions", completionBody("hi", map[string]any{"top_k": -1}), 400, "top_k", "", "top_k"},
		{"max_tokens 0 names max_tokens", "POST", "/v1/completions", completionBody("hi", map[string]any{"max_tokens": 0}), 400, "max_tokens", "", "max_tokens"},
		{"n 2 names n", "POST", "/v1/chat/completions", chatBody("hi", map[string]any{"n": 2}), 400, "n", "", "n:"},
		{"no messages names messages", "POST", "/v1/chat/completions", map[string]any{"messages": []any{}}, 400, "messages", "", "messages"},
		{"an unknown role names the message's role", "POST", "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "wizard", "content": "hi"}}}, 400, "messages[0].role", "", "wizard"},
		{"image content names the part", "POST", "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "image_url"}}}}}, 400, "messages[0].content[0].type", "", "image_url"},
		{"a logit_bias key that is no token names logit_bias", "POST", "/v1/completions", completionBody("hi", map[string]any{"logit_bias": map[string]any{"99999": 1}}), 400, "logit_bias", "", "99999"},
		{"seventeen stop strings name stop", "POST", "/v1/completions", completionBody("hi", map[string]any{"stop": strings.Split("a b c d e f g h i j k l m n o p q", " ")}), 400, "stop", "", "stop"},
		{"top_logprobs without logprobs names top_logprobs", "POST", "/v1/chat/completions", chatBody("hi", map[string]any{"top_logprobs": 2}), 400, "top_logprobs", "", "logprobs"},
		{"a token id outside the vocabulary names prompt", "POST", "/v1/completions", completionBody("", map[string]any{"prompt": []int{1, 512}}), 400, "prompt", "", "512"},
		{"two prompts name prompt", "POST", "/v1/completions", completionBody("", map[string]any{"prompt": []string{"a", "b"}}), 400, "prompt", "", "one prompt"},
		{"tool_choice required without tools names tool_choice", "POST", "/v1/chat/completions", chatBody("hi", map[string]any{"tool_choice": "required"}), 400, "tool_choice", "", "tools"},
		{"a body over MaxBody is a 413", "POST", "/v1/completions", completionBody(long, nil), 413, "", "", "65536"},
		{"an unknown model is a 404 model_not_found", "POST", "/v1/chat/completions", map[string]any{"model": "gpt-17", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}, 404, "model", "model_not_found", "gpt-17"},
		{"an unknown model's page is a 404", "GET", "/v1/models/gpt-17", nil, 404, "model", "model_not_found", "gpt-17"},
		{"an unknown route is a 404", "GET", "/v1/nothing", nil, 404, "", "", "/v1/nothing"},
		{"a wrong method is a 405", "GET", "/v1/chat/completions", nil, 405, "", "", "GET"},
		{"detokenizing a token outside the vocabulary names tokens", "POST", "/v1/detokenize", map[string]any{"tokens": []int{-1}}, 400, "tokens", "", "-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := ts.do(t, tc.method, tc.path, tc.body)
			e := wantError(t, resp, b, tc.status, tc.param, tc.code)
			if !strings.Contains(e.Error.Message, tc.msg) {
				t.Errorf("message %q does not say %q", e.Error.Message, tc.msg)
			}
			wantType := map[int]string{400: "invalid_request_error", 404: "invalid_request_error", 405: "invalid_request_error", 413: "invalid_request_error"}[tc.status]
			if tc.path == "/v1/nothing" {
				wantType = "not_found_error"
			}
			if e.Error.Type != wantType {
				t.Errorf("type %q, want %q", e.Error.Type, wantType)
			}
			if tc.status == 405 && !strings.Contains(resp.Header.Get("Allow"), "POST") {
				t.Errorf("Allow %q, want POST", resp.Header.Get("Allow"))
			}
		})
	}
	t.Run("a model's id resolves case-insensitively", func(t *testing.T) {
		var out struct {
			Model   string `json:"model"`
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		ts.postOK(t, "/v1/completions", completionBody("Once", map[string]any{"model": "STORIES260K", "max_tokens": 2}), &out)
		if out.Model != "stories260K" {
			t.Errorf("model %q, want stories260K", out.Model)
		}
		resp, b := ts.get(t, "/v1/models/Stories260k")
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"id":"stories260K"`) {
			t.Errorf("GET /v1/models/Stories260k: %d %s", resp.StatusCode, b)
		}
	})
	t.Run("the server still answers after every error", func(t *testing.T) {
		var out struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		ts.postOK(t, "/v1/chat/completions", chatBody("hi", map[string]any{"max_tokens": 3}), &out)
		if len(out.Choices) != 1 || out.Choices[0].FinishReason == "" {
			t.Errorf("%+v", out)
		}
	})
}

// The context bounds prompt plus max_tokens; a request over it is refused
// with context_length_exceeded, never truncated, and one exactly at it is
// served whole.
func TestContextLength(t *testing.T) {
	ts := startServer(t, Config{Parallel: 1})
	const ctx = 2048
	ids := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = 100 + i%300
		}
		return out
	}
	t.Run("prompt and max_tokens over the context name max_tokens", func(t *testing.T) {
		resp, b := ts.post(t, "/v1/completions", completionBody("", map[string]any{"prompt": ids(1000), "max_tokens": ctx - 999}))
		e := wantError(t, resp, b, 400, "max_tokens", "context_length_exceeded")
		if !strings.Contains(e.Error.Message, "2048") {
			t.Errorf("message %q does not name the context", e.Error.Message)
		}
	})
	t.Run("max_completion_tokens over the context names it", func(t *testing.T) {
		resp, b := ts.post(t, "/v1/chat/completions", chatBody("hi", map[string]any{"max_completion_tokens": ctx}))
		wantError(t, resp, b, 400, "max_completion_tokens", "context_length_exceeded")
	})
	t.Run("a completion's prompt alone over the context names prompt", func(t *testing.T) {
		resp, b := ts.post(t, "/v1/completions", completionBody("", map[string]any{"prompt": ids(ctx + 10)}))
		wantError(t, resp, b, 400, "prompt", "context_length_exceeded")
	})
	t.Run("a prompt that fills the context leaves no room", func(t *testing.T) {
		resp, b := ts.post(t, "/v1/completions", completionBody("", map[string]any{"prompt": ids(ctx)}))
		wantError(t, resp, b, 400, "*", "context_length_exceeded")
	})
	t.Run("a chat's messages over the context name messages", func(t *testing.T) {
		resp, b := ts.post(t, "/v1/chat/completions", chatBody(strings.Repeat("The cat sat on the mat. ", 400), nil))
		wantError(t, resp, b, 400, "messages", "context_length_exceeded")
	})
	t.Run("prompt and max_tokens exactly at the context are served whole", func(t *testing.T) {
		var out struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage usageBody `json:"usage"`
		}
		ts.postOK(t, "/v1/completions", completionBody("", map[string]any{"prompt": ids(1800), "max_tokens": ctx - 1800, "ignore_eos": true, "temperature": 0}), &out)
		if out.Usage.PromptTokens != 1800 || out.Usage.CompletionTokens != ctx-1800 || out.Choices[0].FinishReason != "length" {
			t.Errorf("usage %+v, finish %q; want 1800 prompt tokens, %d completion tokens, length", out.Usage, out.Choices[0].FinishReason, ctx-1800)
		}
	})
}

func TestAPIKeys(t *testing.T) {
	ts := startServer(t, Config{APIKeys: []string{"key-one", "key-two"}})
	for _, tc := range []struct {
		name   string
		path   string
		hdr    []string
		status int
	}{
		{"a request without a key is a 401", "/v1/models", nil, 401},
		{"a wrong key is a 401", "/v1/models", []string{"Authorization", "Bearer key-three"}, 401},
		{"a key that is a prefix of one is a 401", "/v1/models", []string{"Authorization", "Bearer key-on"}, 401},
		{"another scheme is a 401", "/v1/models", []string{"Authorization", "Basic key-one"}, 401},
		{"metrics need a key", "/metrics", nil, 401},
		{"the first key is let in", "/v1/models", []string{"Authorization", "Bearer key-one"}, 200},
		{"the second key is let in", "/v1/models", []string{"Authorization", "bearer key-two"}, 200},
		{"x-api-key is let in", "/v1/models", []string{"X-Api-Key", "key-two"}, 200},
		{"/health needs no key", "/health", nil, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := ts.get(t, tc.path, tc.hdr...)
			if tc.status == 200 {
				if resp.StatusCode != 200 {
					t.Fatalf("%d %s", resp.StatusCode, b)
				}
				return
			}
			e := wantError(t, resp, b, tc.status, "", "invalid_api_key")
			if e.Error.Type != "authentication_error" {
				t.Errorf("type %q", e.Error.Type)
			}
		})
	}
	t.Run("a generation with the key is served", func(t *testing.T) {
		resp, b := ts.post(t, "/v1/completions", completionBody("Once", map[string]any{"max_tokens": 2}), "Authorization", "Bearer key-two")
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	})
}

func TestRateLimit(t *testing.T) {
	ts := startServer(t, Config{RateLimit: 3})
	for i := range 3 {
		if resp, b := ts.get(t, "/v1/models"); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
		}
	}
	resp, b := ts.get(t, "/v1/models")
	e := wantError(t, resp, b, 429, "", "rate_limit_exceeded")
	if e.Error.Type != "rate_limit_error" {
		t.Errorf("type %q", e.Error.Type)
	}
	// 3 a minute: the next one is 20 s away.
	ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 20 {
		t.Errorf("Retry-After %q, want 1 to 20 seconds", resp.Header.Get("Retry-After"))
	}
	if resp, b := ts.get(t, "/health"); resp.StatusCode != 200 {
		t.Errorf("/health is limited: %d %s", resp.StatusCode, b)
	}
	resp, b = ts.post(t, "/v1/completions", completionBody("Once", map[string]any{"max_tokens": 2}))
	wantError(t, resp, b, 429, "", "rate_limit_exceeded")
}

// holdSlot starts a long streamed generation and returns once its first
// token arrived (it holds its slot until closed).
func holdSlot(t *testing.T, ts *testServer, prompt string) *stream {
	t.Helper()
	s := ts.openStream(t, "/v1/completions", completionBody(prompt, map[string]any{"max_tokens": 1500, "ignore_eos": true, "stream": true}))
	for {
		data, err := s.next()
		if err != nil {
			s.close()
			t.Fatalf("the long stream ended: %v", err)
		}
		var c chunk
		if json.Unmarshal([]byte(data), &c) == nil && c.text() != "" {
			return s
		}
	}
}

// With every slot busy and the queue full, the next request is a 503
// with Retry-After; once the slot frees, the queued one is served.
func TestQueueFull(t *testing.T) {
	cfg := Config{Parallel: 1, MaxQueue: 1}
	slow(&cfg, 10*time.Millisecond) // 1500 tokens: 15 s unless cancelled
	ts := startServer(t, cfg)
	hold := holdSlot(t, ts, "Once upon a time")
	defer hold.close()
	if h := ts.health(t); h.SlotsProcessing != 1 {
		t.Fatalf("health %+v, want one slot processing", h)
	}
	queued := make(chan int, 1)
	next := body(t, completionBody("Lily", map[string]any{"max_tokens": 4}))
	go func() {
		resp, err := ts.client.Post(ts.url+"/v1/completions", "application/json", next)
		if err != nil {
			queued <- 0
			return
		}
		resp.Body.Close()
		queued <- resp.StatusCode
	}()
	if !eventually(10*time.Second, func() bool { return ts.health(t).Queued == 1 }) {
		t.Fatalf("the second request never queued: %+v", ts.health(t))
	}
	resp, b := ts.post(t, "/v1/chat/completions", chatBody("hi", map[string]any{"max_tokens": 4}))
	e := wantError(t, resp, b, 503, "", "")
	if e.Error.Type != "unavailable_error" {
		t.Errorf("type %q", e.Error.Type)
	}
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("Retry-After %q, want a positive number of seconds", resp.Header.Get("Retry-After"))
	}
	hold.close()
	select {
	case st := <-queued:
		if st != 200 {
			t.Errorf("the queued request: status %d", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the queued request was not served after the slot freed")
	}
}

// A client that disconnects mid-stream cancels its generation at the next
// step: its slot frees at once and a waiting request gets it.
func TestDisconnectFreesTheSlot(t *testing.T) {
	cfg := Config{Parallel: 1, MaxQueue: 4}
	slow(&cfg, 10*time.Millisecond)
	ts := startServer(t, cfg)
	before := ts.metrics(t).Total.Cancelled
	hold := holdSlot(t, ts, "Once upon a time")
	type result struct {
		status int
		at     time.Time
	}
	waiter := make(chan result, 1)
	next := body(t, completionBody("Lily", map[string]any{"max_tokens": 4}))
	go func() {
		resp, err := ts.client.Post(ts.url+"/v1/completions", "application/json", next)
		if err != nil {
			waiter <- result{}
			return
		}
		resp.Body.Close()
		waiter <- result{resp.StatusCode, time.Now()}
	}()
	if !eventually(10*time.Second, func() bool { return ts.health(t).Queued == 1 }) {
		t.Fatalf("the waiting request never queued: %+v", ts.health(t))
	}
	closed := time.Now()
	hold.close()
	// The held generation had ~15 s to go: 5 s is ample for a cancel and
	// far too little for it to run out.
	select {
	case r := <-waiter:
		if r.status != 200 {
			t.Fatalf("the waiting request: status %d", r.status)
		}
		t.Logf("the waiting request was served %s after the disconnect", r.at.Sub(closed).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatalf("the waiting request did not get the slot within 5 s of the disconnect: %+v", ts.health(t))
	}
	if !eventually(5*time.Second, func() bool { return ts.metrics(t).Total.Cancelled == before+1 }) {
		t.Errorf("cancelled %d, want %d", ts.metrics(t).Total.Cancelled, before+1)
	}
	if !eventually(5*time.Second, func() bool { return ts.health(t).SlotsProcessing == 0 }) {
		t.Errorf("health %+v, want no slot processing", ts.health(t))
	}
}

// chatOut is a whole chat completion.
type chatOut struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage usageBody `json:"usage"`
}

// A conversation's second turn (its first turn, the reply, a new message)
// starts from the slot that holds the first: its prompt is cached, also
// when another conversation was served in between (it has a slot of its
// own to take, and shares only the template's first tokens).
func TestNextTurnReusesTheCachedPrefix(t *testing.T) {
	for _, between := range []bool{false, true} {
		name := "right after the first turn"
		if between {
			name = "after another conversation"
		}
		t.Run(name, func(t *testing.T) {
			ts := startServer(t, Config{Parallel: 2})
			first := []map[string]any{
				{"role": "system", "content": "You tell short stories about animals."},
				{"role": "user", "content": "Tell me about a cat who found a red ball in the garden."},
			}
			var one chatOut
			ts.postOK(t, "/v1/chat/completions", map[string]any{"model": "stories260K", "messages": first, "max_tokens": 24, "temperature": 0}, &one)
			if between {
				var other chatOut
				ts.postOK(t, "/v1/chat/completions", chatBody("A dog ran to the park.", map[string]any{"max_tokens": 24, "temperature": 0}), &other)
			}
			second := append(first,
				map[string]any{"role": "assistant", "content": one.Choices[0].Message.Content},
				map[string]any{"role": "user", "content": "And what did the cat do then?"})
			var two chatOut
			ts.postOK(t, "/v1/chat/completions", map[string]any{"model": "stories260K", "messages": second, "max_tokens": 8, "temperature": 0}, &two)
			p1, c2 := one.Usage.PromptTokens, two.Usage.PromptTokensDetails.CachedTokens
			t.Logf("first turn: %d prompt tokens; second: %d, %d cached", p1, two.Usage.PromptTokens, c2)
			if two.Usage.PromptTokens <= p1 {
				t.Fatalf("the second turn's prompt (%d) is not longer than the first's (%d)", two.Usage.PromptTokens, p1)
			}
			if c2 < p1-3 {
				t.Errorf("the second turn has %d cached tokens, want at least the first turn's prompt %d less 3", c2, p1)
			}
			if c2 >= two.Usage.PromptTokens {
				t.Errorf("%d cached of a %d-token prompt: at least one token must be fed", c2, two.Usage.PromptTokens)
			}
			if m := ts.metrics(t); len(m.Models) != 1 || m.Models[0].CachedTokens < uint64(c2) {
				t.Errorf("metrics %+v: want at least %d cached tokens", m.Models, c2)
			}
		})
	}
}

// While others generate, a long prompt is fed a few rows a step, beside
// their decoding rows: a generation that is running when a 1500-token
// prompt arrives keeps receiving a token a step while that prompt is
// prefilled. In chunks of 16 rows (or of the default busy budget, 64)
// that is ~94 (~24) of its tokens before the long one's first; fed whole
// it would be a few. The test asks for half: a reader that lags behind
// the server by dozens of steps still passes, a stalled batch does not.
func TestChunkedPrefillKeepsOthersDecoding(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		rows  int
		delay time.Duration
	}{
		{"PrefillRows 16", Config{Parallel: 2, PrefillRows: 16}, 16, 10 * time.Millisecond},
		{"the default busy prefill budget", Config{Parallel: 2}, 64, 20 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slow(&tc.cfg, tc.delay)
			chunkedPrefill(t, startServer(t, tc.cfg), tc.rows)
		})
	}
}

func chunkedPrefill(t *testing.T, ts *testServer, rows int) {
	const long = 1500
	var tok struct {
		Tokens []int `json:"tokens"`
	}
	ts.postOK(t, "/v1/tokenize", map[string]any{"model": "stories260K", "content": strings.Repeat("The little dog ran to the park and played with a ball. ", 120)}, &tok)
	if len(tok.Tokens) < long {
		t.Fatalf("only %d tokens", len(tok.Tokens))
	}
	short := ts.openStream(t, "/v1/completions", completionBody("Once upon a time", map[string]any{"max_tokens": 400, "ignore_eos": true, "stream": true}))
	defer short.close()
	// The short one's tokens, counted as they arrive.
	var got atomic.Int64
	go func() {
		for {
			data, err := short.next()
			if err != nil || data == "[DONE]" {
				return
			}
			var c chunk
			if json.Unmarshal([]byte(data), &c) == nil && c.text() != "" {
				got.Add(1)
			}
		}
	}()
	if !eventually(10*time.Second, func() bool { return got.Load() > 0 }) {
		t.Fatal("the short generation never started")
	}
	ls, err := ts.tryStream("/v1/completions", completionBody("", map[string]any{"prompt": tok.Tokens[:long], "max_tokens": 4, "stream": true}))
	if err != nil {
		t.Fatal(err)
	}
	defer ls.close()
	// The stream's header comes once the engine took the request.
	submitted := got.Load()
	for {
		data, err := ls.next()
		if err != nil || data == "[DONE]" {
			t.Fatalf("the long stream ended without a token: %v", err)
		}
		var c chunk
		if json.Unmarshal([]byte(data), &c) == nil && c.text() != "" {
			break
		}
	}
	during := got.Load() - submitted
	want := int64(long / rows / 2)
	t.Logf("the short generation received %d tokens while %d prompt tokens were prefilled (%d rows a step: ~%d steps)", during, long, rows, long/rows)
	if during < want {
		t.Errorf("only %d of the short generation's tokens arrived during the long prefill, want at least %d: the long prompt stalled it", during, want)
	}
	if got.Load() >= 400 {
		t.Errorf("the short generation ran to its end")
	}
}
