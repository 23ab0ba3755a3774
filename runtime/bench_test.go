package runtime

import (
	"fmt"
	"os"
	goruntime "runtime"
	"slices"
	"testing"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/runtime/sampling"
)

// BenchmarkDecodeStories260K is chain decode of stories260K on the CPU
// backend: ns/op is per token, and allocs/op must be 0 (nothing allocates
// on the per-token path). Timings are reported, never asserted; make bench
// puts them side by side with llama.cpp's.
func BenchmarkDecodeStories260K(b *testing.B) {
	m := storiesModel(b)
	s := sess(b, m)
	if _, err := s.Generate(bg, m.Tokenizer.Tokenize("Once upon a time", true, false), GenerateOptions{MaxTokens: 1}); err != nil {
		b.Fatal(err)
	}
	n := len(s.steps)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += n {
		s.chain(m.decode, min(n, b.N-done))
	}
}

// A decode's bytes at a context count the cache positions it reads, not
// the plan's whole cache (the roofline akunu bench prints): at Ctx they are
// the plan's count, with nothing cached the plan's count less every decode
// attention command's read, and in between in proportion.
func TestDecodeBytesCountTheCachedPositionsRead(t *testing.T) {
	st := stories(t)
	m := load(t, compile(t, st, "cpu-avx2:2"), st, 1)
	var attn uint64
	for _, c := range m.decode.p.Commands {
		if k, ok := kernels.Lookup(m.Plan.Pipelines[c.Pipeline].Kernel); ok && k.Op == kernels.OpAttentionDecode { // independently of ReadsWholeCache
			attn += c.BytesRead
		}
	}
	whole, ctx := m.DecodeBytes(), m.Ctx()
	if attn == 0 || attn >= whole {
		t.Fatalf("the decode's attention commands read %d of %d bytes", attn, whole)
	}
	if got := m.DecodeBytesAt(ctx); got != whole {
		t.Errorf("at the whole context %d: %d bytes, the plan's count %d", ctx, got, whole)
	}
	if got := m.DecodeBytesAt(0); got != whole-attn {
		t.Errorf("nothing cached: %d bytes, want %d (the plan's %d less the attention's %d)", got, whole-attn, whole, attn)
	}
	half := m.DecodeBytesAt(ctx / 2)
	if want := whole - attn/2; half < want-uint64(m.Plan.Model.HParams.Layers) || half > want+uint64(m.Plan.Model.HParams.Layers) {
		t.Errorf("half the context cached: %d bytes, want about %d", half, want)
	}
	if got := m.DecodeBytesAt(10 * ctx); got != whole {
		t.Errorf("past the context: %d bytes, want the whole cache's %d", got, whole)
	}
}

// BenchmarkReadBandwidth is the read probe akunu bench divides a CPU
// decode's bytes by, at 1 and 2 threads and at half and all of the cores:
// a decode at one or two threads is held to one or two cores' rate, which
// is not the machine's.
func BenchmarkReadBandwidth(b *testing.B) {
	n := goruntime.NumCPU()
	ts := []int{1, min(2, n), max(n/2, 1), n}
	slices.Sort(ts)
	for _, t := range slices.Compact(ts) {
		b.Run(fmt.Sprintf("t%d", t), func(b *testing.B) {
			var best float64
			for b.Loop() {
				best = max(best, ReadBandwidth(t))
			}
			b.ReportMetric(best/1e9, "GB/s")
		})
	}
}

// BenchmarkForwardRows times a speculative verify pass against a decode
// step's forward: Forward over 1, 2, 4 and 8 rows of one sequence after a
// one-token prompt, every row out (what a pass of k drafts asks), the
// sequence rewound before each. ns/op over the 1-row case is the pass's
// cost v in plain steps (docs/runtime.md, "Speculative decoding"). The
// plan is $AKUNU_BENCH_PLAN (its model beside it; threads
// $AKUNU_BENCH_THREADS, else 2), else stories260K compiled here.
func BenchmarkForwardRows(b *testing.B) {
	var m *Model
	threads := 2
	if v := os.Getenv("AKUNU_BENCH_THREADS"); v != "" {
		if _, err := fmt.Sscan(v, &threads); err != nil {
			b.Fatalf("AKUNU_BENCH_THREADS %q: %v", v, err)
		}
	}
	if plan := os.Getenv("AKUNU_BENCH_PLAN"); plan != "" {
		var err error
		if m, err = Load(plan, Options{Threads: threads}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Close() })
	} else {
		model := stories(b)
		m = load(b, compile(b, model, "cpu-avx2:2"), model, threads)
	}
	var batch Batch
	batch.Add(1, 0, 0, true)
	if err := m.Forward(bg, &batch); err != nil {
		b.Fatal(err)
	}
	for _, rows := range []int{1, 2, 4, 8} {
		if rows > m.MaxOutputs() {
			break
		}
		b.Run(fmt.Sprintf("rows%d", rows), func(b *testing.B) {
			for b.Loop() {
				m.Rewind(0, 1)
				batch.Reset()
				for r := range rows {
					batch.Add(int32(100+r), int32(1+r), 0, true)
				}
				if err := m.Forward(bg, &batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDraftShortlist times a draft model's Draft of 7 tokens after a
// pass that accepted everything (a catch-up of two rows, then a chain),
// with its LM head over every token and over a shortlist of the ids below
// 32768 (SetShortlist): ns/op is a draft of 7. AKUNU_BENCH_PLAN and AKUNU_BENCH_DRAFT
// name the target's and the draft's plans (the Q8_0 and Q4_0 Qwen3-0.6B
// shapes of scripts/bench-spec.sh), AKUNU_BENCH_THREADS the threads;
// without them it skips (the small test models have no vocabulary to cut).
func BenchmarkDraftShortlist(b *testing.B) {
	tp, dp := os.Getenv("AKUNU_BENCH_PLAN"), os.Getenv("AKUNU_BENCH_DRAFT")
	if tp == "" || dp == "" {
		b.Skip("AKUNU_BENCH_PLAN and AKUNU_BENCH_DRAFT name a target's and its draft's plans")
	}
	threads := 2
	if v := os.Getenv("AKUNU_BENCH_THREADS"); v != "" {
		if _, err := fmt.Sscan(v, &threads); err != nil {
			b.Fatalf("AKUNU_BENCH_THREADS %q: %v", v, err)
		}
	}
	target, err := Load(tp, Options{Threads: threads})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { target.Close() })
	draft, err := Load(dp, Options{Backend: target.Backend()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { draft.Close() })
	prompt := target.Tokenizer.Tokenize("Once upon a time", true, false)
	for _, n := range []int{0, 32768} {
		b.Run(fmt.Sprintf("vocab%d", n), func(b *testing.B) {
			d, err := NewModelDrafter(target, draft, 8)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			d.SetShortlist(n)
			hist := slices.Clone(prompt)
			var out []int32
			for b.Loop() {
				if len(hist)+16 > draft.Ctx() {
					hist = hist[:len(prompt)]
				}
				if out, err = d.Draft(bg, hist, 7, sampling.Params{}, out[:0]); err != nil {
					b.Fatal(err)
				}
				hist = append(hist, out...)
				hist = append(hist, out[len(out)-1]) // the target's own token after them
			}
			if n > 0 && !d.Shortlisted() {
				b.Fatal("the shortlist did not take")
			}
		})
	}
}
