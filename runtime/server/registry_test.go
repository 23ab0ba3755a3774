package server

// The registry over several models: resolving ids, loading on demand,
// unloading the least recently used idle model to fit a memory budget,
// never a busy one, unloading idle ones. Then the metrics' parts: the
// rate limiter, histogram quantiles and the Prometheus text.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime"
)

// threeModels is a config of three copies of stories260K: alpha, Beta and
// gamma.
func threeModels(t *testing.T, cfg Config) Config {
	t.Helper()
	cfg.Plans, cfg.Models = planCopies(t, "alpha", "Beta", "gamma")
	return cfg
}

// loaded is which models /v1/models says are loaded.
func (ts *testServer) loaded(t *testing.T) map[string]bool {
	t.Helper()
	var out struct {
		Data []modelObject `json:"data"`
	}
	_, b := ts.get(t, "/v1/models")
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	m := map[string]bool{}
	for _, d := range out.Data {
		m[d.ID] = d.Meta.Loaded
	}
	return m
}

// counts is a model's loads and unloads, from /v1/metrics.
func (ts *testServer) counts(t *testing.T, id string) (loads, unloads uint64) {
	t.Helper()
	for _, m := range ts.metrics(t).Models {
		if m.ID == id {
			return m.Loads, m.Unloads
		}
	}
	return 0, 0
}

// generate asks model for a short completion and checks that it was
// served by that model.
func (ts *testServer) generate(t *testing.T, model string) {
	t.Helper()
	var out struct {
		Model string `json:"model"`
	}
	ts.postOK(t, "/v1/completions", completionBody("Once", map[string]any{"model": model, "max_tokens": 2}), &out)
	if !strings.EqualFold(out.Model, model) {
		t.Fatalf("asked %s, served by %s", model, out.Model)
	}
}

func wantLoaded(t *testing.T, got map[string]bool, want ...string) {
	t.Helper()
	w := map[string]bool{"alpha": false, "Beta": false, "gamma": false}
	for _, id := range want {
		w[id] = true
	}
	for id, l := range w {
		if got[id] != l {
			t.Errorf("loaded %v, want %v loaded", got, want)
			return
		}
	}
}

