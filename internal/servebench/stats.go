package main

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// percentile is the p-th percentile (0 ≤ p ≤ 100) of xs, interpolated
// linearly between the two nearest ranks (Hyndman and Fan's type 7, numpy's
// default), so p50 of an even count is the mean of the middle two. NaN for
// no samples. xs is not modified.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	h := (p / 100) * float64(len(s)-1)
	lo := int(math.Floor(h))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	if lo < 0 {
		return s[0]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

func median(xs []float64) float64 { return percentile(xs, 50) }

// spread is a median and the range it sits in.
type spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{math.NaN(), math.NaN(), math.NaN()}
	}
	return spread{median(xs), slices.Min(xs), slices.Max(xs)}
}

// tokenGaps turns a stream's content chunks into its n-1 inter-token gaps
// (milliseconds), for a stream of n tokens whose chunks arrived at the
// offsets at (milliseconds, ascending). It also returns how many tokens
// came in a chunk behind another token (n - len(at), when positive: exact,
// unlike which chunks they came in).
//
// A chunk is not a token: the server sends whatever text it has, so one
// chunk carries several tokens when its handler fell behind the engine's
// steps (on a busy CPU), or when a token's text waited for the next one (a
// UTF-8 character split across tokens). The stream says only how many
// tokens there were (the final chunk's timings.predicted_n), so the count
// is spread here: the first chunk is taken to carry the first token, every
// later chunk at least one, and each token left over goes to the chunk
// whose gap, split one token more, comes closest (in ratio) to the
// stream's step, its median chunk gap. Such a chunk waited about k steps
// for its k tokens, so a gap of two steps takes a second token before a
// stall does: a gap of fifty steps is the server doing something else (the
// prefill of another request), during which this stream got one token,
// and splitting it would hide the stall. A chunk's gap is then split
// evenly among its tokens. The gaps sum back to the time from the first
// chunk to the last, so their mean is exact whatever the split; only the
// percentiles depend on it.
//
// More chunks than tokens (text flushed without a token of its own) merge
// the chunks behind the smallest gaps into their predecessors.
func tokenGaps(at []float64, n int) (gaps []float64, shared int) {
	switch {
	case n < 2 || len(at) == 0:
		return nil, 0
	case len(at) == 1:
		return nil, n - 1 // every token in one chunk: no gap seen
	}
	shared = max(0, n-len(at))
	g := make([]float64, len(at)-1) // g[i]: the gap before chunk i+1
	for i := range g {
		g[i] = at[i+1] - at[i]
	}
	if len(at) > n {
		// A merged chunk's gap moves to the next chunk's (which then
		// measures from the token before), or is dropped if it was the
		// last.
		order := make([]int, len(g))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(g[a], g[b]) })
		drop := make([]bool, len(g))
		for _, i := range order[:len(at)-n] {
			drop[i] = true
		}
		kept := make([]float64, 0, n-1)
		carry := 0.0
		for i, v := range g {
			if drop[i] {
				carry += v
				continue
			}
			kept = append(kept, v+carry)
			carry = 0
		}
		g = kept
	}
	step := median(g)
	k := make([]int, len(g))
	for i := range k {
		k[i] = 1
	}
	// miss is how far a gap split in j parts is from a step, as a ratio;
	// without a step to go by (chunks bunched), the longest part wins.
	miss := func(v float64, j int) float64 {
		if step <= 0 {
			return -v / float64(j)
		}
		return math.Abs(math.Log(v / float64(j) / step))
	}
	for extra := n - 1 - len(g); extra > 0; extra-- {
		best := -1
		for i, v := range g {
			if v <= 0 {
				continue
			}
			if best < 0 || miss(v, k[i]+1) < miss(g[best], k[best]+1) {
				best = i
			}
		}
		if best < 0 {
			best = len(g) - 1 // every gap is zero
		}
		k[best]++
	}
	gaps = make([]float64, 0, n-1)
	for i, v := range g {
		for range k[i] {
			gaps = append(gaps, v/float64(k[i]))
		}
	}
	return gaps, shared
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// round is one rep at one concurrency: its requests and the numbers drawn
// from them.
type round struct {
	Streams  int        `json:"streams"`
	Rep      int        `json:"rep"`
	Requests []*request `json:"requests"`
	// WallMS: from the start signal to the last [DONE].
	WallMS float64 `json:"wall_ms"`
	// SpanMS: from the first first token to the last last token.
	SpanMS float64 `json:"span_ms"`
	Tokens int     `json:"tokens"`
	// Aggregate is the decode throughput, (Tokens-1)/Span: a span between
	// two token instants holds one interval fewer than the instants, and
	// counting all of them would flatter one stream by n/(n-1).
	Aggregate float64 `json:"aggregate_tok_s"`
	// EndToEnd is Tokens/Wall: prefill, queueing and TTFT included.
	EndToEnd float64 `json:"end_to_end_tok_s"`
}

