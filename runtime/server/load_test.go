package server

// Determinism under load: many clients at once, every response the one its
// request gets when served alone, near-ties excepted by the parity rule.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// loadReq is one distinct request of the load test.
type loadReq struct {
	path   string // /v1/chat/completions or /v1/completions
	stream bool
	body   map[string]any
}

// loadResp is what the test compares of a response.
type loadResp struct {
	id, text, finish string
	completion       int
}

func (r loadResp) String() string {
	return fmt.Sprintf("%d tokens, finish %s, %q", r.completion, r.finish, r.text)
}

// loadRequests are the distinct requests: chat and completions, streamed
// and not, greedy and seeded, prompts from a few words to ~400 tokens,
// several sharing a long prefix (a slot's prefix is copied into another).
func loadRequests() []loadReq {
	story := "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. " +
		"One day, Lily saw a big red ball under a tree. She ran to the ball and picked it up."
	long := strings.Repeat("The sun was warm and the birds sang in the tall green trees. ", 25)
	prompts := []string{
		"Tom",
		"The little dog ran to the park and",
		story,
		story + " Then she saw",
		story + " Her mom said",
		story + " A boy named Ben came and asked",
		long + "Then",
		long + "The cat",
		"Sue had a toy car.",
		"One day, a bird flew into the house and",
		"Max and his dad went to the lake to catch fish.",
		"The princess",
	}
	var out []loadReq
	for i, p := range prompts {
		for k := range 2 {
			v := i*2 + k
			r := loadReq{stream: v%3 == 0, body: map[string]any{"model": "stories260K", "max_tokens": 16 + (v*13)%80}}
			if (v/2)%2 == 0 {
				r.path = "/v1/chat/completions"
				r.body["messages"] = []map[string]any{{"role": "user", "content": p}}
			} else {
				r.path = "/v1/completions"
				r.body["prompt"] = p
			}
			if k == 0 {
				r.body["temperature"] = 0
			} else {
				r.body["temperature"] = 0.9
				r.body["seed"] = 1000 + v
			}
			if v%5 == 0 {
				r.body["ignore_eos"] = true
			}
			if r.stream {
				r.body["stream"] = true
				r.body["stream_options"] = map[string]any{"include_usage": true}
			}
			out = append(out, r)
		}
	}
	return out
}

