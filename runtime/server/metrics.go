package server

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/akunu-dev/akunu/runtime"
)

// histogram counts observations (seconds) into cumulative buckets, as
// Prometheus does.
type histogram struct {
	bounds []float64
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      uint64
}

var (
	ttftBounds = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	gapBounds  = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
)

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v)
	h.counts[i]++
	h.sum += v
	h.n++
}

// quantile estimates the q-quantile from the buckets (the bucket's upper
// bound; the largest finite one for the +Inf bucket).
func (h *histogram) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	var c uint64
	for i, n := range h.counts {
		c += n
		if c >= rank {
			return h.bounds[min(i, len(h.bounds)-1)]
		}
	}
	return h.bounds[len(h.bounds)-1]
}

// modelStats are one model's counters.
type modelStats struct {
	Requests         uint64  `json:"requests"`
	PromptTokens     uint64  `json:"prompt_tokens"`
	CachedTokens     uint64  `json:"cached_tokens"`
	CompletionTokens uint64  `json:"completion_tokens"`
	PromptSeconds    float64 `json:"prompt_seconds"`
	DecodeSeconds    float64 `json:"decode_seconds"`
	Cancelled        uint64  `json:"cancelled"`
	Loads            uint64  `json:"loads"`
	Unloads          uint64  `json:"unloads"`
	// Embedding requests answered, their inputs and tokens, and the time
	// the model spent on them.
	EmbeddingRequests uint64  `json:"embedding_requests"`
	EmbeddingInputs   uint64  `json:"embedding_inputs"`
	EmbeddingTokens   uint64  `json:"embedding_tokens"`
	EmbeddingSeconds  float64 `json:"embedding_seconds"`
	// Speculative decoding (a model served with a Spec): verify passes,
	// drafts verified and drafts accepted.
	SpecPasses   uint64 `json:"spec_passes"`
	SpecDrafted  uint64 `json:"spec_drafted"`
	SpecAccepted uint64 `json:"spec_accepted"`

	ttft, gap *histogram
}

// metrics are the server's counters: requests by route and status, and
// per model its tokens, times and latency histograms.
type metrics struct {
	mu       sync.Mutex
	start    time.Time
	requests map[[2]string]uint64 // route, status
	models   map[string]*modelStats
}

func newMetrics() *metrics {
	return &metrics{start: time.Now(), requests: map[[2]string]uint64{}, models: map[string]*modelStats{}}
}

// model returns id's counters (under mu).
func (m *metrics) model(id string) *modelStats {
	s := m.models[id]
	if s == nil {
		s = &modelStats{ttft: newHistogram(ttftBounds), gap: newHistogram(gapBounds)}
		m.models[id] = s
	}
	return s
}

func (m *metrics) request(route string, status int) {
	m.mu.Lock()
	m.requests[[2]string{route, fmt.Sprint(status)}]++
	m.mu.Unlock()
}

// firstToken and tokenGap record latencies of model id.
func (m *metrics) firstToken(id string, d time.Duration) {
	m.mu.Lock()
	m.model(id).ttft.observe(d.Seconds())
	m.mu.Unlock()
}

func (m *metrics) tokenGap(id string, d time.Duration) {
	m.mu.Lock()
	m.model(id).gap.observe(d.Seconds())
	m.mu.Unlock()
}

// generation records a finished generation of model id, with its
// speculation's passes and drafts.
func (m *metrics) generation(id string, prompt, cached, completion int, promptTime, decodeTime time.Duration, cancelled bool, sp runtime.SpecStats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.model(id)
	s.Requests++
	s.PromptTokens += uint64(prompt)
	s.CachedTokens += uint64(cached)
	s.CompletionTokens += uint64(completion)
	s.PromptSeconds += promptTime.Seconds()
	s.DecodeSeconds += decodeTime.Seconds()
	if cancelled {
		s.Cancelled++
	}
	s.SpecPasses += uint64(sp.Passes)
	s.SpecDrafted += uint64(sp.Drafted)
	s.SpecAccepted += uint64(sp.Accepted)
}