func TestModelResolution(t *testing.T) {
	ts := startUnloaded(t, threeModels(t, Config{Parallel: 1}))
	t.Run("every model is listed, in order", func(t *testing.T) {
		var out struct {
			Object string        `json:"object"`
			Data   []modelObject `json:"data"`
		}
		_, b := ts.get(t, "/v1/models")
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, d := range out.Data {
			ids = append(ids, d.ID)
			if d.Object != "model" || d.OwnedBy != "akunu" || d.Meta.Vocab != 512 || d.Meta.Ctx != 2048 || d.Meta.MemoryBytes <= 0 {
				t.Errorf("%+v", d)
			}
		}
		if out.Object != "list" || strings.Join(ids, " ") != "alpha Beta gamma" {
			t.Errorf("%s", b)
		}
	})
	for _, tc := range []struct{ asked, want string }{
		{"alpha", "alpha"}, {"Beta", "Beta"}, {"beta", "Beta"}, {"GAMMA", "gamma"}, {"Alpha", "alpha"},
	} {
		t.Run(fmt.Sprintf("%s names %s", tc.asked, tc.want), func(t *testing.T) {
			var out struct {
				Model string `json:"model"`
			}
			ts.postOK(t, "/v1/chat/completions", map[string]any{"model": tc.asked, "messages": []any{map[string]any{"role": "user", "content": "hi"}}, "max_tokens": 2}, &out)
			if out.Model != tc.want {
				t.Errorf("model %q, want %q", out.Model, tc.want)
			}
			resp, b := ts.get(t, "/v1/models/"+tc.asked)
			var m modelObject
			if resp.StatusCode != 200 || json.Unmarshal(b, &m) != nil || m.ID != tc.want {
				t.Errorf("GET /v1/models/%s: %d %s", tc.asked, resp.StatusCode, b)
			}
		})
	}
	t.Run("no model with several is a 404", func(t *testing.T) {
		resp, b := ts.post(t, "/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 2})
		wantError(t, resp, b, 404, "model", "model_not_found")
	})
	t.Run("a model whose id differs from another's only in case is refused at start", func(t *testing.T) {
		plan, gguf := storiesPlan(t)
		b, err := os.ReadFile(plan)
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, name := range []string{"a/story.plan", "b/Story.plan"} {
			p := filepath.Join(t.TempDir(), name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, p)
		}
		_, err = New(Config{Plans: paths, Models: map[string]string{paths[0]: gguf, paths[1]: gguf}})
		if err == nil || !strings.Contains(err.Error(), "rename one") {
			t.Errorf("New: %v, want a refusal", err)
		}
	})
}

// modelMemory is what one stories260K model holds with parallel slots.
func modelMemory(t *testing.T, parallel int) int64 {
	t.Helper()
	plan, _ := storiesPlan(t)
	p, err := plans.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	return memoryOf(p, parallel)
}

// A memory budget that fits two of three: the third's request unloads
// the least recently used idle one.
func TestMemoryBudgetUnloadsTheLeastRecentlyUsed(t *testing.T) {
	mem := modelMemory(t, 1)
	ts := startUnloaded(t, threeModels(t, Config{Parallel: 1, MemoryBudget: 2*mem + mem/2}))
	wantLoaded(t, ts.loaded(t))
	ts.generate(t, "alpha")
	ts.generate(t, "Beta")
	wantLoaded(t, ts.loaded(t), "alpha", "Beta")
	ts.generate(t, "gamma")
	wantLoaded(t, ts.loaded(t), "Beta", "gamma")
	if l, u := ts.counts(t, "alpha"); l != 1 || u != 1 {
		t.Errorf("alpha: %d loads, %d unloads; want 1 and 1", l, u)
	}
	ts.generate(t, "Beta") // Beta is now more recent than gamma
	ts.generate(t, "alpha")
	wantLoaded(t, ts.loaded(t), "alpha", "Beta")
	if l, u := ts.counts(t, "gamma"); l != 1 || u != 1 {
		t.Errorf("gamma: %d loads, %d unloads; want 1 and 1", l, u)
	}
	if l, u := ts.counts(t, "alpha"); l != 2 || u != 1 {
		t.Errorf("alpha: %d loads, %d unloads; want 2 and 1", l, u)
	}
	if m := ts.metrics(t); m.Total.Loads != 4 || m.Total.Unloads != 2 {
		t.Errorf("total: %d loads, %d unloads; want 4 and 2", m.Total.Loads, m.Total.Unloads)
	}
}

// holdModel starts a long stream on model and returns once its first
// token arrived.
func holdModel(t *testing.T, ts *testServer, model string) *stream {
	t.Helper()
	s := ts.openStream(t, "/v1/completions", completionBody("Once upon a time", map[string]any{"model": model, "max_tokens": 1500, "ignore_eos": true, "stream": true}))
	for {
		data, err := s.next()
		if err != nil {
			s.close()
			t.Fatalf("the stream on %s ended: %v", model, err)
		}
		var c chunk
		if json.Unmarshal([]byte(data), &c) == nil && c.text() != "" {
			return s
		}
	}
}

// A model that is generating is never unloaded to make room: the idle one
// goes, and when only busy ones are left the request is a 503.
func TestMemoryBudgetNeverUnloadsABusyModel(t *testing.T) {
	mem := modelMemory(t, 1)
	cfg := threeModels(t, Config{Parallel: 1, MemoryBudget: 2*mem + mem/2})
	slow(&cfg, 10*time.Millisecond) // a held stream has 15 s to go
	ts := startUnloaded(t, cfg)
	a := holdModel(t, ts, "alpha")
	defer a.close()
	ts.generate(t, "Beta") // Beta is more recent than alpha, but idle
	ts.generate(t, "gamma")
	wantLoaded(t, ts.loaded(t), "alpha", "gamma")
	g := holdModel(t, ts, "gamma")
	defer g.close()
	resp, b := ts.post(t, "/v1/completions", completionBody("Once", map[string]any{"model": "Beta", "max_tokens": 2}))
	e := wantError(t, resp, b, 503, "", "")
	if e.Error.Type != "unavailable_error" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("type %q, Retry-After %q", e.Error.Type, resp.Header.Get("Retry-After"))
	}
	wantLoaded(t, ts.loaded(t), "alpha", "gamma")
	// The held streams kept going.
	for _, s := range []*stream{a, g} {
		if _, err := s.next(); err != nil {
			t.Errorf("a held stream: %v", err)
		}
	}
	a.close()
	if !eventually(5*time.Second, func() bool { return ts.health(t).SlotsProcessing == 1 }) {
		t.Fatalf("alpha's slot is still busy: %+v", ts.health(t))
	}
	ts.generate(t, "Beta")
	wantLoaded(t, ts.loaded(t), "Beta", "gamma")
}