// summarize fills r's totals from its requests, whose offsets are
// milliseconds from the round's start.
func (r *round) summarize() {
	first, last, done := math.Inf(1), math.Inf(-1), 0.0
	r.Tokens = 0
	for _, q := range r.Requests {
		r.Tokens += q.Predicted
		if len(q.ChunkMS) > 0 {
			first = min(first, q.SentMS+q.ChunkMS[0])
			last = max(last, q.SentMS+q.ChunkMS[len(q.ChunkMS)-1])
		}
		done = max(done, q.SentMS+q.DoneMS)
	}
	r.WallMS = done
	if last > first {
		r.SpanMS = last - first
		r.Aggregate = float64(r.Tokens-1) / (r.SpanMS / 1000)
	}
	if done > 0 {
		r.EndToEnd = float64(r.Tokens) / (done / 1000)
	}
}

// level is one concurrency over all its reps.
type level struct {
	Streams   int     `json:"streams"`
	Aggregate spread  `json:"aggregate_tok_s"`
	EndToEnd  spread  `json:"end_to_end_tok_s"`
	PerStream float64 `json:"per_stream_tok_s"` // the median request's (n-1)/(last chunk - first chunk)
	Scaling   float64 `json:"scaling"`          // median Aggregate over one stream's; NaN without a one-stream level
	TTFT50    float64 `json:"ttft_p50_ms"`
	TTFT99    float64 `json:"ttft_p99_ms"`
	Gap50     float64 `json:"gap_p50_ms"`
	Gap99     float64 `json:"gap_p99_ms"`
	GapMax    float64 `json:"gap_max_ms"` // a stall p99 can miss: one gap in a few hundred
	Tokens    int     `json:"tokens"`
	// SharedTokens is the generated tokens that came in a chunk behind
	// another (their gaps are spread, see tokenGaps); Cached the prompt
	// tokens the server did not feed (a shared prefix).
	SharedTokens int      `json:"shared_chunk_tokens"`
	Cached       int      `json:"cached_prompt_tokens"`
	Rounds       []*round `json:"rounds"`
}

// summarizeLevel pools rounds of one concurrency.
func summarizeLevel(rs []*round) *level {
	l := &level{Streams: rs[0].Streams, Rounds: rs, Scaling: math.NaN()}
	var agg, e2e, per, ttft, gaps []float64
	for _, r := range rs {
		agg = append(agg, r.Aggregate)
		e2e = append(e2e, r.EndToEnd)
		for _, q := range r.Requests {
			l.Tokens += q.Predicted
			l.SharedTokens += q.SharedTokens
			l.Cached += q.PromptTokens - q.PromptN
			if len(q.ChunkMS) > 0 {
				ttft = append(ttft, q.ChunkMS[0])
			}
			if c := q.ChunkMS; len(c) > 1 && c[len(c)-1] > c[0] {
				per = append(per, float64(q.Predicted-1)/((c[len(c)-1]-c[0])/1000))
			}
			gaps = append(gaps, q.GapsMS...)
		}
	}
	l.Aggregate, l.EndToEnd, l.PerStream = spreadOf(agg), spreadOf(e2e), median(per)
	l.TTFT50, l.TTFT99 = percentile(ttft, 50), percentile(ttft, 99)
	l.Gap50, l.Gap99, l.GapMax = percentile(gaps, 50), percentile(gaps, 99), percentile(gaps, 100)
	return l
}

// scale sets each level's Scaling against the one-stream level, if any.
func scale(ls []*level) {
	for _, one := range ls {
		if one.Streams != 1 {
			continue
		}
		for _, l := range ls {
			l.Scaling = l.Aggregate.Median / one.Aggregate.Median
		}
	}
}
