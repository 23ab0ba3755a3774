package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	for _, c := range []struct {
		name string
		xs   []float64
		p    float64
		want float64
	}{
		{"the median of an odd count is the middle one", []float64{3, 1, 2}, 50, 2},
		{"the median of an even count is the mean of the middle two", []float64{4, 1, 3, 2}, 50, 2.5},
		{"p0 is the least", []float64{5, 7, 6}, 0, 5},
		{"p100 is the greatest", []float64{5, 7, 6}, 100, 7},
		{"p99 interpolates between the two greatest", []float64{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 99, 99},
		{"one sample is every percentile", []float64{42}, 99, 42},
	} {
		t.Run(c.name, func(t *testing.T) {
			orig := slices.Clone(c.xs)
			if got := percentile(c.xs, c.p); math.Abs(got-c.want) > 1e-9 {
				t.Errorf("percentile(%v, %v) = %v, want %v", orig, c.p, got, c.want)
			}
			if !slices.Equal(c.xs, orig) {
				t.Errorf("percentile sorted its input: %v", c.xs)
			}
		})
	}
	t.Run("no samples give NaN", func(t *testing.T) {
		if got := percentile(nil, 50); !math.IsNaN(got) {
			t.Errorf("percentile(nil) = %v", got)
		}
	})
}

func TestTokenGaps(t *testing.T) {
	for _, c := range []struct {
		name      string
		at        []float64
		n         int
		want      []float64
		wantMulti int
	}{
		{"one chunk a token gives the chunks' gaps", []float64{100, 110, 125, 135}, 4, []float64{10, 15, 10}, 0},
		{"a chunk of two tokens after a double gap is split in two", []float64{100, 110, 130, 140}, 5, []float64{10, 10, 10, 10}, 1},
		{"a double gap takes the extra token before a stall does", []float64{0, 10, 610, 620, 640, 650}, 7, []float64{10, 600, 10, 10, 10, 10}, 1},
		{"left-over tokens go to the gaps nearest a multiple of the step", []float64{0, 10, 20, 50, 60}, 7, []float64{10, 10, 10, 10, 10, 10}, 2},
		{"a single chunk of every token shows no gap", []float64{50}, 3, nil, 2},
		{"one token has no gap", []float64{50}, 1, nil, 0},
		{"a chunk without a token merges into its predecessor", []float64{0, 10, 11, 21}, 3, []float64{10, 11}, 0},
		{"a last chunk without a token is dropped", []float64{0, 10, 20, 21}, 3, []float64{10, 10}, 0},
		{"chunks arriving together still share out every token", []float64{5, 5, 5}, 4, []float64{0, 0, 0}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, multi := tokenGaps(c.at, c.n)
			if !slices.Equal(got, c.want) || multi != c.wantMulti {
				t.Errorf("tokenGaps(%v, %d) = %v, %d; want %v, %d", c.at, c.n, got, multi, c.want, c.wantMulti)
			}
		})
	}
}

// A stream as akunu serve writes it: an empty first write (the headers),
// content chunks, a chunk that carries no text, the final chunk with
// timings, then [DONE]; with a comment and CRLF line ends thrown in.
const stream = "data: {\"choices\":[{\"text\":\"Hel\",\"finish_reason\":null}]}\n\n" +
	": keep-alive\n\n" +
	"data: {\"choices\":[{\"text\":\"lo\",\"finish_reason\":null}]}\r\n\r\n" +
	"data: {\"choices\":[{\"text\":\"\",\"finish_reason\":null}]}\n\n" +
	"data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}],\"timings\":{\"prompt_n\":8,\"prompt_ms\":12.5,\"predicted_n\":3,\"predicted_ms\":20}}\n\n" +
	"data: [DONE]\n\n"

// clock returns t0, t0+1ms, t0+2ms, ... one step a call.
func clock(t0 time.Time) func() time.Time {
	i := 0
	return func() time.Time { i++; return t0.Add(time.Duration(i) * time.Millisecond) }
}

func TestReadCompletion(t *testing.T) {
	t0 := time.Unix(0, 0)
	t.Run("a whole stream gives its text chunks, timings and end", func(t *testing.T) {
		var q request
		if err := readCompletion(strings.NewReader(stream), clock(t0), t0, &q); err != nil {
			t.Fatal(err)
		}
		// Events are stamped 1, 2, 3, 4, 5 ms: the comment is no event.
		if !slices.Equal(q.ChunkMS, []float64{1, 2}) || !slices.Equal(q.ChunkBytes, []int{3, 2}) {
			t.Errorf("chunks at %v of %v bytes, want [1 2] of [3 2]", q.ChunkMS, q.ChunkBytes)
		}
		if q.DoneMS != 5 || q.Finish != "length" || q.Predicted != 3 || q.PromptN != 8 || q.PromptMSrv != 12.5 || q.PredictMSrv != 20 {
			t.Errorf("got %+v", q)
		}
	})
	t.Run("a stream cut before [DONE] is an error", func(t *testing.T) {
		cut := stream[:strings.Index(stream, "data: [DONE]")]
		var q request
		err := readCompletion(strings.NewReader(cut), clock(t0), t0, &q)
		if err == nil || !strings.Contains(err.Error(), "without [DONE]") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("an error event ends the stream with its message", func(t *testing.T) {
		var q request
		s := "data: {\"error\":{\"message\":\"the model is not loaded\",\"type\":\"server_error\"}}\n\n"
		err := readCompletion(strings.NewReader(s), clock(t0), t0, &q)
		if err == nil || !strings.Contains(err.Error(), "the model is not loaded") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("data lines of one event are joined by newlines", func(t *testing.T) {
		r := newSSEReader(strings.NewReader("data: a\ndata:b\n\n"), clock(t0))
		d, _, err := r.next()
		if err != nil || string(d) != "a\nb" {
			t.Errorf("next() = %q, %v", d, err)
		}
	})
}

func TestPromptFor(t *testing.T) {
	t.Run("prompts differ from their first token and repeat across runs", func(t *testing.T) {
		seen := map[int32]bool{}
		for k := range 200 {
			p := promptFor(k, 16, 151936)
			if len(p) != 16 || seen[p[0]] {
				t.Fatalf("prompt %d: %v (first token seen before: %v)", k, p, seen[p[0]])
			}
			seen[p[0]] = true
			if !slices.Equal(p, promptFor(k, 16, 151936)) {
				t.Fatalf("prompt %d differs between calls", k)
			}
		}
	})
	t.Run("a small vocabulary still gives ids inside it", func(t *testing.T) {
		for k := range 50 {
			for _, id := range promptFor(k, 8, 32) {
				if id < 0 || id >= 32 {
					t.Fatalf("prompt %d: id %d outside a vocabulary of 32", k, id)
				}
			}
		}
	})
}