// send sends r and reads its response, streamed or whole; any failure is
// returned (it may run on any goroutine).
func (ts *testServer) send(r loadReq) (loadResp, error) {
	b, err := json.Marshal(r.body)
	if err != nil {
		return loadResp{}, err
	}
	resp, err := ts.client.Post(ts.url+r.path, "application/json", bytes.NewReader(b))
	if err != nil {
		return loadResp{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e bytes.Buffer
		e.ReadFrom(resp.Body)
		return loadResp{}, fmt.Errorf("status %d: %s", resp.StatusCode, e.String())
	}
	type choice struct {
		Text    string `json:"text"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	}
	type body struct {
		ID      string     `json:"id"`
		Choices []choice   `json:"choices"`
		Usage   *usageBody `json:"usage"`
	}
	var out loadResp
	if !r.stream {
		var v body
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			return out, err
		}
		if len(v.Choices) != 1 || v.Choices[0].FinishReason == nil || v.Usage == nil {
			return out, fmt.Errorf("a response without a choice, finish_reason or usage: %+v", v)
		}
		c := v.Choices[0]
		return loadResp{id: v.ID, text: c.Text + c.Message.Content, finish: *c.FinishReason, completion: v.Usage.CompletionTokens}, nil
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var text strings.Builder
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			out.text = text.String()
			if out.finish == "" || out.completion == 0 && out.text != "" {
				return out, fmt.Errorf("a stream without finish_reason or usage: %+v", out)
			}
			return out, nil
		}
		var v body
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			return out, fmt.Errorf("%v: %s", err, data)
		}
		if out.id == "" {
			out.id = v.ID
		} else if v.ID != out.id {
			return out, fmt.Errorf("a stream's chunks have ids %s and %s", out.id, v.ID)
		}
		for _, c := range v.Choices {
			text.WriteString(c.Text + c.Delta.Content)
			if c.FinishReason != nil {
				out.finish = *c.FinishReason
			}
		}
		if v.Usage != nil {
			out.completion = v.Usage.CompletionTokens
		}
	}
	return out, fmt.Errorf("the stream ended without [DONE]: %v", sc.Err())
}

// nearTieMargin is the parity rule's tolerance, in logits: where two
// generations part, the reference's top-2 logits must be within
// tol·max|logit| (runtime/parity_test.go, runtime/batch_test.go). For
// stories260K (F32) tol is 1e-3 and max|logit| stays within 12 to 24
// (measured over 600 greedy steps), so the margin is at most 0.025. A
// log-probability is the logit less one constant per step: the top two
// log-probabilities are apart by their logits' margin.
const nearTieMargin = 1e-3 * 25

// nearTie explains a response that differs from its alone-response: r is
// asked again, alone, with two top log-probabilities per token; where
// got's text leaves that generation's, its top two must be a near-tie.
func nearTie(t *testing.T, ts *testServer, r loadReq, alone, got loadResp) error {
	t.Helper()
	body := maps.Clone(r.body)
	delete(body, "stream")
	delete(body, "stream_options")
	if r.path == "/v1/chat/completions" {
		body["logprobs"], body["top_logprobs"] = true, 2
	} else {
		body["logprobs"] = 2
	}
	var out struct {
		Choices []struct {
			Text     string                   `json:"text"`
			Message  struct{ Content string } `json:"message"`
			Logprobs struct {
				Content []struct {
					Token       string `json:"token"`
					TopLogprobs []struct {
						Token   string  `json:"token"`
						Logprob float64 `json:"logprob"`
					} `json:"top_logprobs"`
				} `json:"content"`
				Tokens      []string             `json:"tokens"`
				TopLogprobs []map[string]float64 `json:"top_logprobs"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	ts.postOK(t, r.path, body, &out)
	c := out.Choices[0]
	if text := c.Text + c.Message.Content; text != alone.text {
		return fmt.Errorf("asked with logprobs, alone, it says %q, not %q", text, alone.text)
	}
	type step struct {
		piece string
		top   []float64
	}
	var steps []step
	for _, lp := range c.Logprobs.Content {
		s := step{piece: lp.Token}
		for _, tl := range lp.TopLogprobs {
			s.top = append(s.top, tl.Logprob)
		}
		steps = append(steps, s)
	}
	for i, tok := range c.Logprobs.Tokens {
		s := step{piece: tok}
		for _, v := range c.Logprobs.TopLogprobs[i] {
			s.top = append(s.top, v)
		}
		steps = append(steps, s)
	}
	acc := ""
	for i, s := range steps {
		acc += s.piece
		if strings.HasPrefix(got.text, acc) {
			continue
		}
		sort.Sort(sort.Reverse(sort.Float64Slice(s.top)))
		if len(s.top) < 2 {
			return fmt.Errorf("step %d: %d top log-probabilities", i, len(s.top))
		}
		if gap := s.top[0] - s.top[1]; gap > nearTieMargin {
			return fmt.Errorf("they part at step %d (%q), where the top two are %.4g apart (> %.3g): not a near-tie", i, s.piece, gap, nearTieMargin)
		}
		t.Logf("a near-tie (%.3g) at step %d parts %s\nalone %q\nload  %q", s.top[0]-s.top[1], i, r.path, alone.text, got.text)
		return nil
	}
	return fmt.Errorf("the alone generation's tokens do not part from %q (pieces %q)", got.text, acc)
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// 32 clients at once, each sending a fixed run of the distinct requests,
// against 4 slots, then 8 fed prompts 16 rows a step: every request is
// answered, with its own response (the one it gets alone: its text,
// finish reason and token count), batched with whichever others are
// running, from whichever prefix was cached.
func TestLoadDeterminism(t *testing.T) {
	for _, cfg := range []Config{{Parallel: 4}, {Parallel: 8, PrefillRows: 16}} {
		t.Run(fmt.Sprintf("%d slots, prefill rows %d", cfg.Parallel, cfg.PrefillRows), func(t *testing.T) { underLoad(t, cfg) })
	}
}

func underLoad(t *testing.T, cfg Config) {
	const clients, each = 32, 12
	base := goroutines()
	ts := startServer(t, cfg)
	reqs := loadRequests()

	alone := make([]loadResp, len(reqs))
	seen := map[string]int{}
	for i, r := range reqs {
		resp, err := ts.send(r)
		if err != nil {
			t.Fatalf("request %d alone: %v", i, err)
		}
		alone[i] = resp
		// Distinct answers: a response given to the wrong request shows.
		if j, ok := seen[resp.text]; ok {
			t.Fatalf("requests %d and %d both answer %q: the set cannot tell a mix-up", j, i, resp.text)
		}
		seen[resp.text] = i
	}

	type result struct {
		req  int
		resp loadResp
		err  error
	}
	results := make([][]result, clients)
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for k := range each {
				i := (c*7 + k*5) % len(reqs)
				resp, err := ts.send(reqs[i])
				results[c] = append(results[c], result{i, resp, err})
			}
		})
	}
	wg.Wait()
	took := time.Since(start)

	ids := map[string]bool{}
	n, ties := 0, 0
	for c, rs := range results {
		if len(rs) != each {
			t.Errorf("client %d: %d responses, want %d", c, len(rs), each)
		}
		for _, r := range rs {
			n++
			if r.err != nil {
				t.Errorf("client %d, request %d: %v", c, r.req, r.err)
				continue
			}
			if ids[r.resp.id] {
				t.Errorf("client %d, request %d: the id %s was given twice", c, r.req, r.resp.id)
			}
			ids[r.resp.id] = true
			want := alone[r.req]
			if r.resp.text == want.text && r.resp.finish == want.finish && r.resp.completion == want.completion {
				continue
			}
			if r.resp.text == want.text {
				t.Errorf("client %d, request %d: %s\nalone: %s", c, r.req, r.resp, want)
				continue
			}
			if j, ok := seen[r.resp.text]; ok {
				t.Errorf("client %d, request %d got request %d's response: %s", c, r.req, j, r.resp)
				continue
			}
			if err := nearTie(t, ts, reqs[r.req], want, r.resp); err != nil {
				t.Errorf("client %d, request %d (%s): %v\nunder load: %s\nalone:      %s", c, r.req, reqs[r.req].path, err, r.resp, want)
				continue
			}
			ties++
		}
	}
	m := ts.metrics(t)
	t.Logf("%d requests from %d clients in %s (%.0f/s), %d parted at a near-tie; %d generations, %d prompt tokens cached",
		n, clients, took.Round(time.Millisecond), float64(n)/took.Seconds(), ties, m.Models[0].Requests, m.Models[0].CachedTokens)
	if m.Models[0].CachedTokens == 0 {
		t.Errorf("no prompt token was ever cached: the shared prefixes were fed again")
	}
	rss := peakRSS(t)
	t.Logf("peak RSS %.1f MiB", float64(rss)/(1<<20))
	if rss > 1<<30 {
		t.Errorf("peak RSS %.1f MiB, over 1 GiB", float64(rss)/(1<<20))
	}
	ts.shutdown(t)
	noLeak(t, base)
}
