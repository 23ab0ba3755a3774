package runtime

import (
	"fmt"
	"slices"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/synth"
)

// TestDecodeIsTheSameOnAnyThreads holds a decode step's logits to the
// same bits whatever the CPU pool's threads: every kernel splits its work
// without changing what a row or a head sums in what order (the decode
// attention among them, which from a few dozen cached positions spreads
// a kv head's keys and then its value columns over the threads where the
// CPU has AVX-512; its pieces alone: TestAttnSplitPiecesMatchTheWholeRows).
func TestDecodeIsTheSameOnAnyThreads(t *testing.T) {
	// Heads of 64, and of 128 as the Qwen3-0.6B shape's (whose one-item
	// values run in 128-column blocks, a split's parts in 16-column ones).
	t.Run("hd64", func(t *testing.T) { sameOnAnyThreads(t, synthModel(t, "qwen3", dtype.Q8_0)) })
	t.Run("hd128", func(t *testing.T) {
		sameOnAnyThreads(t, synthWith(t, "qwen3.hd128", synth.Options{Arch: "qwen3", Dim: 256, Layers: 2, Heads: 4, KVHeads: 2,
			HeadDim: 128, FFN: 512, CtxTrain: 256, DType: dtype.Q8_0, Seed: 7}))
	})
}

// sameOnAnyThreads decodes four steps after a 150-token prompt on 1, 4
// and 8 threads (a split of 2 and of 4 parts for 2 kv heads) and holds
// their logits to one thread's.
func sameOnAnyThreads(t *testing.T, model string) {
	plan := compile(t, model, "cpu-avx512:2")
	var want [][]float32
	for _, threads := range []int{1, 4, 8} {
		m := load(t, plan, model, threads)
		var b Batch
		for i := range 150 {
			b.Add(int32(3+i*7%200), int32(i), 0, i == 149)
		}
		if err := m.Forward(bg, &b); err != nil {
			t.Fatal(err)
		}
		var got [][]float32
		for i := range 4 {
			b.Reset()
			b.Add(int32(11+i), int32(150+i), 0, true)
			b.ReadLogits = true
			if err := m.Forward(bg, &b); err != nil {
				t.Fatal(err)
			}
			got = append(got, slices.Clone(m.OutputLogits(0)))
		}
		if want == nil {
			want = got
			continue
		}
		for i := range got {
			if !slices.Equal(got[i], want[i]) {
				t.Errorf("%d threads, step %d: logits differ from one thread's (%s)", threads, i, firstDiff(got[i], want[i]))
			}
		}
	}
}

func firstDiff(a, b []float32) string {
	for i := range a {
		if a[i] != b[i] {
			return fmt.Sprintf("logit %d: %v against %v", i, a[i], b[i])
		}
	}
	return "none"
}