// embedding records an answered embedding request of model id.
func (m *metrics) embedding(id string, inputs, tokens int, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.model(id)
	s.EmbeddingRequests++
	s.EmbeddingInputs += uint64(inputs)
	s.EmbeddingTokens += uint64(tokens)
	s.EmbeddingSeconds += took.Seconds()
}

func (m *metrics) loaded(id string, unload bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if unload {
		m.model(id).Unloads++
	} else {
		m.model(id).Loads++
	}
}

// gauge is a model's state right now, for the metrics.
type gauge struct {
	Loaded      bool  `json:"loaded"`
	Slots       int   `json:"slots"`
	SlotsBusy   int   `json:"slots_busy"`
	Queued      int   `json:"queued"`
	MemoryBytes int64 `json:"memory_bytes"`
}

// modelJSON is one model's part of /v1/metrics.
type modelJSON struct {
	ID string `json:"id"`
	gauge
	modelStats
	TTFTp50 float64 `json:"ttft_p50_seconds"`
	TTFTp99 float64 `json:"ttft_p99_seconds"`
	Gapp50  float64 `json:"token_gap_p50_seconds"`
	Gapp99  float64 `json:"token_gap_p99_seconds"`
}

// snapshot is /v1/metrics: totals and per model.
func (m *metrics) snapshot(gauges map[string]gauge) any {
	m.mu.Lock()
	defer m.mu.Unlock()
	type total struct {
		UptimeSeconds float64           `json:"uptime_seconds"`
		Requests      uint64            `json:"requests"`
		ByStatus      map[string]uint64 `json:"requests_by_status"`
		modelStats
		SlotsBusy int `json:"slots_busy"`
		Queued    int `json:"queued"`
	}
	out := struct {
		Total  total       `json:"total"`
		Models []modelJSON `json:"models"`
	}{Total: total{UptimeSeconds: time.Since(m.start).Seconds(), ByStatus: map[string]uint64{}}}
	for k, n := range m.requests {
		out.Total.Requests += n
		out.Total.ByStatus[k[1]] += n
	}
	for _, id := range m.ids(gauges) {
		s := m.model(id)
		g := gauges[id]
		out.Models = append(out.Models, modelJSON{ID: id, gauge: g, modelStats: *s,
			TTFTp50: s.ttft.quantile(.5), TTFTp99: s.ttft.quantile(.99), Gapp50: s.gap.quantile(.5), Gapp99: s.gap.quantile(.99)})
		t := &out.Total
		t.modelStats.Requests += s.Requests
		t.PromptTokens += s.PromptTokens
		t.CachedTokens += s.CachedTokens
		t.CompletionTokens += s.CompletionTokens
		t.PromptSeconds += s.PromptSeconds
		t.DecodeSeconds += s.DecodeSeconds
		t.Cancelled += s.Cancelled
		t.Loads += s.Loads
		t.Unloads += s.Unloads
		t.EmbeddingRequests += s.EmbeddingRequests
		t.EmbeddingInputs += s.EmbeddingInputs
		t.EmbeddingTokens += s.EmbeddingTokens
		t.EmbeddingSeconds += s.EmbeddingSeconds
		t.SpecPasses += s.SpecPasses
		t.SpecDrafted += s.SpecDrafted
		t.SpecAccepted += s.SpecAccepted
		t.SlotsBusy += g.SlotsBusy
		t.Queued += g.Queued
	}
	return out
}

