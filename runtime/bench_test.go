package runtime

import (
	"fmt"
	"os"
	goruntime "runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/cpu"
	"github.com/akunu-dev/akunu/runtime/device"
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

// The benchmarks below read their models from the environment:
// AKUNU_BENCH_PLAN (a plan, its model beside it; else stories260K compiled
// here), AKUNU_BENCH_DRAFT (a draft model's plan, for the speculative
// ones), AKUNU_BENCH_THREADS (else 2) and AKUNU_BENCH_POS (the positions
// a sequence holds before the timed rows; else 1).

// benchEnv is an integer variable of the environment, def where unset.
func benchEnv(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		b.Fatalf("%s %q: %v", name, v, err)
	}
	return n
}

// benchModel loads $AKUNU_BENCH_PLAN on a CPU backend of
// $AKUNU_BENCH_THREADS threads, or stories260K.
func benchModel(b *testing.B) *Model {
	threads := benchEnv(b, "AKUNU_BENCH_THREADS", 2)
	plan := os.Getenv("AKUNU_BENCH_PLAN")
	if plan == "" {
		model := stories(b)
		return load(b, compile(b, model, "cpu-avx2:2"), model, threads)
	}
	m, err := Load(plan, Options{Threads: threads})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m
}

// benchPair loads $AKUNU_BENCH_PLAN and its draft $AKUNU_BENCH_DRAFT on
// one backend, or skips.
func benchPair(b *testing.B) (target, draft *Model) {
	if os.Getenv("AKUNU_BENCH_PLAN") == "" || os.Getenv("AKUNU_BENCH_DRAFT") == "" {
		b.Skip("AKUNU_BENCH_PLAN and AKUNU_BENCH_DRAFT name a target's and its draft's plans")
	}
	target = benchModel(b)
	draft, err := Load(os.Getenv("AKUNU_BENCH_DRAFT"), Options{Backend: target.Backend()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { draft.Close() })
	return target, draft
}

// benchPos is $AKUNU_BENCH_POS, at least 1 and room positions short of
// m's context.
func benchPos(b *testing.B, m *Model, room int) int {
	at := benchEnv(b, "AKUNU_BENCH_POS", 1)
	if at < 1 || at+room > m.Ctx() {
		b.Fatalf("AKUNU_BENCH_POS %d: a position from 1 to %d", at, m.Ctx()-room)
	}
	return at
}

// benchPrefill gives sequence 0 of m its first at positions.
func benchPrefill(b *testing.B, m *Model, at int) {
	var batch Batch
	for i := range at {
		batch.Add(int32(1+i%50), int32(i), 0, i == at-1)
	}
	if err := m.Forward(bg, &batch); err != nil {
		b.Fatal(err)
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
// step's forward: Forward over 1, 2, 4 and 8 rows of one sequence after
// $AKUNU_BENCH_POS positions (1: a one-token prompt), every row out (what
// a pass of k drafts asks), the sequence rewound before each. ns/op over
// the 1-row case is the pass's cost v in plain steps (docs/runtime.md,
// "Speculative decoding").
func BenchmarkForwardRows(b *testing.B) {
	m := benchModel(b)
	at := benchPos(b, m, 8)
	benchPrefill(b, m, at)
	var batch Batch
	for _, rows := range []int{1, 2, 4, 8} {
		if rows > m.MaxOutputs() {
			break
		}
		b.Run(fmt.Sprintf("rows%d", rows), func(b *testing.B) {
			for b.Loop() {
				m.Rewind(0, at)
				batch.Reset()
				for r := range rows {
					batch.Add(int32(100+r), int32(at+r), 0, true)
				}
				if err := m.Forward(bg, &batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeCommands times a decode step command by command on the
// CPU backend (cpu.Backend.EncodeTimed) at positions $AKUNU_BENCH_POS and
// the 63 after it, and logs where it goes, by kernel, and the LM head's
// share: ns/op is a step. AKUNU_BENCH_VOCAB n restricts the LM head to the
// ids below n, as a draft's shortlist does; AKUNU_BENCH_ROWS r > 1 times
// the batch program of r rows of one sequence at $AKUNU_BENCH_POS instead,
// every row out (a verify pass of r − 1 drafts).
func BenchmarkDecodeCommands(b *testing.B) {
	m := benchModel(b)
	be, ok := m.be.(*cpu.Backend)
	if !ok {
		b.Skip("not a CPU backend")
	}
	at := benchPos(b, m, 64) // the steps' positions: at, at+1, …, at+63
	rows := benchEnv(b, "AKUNU_BENCH_ROWS", 1)
	if rows < 1 || rows > m.MaxOutputs() {
		b.Fatalf("AKUNU_BENCH_ROWS %d: from 1 to %d", rows, m.MaxOutputs())
	}
	benchPrefill(b, m, at)
	prog, step := m.decode, plans.Step{Batch: 1}
	if rows > 1 { // a Forward of the rows leaves them in the program's inputs
		var batch Batch
		for r := range rows {
			batch.Add(int32(100+r), int32(at+r), 0, true)
		}
		if err := m.Forward(bg, &batch); err != nil {
			b.Fatal(err)
		}
		prog, step = m.bucket(rows), plans.Step{Batch: uint32(rows), Out: uint32(rows)}
	}
	if n := benchEnv(b, "AKUNU_BENCH_VOCAB", 0); n > 0 {
		if _, err := m.setLogitRows([]device.Span{{Lo: 0, Hi: int32(n)}}, nil, 0); err != nil {
			b.Fatal(err)
		}
	}
	execs := be.Commands(prog.h)
	ns := make([]int64, len(execs))
	steps := 0
	for b.Loop() {
		if rows == 1 {
			step.Pos = uint32(at + steps%64)
		}
		be.EncodeTimed(prog.h, step, ns)
		steps++
	}
	if err := be.Wait(); err != nil {
		b.Fatal(err)
	}
	type kernelTime struct {
		name string
		n    int
		ns   int64
	}
	var byKernel []kernelTime
	index := map[string]int{}
	var total int64
	for i, e := range execs {
		name := e.Kernel.Name
		k, ok := index[name]
		if !ok {
			k = len(byKernel)
			index[name] = k
			byKernel = append(byKernel, kernelTime{name: name})
		}
		byKernel[k].n++
		byKernel[k].ns += ns[i]
		total += ns[i]
	}
	for i, e := range execs {
		if e.Label == "logits" {
			b.Logf("the LM head (%s): %.1f µs a step", e.Kernel.Name, float64(ns[i])/float64(steps)/1e3)
		}
	}
	slices.SortFunc(byKernel, func(a, b kernelTime) int { return int(b.ns - a.ns) })
	b.Logf("%d steps, %d commands a step, %.1f µs a step timed", steps, len(execs), float64(total)/float64(steps)/1e3)
	for _, r := range byKernel {
		b.Logf("%-40s %4d a step %9.1f µs a step %5.1f%%", r.name, r.n, float64(r.ns)/float64(steps)/1e3, 100*float64(r.ns)/float64(total))
	}
}

// BenchmarkSpecPass times a speculative pass's two parts as the loop
// runs them, from outside it: a Draft of 7 after a fully accepted pass (a
// catch-up of two rows, then a chain), then the target's Forward of the 8
// rows, and reports each (draft-ms, verify-ms; the sequence grows by 8 a
// pass and starts again near the context's end). "alone" drafts without
// the verify between; "vocab32768" has the draft's LM head over the ids
// below 32768 (SetShortlist). It showed the loop's drafting to cost what
// a Draft does alone (docs/runtime.md, session 30).
func BenchmarkSpecPass(b *testing.B) {
	target, draft := benchPair(b)
	prompt := target.Tokenizer.Tokenize("Once upon a time", true, false)
	for _, vocab := range []int{0, 32768} {
		for _, verify := range []bool{false, true} {
			name := fmt.Sprintf("alone/vocab%d", vocab)
			if verify {
				name = fmt.Sprintf("verify/vocab%d", vocab)
			}
			b.Run(name, func(b *testing.B) { benchPass(b, target, draft, prompt, vocab, verify) })
		}
	}
}

// benchPass is a BenchmarkSpecPass case.
func benchPass(b *testing.B, target, draft *Model, prompt []int32, vocab int, verify bool) {
	d, err := NewModelDrafter(target, draft, 8)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	d.SetShortlist(vocab)
	hist := slices.Clone(prompt)
	var out []int32
	var batch Batch
	var tDraft, tVerify time.Duration
	target.Rewind(0, 0) // the target holds every token of hist but the last
	for i, t := range hist[:len(hist)-1] {
		batch.Add(t, int32(i), 0, i == len(hist)-2)
	}
	if err := target.Forward(bg, &batch); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if len(hist)+16 > draft.Ctx() {
			hist = hist[:len(prompt)]
		}
		t0 := time.Now()
		if out, err = d.Draft(bg, hist, 7, sampling.Params{}, out[:0]); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		tDraft += t1.Sub(t0)
		if verify {
			target.Rewind(0, len(hist)-1)
			batch.Reset()
			batch.Add(hist[len(hist)-1], int32(len(hist)-1), 0, true)
			for i, t := range out {
				batch.Add(t, int32(len(hist)+i), 0, true)
			}
			if err := target.Forward(bg, &batch); err != nil {
				b.Fatal(err)
			}
			tVerify += time.Since(t1)
		}
		hist = append(hist, out...)
		hist = append(hist, out[len(out)-1]) // the target's own token after them
	}
	if vocab > 0 && !d.Shortlisted() {
		b.Fatal("the shortlist did not take")
	}
	b.ReportMetric(float64(tDraft.Microseconds())/1e3/float64(b.N), "draft-ms")
	b.ReportMetric(float64(tVerify.Microseconds())/1e3/float64(b.N), "verify-ms")
}