// A model idle for IdleUnload is unloaded, and the next request loads it
// again; a model that is generating is not idle, however long it runs.
func TestIdleUnload(t *testing.T) {
	cfg := threeModels(t, Config{Parallel: 1, IdleUnload: 1500 * time.Millisecond})
	delay := slow(&cfg, 0)
	ts := startUnloaded(t, cfg)
	ts.generate(t, "alpha")
	used := time.Now()
	wantLoaded(t, ts.loaded(t), "alpha")
	if !eventually(8*time.Second, func() bool { return !ts.loaded(t)["alpha"] }) {
		t.Fatalf("alpha is still loaded %s after its last request", time.Since(used))
	}
	if d := time.Since(used); d < 1500*time.Millisecond {
		t.Errorf("alpha was unloaded %s after its last request, before IdleUnload", d)
	}
	if l, u := ts.counts(t, "alpha"); l != 1 || u != 1 {
		t.Errorf("alpha: %d loads, %d unloads; want 1 and 1", l, u)
	}
	ts.generate(t, "alpha")
	if l, _ := ts.counts(t, "alpha"); l != 2 {
		t.Errorf("alpha: %d loads, want 2", l)
	}

	delay.Store(int64(10 * time.Millisecond))
	s := holdModel(t, ts, "alpha")
	defer s.close()
	until := time.Now().Add(3 * time.Second)
	for time.Now().Before(until) {
		if _, err := s.next(); err != nil {
			t.Fatalf("the stream ended: %v", err)
		}
	}
	if !ts.loaded(t)["alpha"] {
		t.Errorf("alpha was unloaded while it generated")
	}
	if _, u := ts.counts(t, "alpha"); u != 1 {
		t.Errorf("alpha: %d unloads, want 1", u)
	}
}

func TestLoadAndUnloadRoutes(t *testing.T) {
	ts := startUnloaded(t, threeModels(t, Config{Parallel: 1}))
	var m modelObject
	ts.postOK(t, "/v1/models/load", map[string]any{"model": "beta"}, &m)
	if m.ID != "Beta" || !m.Meta.Loaded {
		t.Errorf("load: %+v", m)
	}
	wantLoaded(t, ts.loaded(t), "Beta")
	ts.postOK(t, "/v1/models/unload", map[string]any{"model": "Beta"}, &m)
	if m.Meta.Loaded {
		t.Errorf("unload: %+v", m)
	}
	wantLoaded(t, ts.loaded(t))
	ts.postOK(t, "/v1/models/unload", map[string]any{"model": "Beta"}, &m) // twice is fine
	ts.generate(t, "Beta")
	wantLoaded(t, ts.loaded(t), "Beta")
	if l, u := ts.counts(t, "Beta"); l != 2 || u != 1 {
		t.Errorf("Beta: %d loads, %d unloads; want 2 and 1", l, u)
	}
	resp, b := ts.post(t, "/v1/models/load", map[string]any{"model": "delta"})
	wantError(t, resp, b, 404, "model", "model_not_found")
	resp, b = ts.post(t, "/v1/models/unload", `{"model":`)
	wantError(t, resp, b, 400, "", "")
}

func TestLimiter(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLimiter(60) // one a second, a burst of 60
	for i := range 60 {
		if w := l.take("a", t0); w != 0 {
			t.Fatalf("request %d of the burst waits %s", i, w)
		}
	}
	for _, tc := range []struct {
		name string
		who  string
		at   time.Duration
		wait time.Duration
	}{
		{"the 61st at once waits a second", "a", 0, time.Second},
		{"half a second later, half a second", "a", 500 * time.Millisecond, 500 * time.Millisecond},
		{"a second later, one is let in", "a", time.Second, 0},
		{"and the next waits again", "a", time.Second, time.Second},
		{"another client has its own bucket", "b", time.Second, 0},
		{"a minute later the bucket is full again", "a", 61 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := l.take(tc.who, t0.Add(tc.at))
			if d := w - tc.wait; d < -time.Millisecond || d > time.Millisecond {
				t.Errorf("waits %s, want %s", w, tc.wait)
			}
		})
	}
	t.Run("a refused request spends nothing", func(t *testing.T) {
		l := newLimiter(1)
		if l.take("c", t0) != 0 {
			t.Fatal("the first is refused")
		}
		for range 5 {
			l.take("c", t0.Add(30*time.Second))
		}
		if w := l.take("c", t0.Add(60*time.Second)); w != 0 {
			t.Errorf("after a minute, waits %s", w)
		}
	})
	t.Run("prune forgets full buckets and keeps the others", func(t *testing.T) {
		l := newLimiter(60)
		now := time.Now()
		l.take("old", now.Add(-2*time.Minute))
		l.take("new", now)
		l.prune()
		if _, ok := l.buckets["old"]; ok {
			t.Error("a full bucket was kept")
		}
		if _, ok := l.buckets["new"]; !ok {
			t.Error("a bucket in use was forgotten")
		}
	})
}