// ids are the models of the counters and the gauges, sorted.
func (m *metrics) ids(gauges map[string]gauge) []string {
	var ids []string
	for id := range m.models {
		ids = append(ids, id)
	}
	for id := range gauges {
		if m.models[id] == nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// prometheus writes the metrics in Prometheus' text format.
func (m *metrics) prometheus(w io.Writer, gauges map[string]gauge) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	head := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	head("akunu_requests_total", "counter", "HTTP requests answered, by route and status.")
	keys := make([][2]string, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+" "+keys[i][1] < keys[j][0]+" "+keys[j][1] })
	for _, k := range keys {
		fmt.Fprintf(&b, "akunu_requests_total{route=%q,status=%q} %d\n", k[0], k[1], m.requests[k])
	}
	ids := m.ids(gauges)
	counter := func(name, help string, f func(*modelStats) float64) {
		head(name, "counter", help)
		for _, id := range ids {
			fmt.Fprintf(&b, "%s{model=%q} %g\n", name, id, f(m.model(id)))
		}
	}
	counter("akunu_generations_total", "Generations finished.", func(s *modelStats) float64 { return float64(s.Requests) })
	counter("akunu_prompt_tokens_total", "Prompt tokens of finished generations (cached ones included).", func(s *modelStats) float64 { return float64(s.PromptTokens) })
	counter("akunu_prompt_tokens_cached_total", "Prompt tokens a slot's cache already held.", func(s *modelStats) float64 { return float64(s.CachedTokens) })
	counter("akunu_completion_tokens_total", "Tokens generated.", func(s *modelStats) float64 { return float64(s.CompletionTokens) })
	counter("akunu_prompt_seconds_total", "Time spent on prompts (prefill and first token).", func(s *modelStats) float64 { return s.PromptSeconds })
	counter("akunu_decode_seconds_total", "Time spent generating after the first token.", func(s *modelStats) float64 { return s.DecodeSeconds })
	counter("akunu_cancelled_total", "Generations cancelled (the client went away).", func(s *modelStats) float64 { return float64(s.Cancelled) })
	counter("akunu_embedding_requests_total", "Embedding requests answered.", func(s *modelStats) float64 { return float64(s.EmbeddingRequests) })
	counter("akunu_embedding_inputs_total", "Inputs embedded.", func(s *modelStats) float64 { return float64(s.EmbeddingInputs) })
	counter("akunu_embedding_tokens_total", "Tokens of the inputs embedded.", func(s *modelStats) float64 { return float64(s.EmbeddingTokens) })
	counter("akunu_embedding_seconds_total", "Time the model spent embedding.", func(s *modelStats) float64 { return s.EmbeddingSeconds })
	counter("akunu_spec_passes_total", "Speculative verify passes.", func(s *modelStats) float64 { return float64(s.SpecPasses) })
	counter("akunu_spec_drafted_total", "Drafted tokens verified.", func(s *modelStats) float64 { return float64(s.SpecDrafted) })
	counter("akunu_spec_accepted_total", "Drafted tokens accepted.", func(s *modelStats) float64 { return float64(s.SpecAccepted) })
	gaugeOf := func(name, help string, f func(gauge) float64) {
		head(name, "gauge", help)
		for _, id := range ids {
			fmt.Fprintf(&b, "%s{model=%q} %g\n", name, id, f(gauges[id]))
		}
	}
	gaugeOf("akunu_model_loaded", "1 when the model is loaded.", func(g gauge) float64 {
		if g.Loaded {
			return 1
		}
		return 0
	})
	gaugeOf("akunu_queue_depth", "Requests waiting for a slot.", func(g gauge) float64 { return float64(g.Queued) })
	gaugeOf("akunu_slots_busy", "Slots generating.", func(g gauge) float64 { return float64(g.SlotsBusy) })
	gaugeOf("akunu_slots", "Slots of the loaded model.", func(g gauge) float64 { return float64(g.Slots) })
	gaugeOf("akunu_memory_bytes", "Bytes the loaded model holds.", func(g gauge) float64 { return float64(g.MemoryBytes) })
	hist := func(name, help string, f func(*modelStats) *histogram) {
		head(name, "histogram", help)
		for _, id := range ids {
			h := f(m.model(id))
			var c uint64
			for i, le := range h.bounds {
				c += h.counts[i]
				fmt.Fprintf(&b, "%s_bucket{model=%q,le=\"%g\"} %d\n", name, id, le, c)
			}
			fmt.Fprintf(&b, "%s_bucket{model=%q,le=\"+Inf\"} %d\n", name, id, h.n)
			fmt.Fprintf(&b, "%s_sum{model=%q} %g\n%s_count{model=%q} %d\n", name, id, h.sum, name, id, h.n)
		}
	}
	hist("akunu_time_to_first_token_seconds", "From a request's arrival to its first generated token.", func(s *modelStats) *histogram { return s.ttft })
	hist("akunu_token_gap_seconds", "Between consecutive generated tokens of a request.", func(s *modelStats) *histogram { return s.gap })
	io.WriteString(w, b.String())
}