func TestHistogramQuantile(t *testing.T) {
	h := newHistogram([]float64{1, 2, 5})
	if q := h.quantile(.5); q != 0 {
		t.Errorf("empty: %g", q)
	}
	for _, v := range []float64{0.5, 1, 1.5, 2, 3, 10} {
		h.observe(v)
	}
	// Buckets (le): 1 holds 0.5 and 1; 2 holds 1.5 and 2; 5 holds 3; +Inf 10.
	if want := []uint64{2, 2, 1, 1}; fmt.Sprint(h.counts) != fmt.Sprint(want) {
		t.Errorf("counts %v, want %v", h.counts, want)
	}
	if h.n != 6 || h.sum != 18 {
		t.Errorf("n %d, sum %g", h.n, h.sum)
	}
	for _, tc := range []struct{ q, want float64 }{
		{0, 1}, {.2, 1}, {1.0 / 3, 1}, {.5, 2}, {2.0 / 3, 2}, {.8, 5}, {.99, 5}, {1, 5},
	} {
		if got := h.quantile(tc.q); got != tc.want {
			t.Errorf("quantile(%g) = %g, want %g", tc.q, got, tc.want)
		}
	}
}

// sampleLine is a sample of Prometheus' text format: name{labels} value.
var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")*)?\})? (\S+)$`)

var leLabel = regexp.MustCompile(`,?le="([^"]*)"`)

// checkPrometheus parses text loosely: every line a comment (HELP, TYPE)
// or a sample of a family typed before it; every histogram's buckets
// cumulative, ending with +Inf equal to its count. It returns the samples
// by name and labels.
func checkPrometheus(t *testing.T, text string) map[string]float64 {
	t.Helper()
	types := map[string]string{}
	samples := map[string]float64{}
	type series struct {
		les    []float64
		counts []float64
	}
	buckets := map[string]*series{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			f := strings.Fields(line)
			if len(f) < 3 || (f[1] != "HELP" && f[1] != "TYPE") {
				t.Errorf("line %d: %q", n, line)
				continue
			}
			if f[1] == "TYPE" {
				if len(f) != 4 || !strings.Contains(" counter gauge histogram summary untyped ", " "+f[3]+" ") {
					t.Errorf("line %d: %q", n, line)
				}
				if types[f[2]] != "" {
					t.Errorf("line %d: %s typed twice", n, f[2])
				}
				types[f[2]] = f[3]
			}
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("line %d is not name{labels} value: %q", n, line)
			continue
		}
		name, labels := m[1], m[2]
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Errorf("line %d: value %q: %v", n, m[3], err)
		}
		family := name
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if f, ok := strings.CutSuffix(name, suf); ok && types[f] == "histogram" {
				family = f
			}
		}
		if types[family] == "" {
			t.Errorf("line %d: %s has no TYPE before it", n, name)
		}
		if types[family] == "counter" && !strings.HasSuffix(name, "_total") {
			t.Errorf("line %d: counter %s does not end in _total", n, name)
		}
		samples[name+labels] = v
		if strings.HasSuffix(name, "_bucket") && family != name {
			le := leLabel.FindStringSubmatch(labels)
			if le == nil {
				t.Errorf("line %d: a bucket without le", n)
				continue
			}
			bound, err := strconv.ParseFloat(le[1], 64)
			if err != nil {
				t.Errorf("line %d: le %q", n, le[1])
			}
			key := family + leLabel.ReplaceAllString(labels, "")
			s := buckets[key]
			if s == nil {
				s = &series{}
				buckets[key] = s
			}
			s.les = append(s.les, bound)
			s.counts = append(s.counts, v)
		}
	}
	for key, s := range buckets {
		for i := 1; i < len(s.les); i++ {
			if s.les[i] <= s.les[i-1] || s.counts[i] < s.counts[i-1] {
				t.Errorf("%s: bucket %d (le %g, %g) after (le %g, %g): not cumulative", key, i, s.les[i], s.counts[i], s.les[i-1], s.counts[i-1])
			}
		}
		family, labels, _ := strings.Cut(key, "{")
		if labels != "" {
			labels = "{" + labels
		}
		labels = strings.Replace(labels, "{}", "", 1)
		count, ok := samples[family+"_count"+labels]
		if !ok {
			t.Errorf("%s: no _count", key)
		}
		if _, ok := samples[family+"_sum"+labels]; !ok {
			t.Errorf("%s: no _sum", key)
		}
		last := len(s.les) - 1
		if last < 0 || s.les[last] < 1e308 || s.counts[last] != count {
			t.Errorf("%s: the last bucket (le %v) holds %v, the count is %g", key, s.les, s.counts, count)
		}
	}
	return samples
}

func TestPrometheusText(t *testing.T) {
	t.Run("counters, gauges and histograms parse", func(t *testing.T) {
		m := newMetrics()
		for range 3 {
			m.request("/v1/completions", 200)
		}
		m.request("/v1/chat/completions", 400)
		for _, d := range []time.Duration{5 * time.Millisecond, 30 * time.Millisecond, 2 * time.Second, 2 * time.Minute} {
			m.firstToken("a", d)
			m.tokenGap("a", d/10)
		}
		m.generation("a", 100, 40, 20, time.Second, 2*time.Second, false, runtime.SpecStats{Passes: 4, Drafted: 12, Accepted: 9, Plain: 3})
		m.generation("a", 10, 0, 3, time.Millisecond, time.Millisecond, true, runtime.SpecStats{})
		m.loaded("a", false)
		m.embedding("a", 3, 30, time.Second)
		m.embedding("a", 1, 5, time.Second)
		var b strings.Builder
		m.prometheus(&b, map[string]gauge{"a": {Loaded: true, Slots: 4, SlotsBusy: 1, Queued: 2, MemoryBytes: 1 << 20}, "b": {}})
		s := checkPrometheus(t, b.String())
		for k, want := range map[string]float64{
			`akunu_requests_total{route="/v1/completions",status="200"}`:      3,
			`akunu_requests_total{route="/v1/chat/completions",status="400"}`: 1,
			`akunu_generations_total{model="a"}`:                              2,
			`akunu_prompt_tokens_total{model="a"}`:                            110,
			`akunu_prompt_tokens_cached_total{model="a"}`:                     40,
			`akunu_completion_tokens_total{model="a"}`:                        23,
			`akunu_cancelled_total{model="a"}`:                                1,
			`akunu_embedding_requests_total{model="a"}`:                       2,
			`akunu_embedding_inputs_total{model="a"}`:                         4,
			`akunu_embedding_tokens_total{model="a"}`:                         35,
			`akunu_embedding_seconds_total{model="a"}`:                        2,
			`akunu_spec_passes_total{model="a"}`:                              4,
			`akunu_spec_drafted_total{model="a"}`:                             12,
			`akunu_spec_accepted_total{model="a"}`:                            9,
			`akunu_spec_drafted_total{model="b"}`:                             0,
			`akunu_embedding_requests_total{model="b"}`:                       0,
			`akunu_model_loaded{model="a"}`:                                   1,
			`akunu_model_loaded{model="b"}`:                                   0,
			`akunu_queue_depth{model="a"}`:                                    2,
			`akunu_time_to_first_token_seconds_count{model="a"}`:              4,
			`akunu_time_to_first_token_seconds_bucket{model="a",le="0.01"}`:   1,
			`akunu_time_to_first_token_seconds_bucket{model="a",le="60"}`:     3,
			`akunu_time_to_first_token_seconds_bucket{model="a",le="+Inf"}`:   4,
			`akunu_token_gap_seconds_count{model="b"}`:                        0,
		} {
			if got, ok := s[k]; !ok || got != want {
				t.Errorf("%s = %v (present %v), want %v", k, got, ok, want)
			}
		}
		if t.Failed() {
			t.Logf("%s", b.String())
		}
	})
	t.Run("a live server's /metrics parse", func(t *testing.T) {
		ts := startServer(t, Config{})
		for range 3 {
			ts.generate(t, "stories260K")
		}
		ts.get(t, "/v1/nothing")
		resp, b := ts.get(t, "/metrics")
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		s := checkPrometheus(t, string(b))
		if got := s[`akunu_generations_total{model="stories260K"}`]; got != 3 {
			t.Errorf("generations %v, want 3", got)
		}
		if got := s[`akunu_requests_total{route="unknown",status="404"}`]; got != 1 {
			t.Errorf("unknown routes %v, want 1", got)
		}
	})
}
