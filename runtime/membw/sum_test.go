package membw

import (
	"runtime"
	"testing"

	"github.com/akunu-dev/akunu/internal/proof"
)

// TestSumReadsEveryWord: the vector steps and the tail together add every
// word once, or the probe times less than the buffer it divides by. Lengths
// around the 16-word step, and words whose bits show a word counted twice
// or missed.
func TestSumReadsEveryWord(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 15, 16, 17, 31, 32, 33, 47, 64, 100, 1000} {
		p := make([]uint64, n)
		var want uint64
		for i := range p {
			p[i] = uint64(1)<<(i%64) + uint64(i)*0x9e3779b97f4a7c15
			want += p[i]
		}
		if got := Sum(p); got != want {
			t.Errorf("%d words: sum %#x, want %#x", n, got, want)
		}
		if got := sumGo(p); got != want {
			t.Errorf("%d words: the Go loop's sum %#x, want %#x", n, got, want)
		}
	}
	vectorChecked(t)
}

// vectorChecked ends t as Missing on an amd64 CPU without AVX2, where Sum
// had no vector loop to run, so that such a machine does not report the
// assembly as checked (other architectures have none).
func vectorChecked(t *testing.T) {
	if runtime.GOARCH == "amd64" && !haveVector {
		proof.Missing(t, "membw's vector sum (sum_amd64.s)", "this CPU has no AVX2: only the Go loop ran")
	}
}

// TestSumOfAnUnalignedSlice: the vector loop reads with unaligned loads, so
// a slice starting mid-line sums as well.
func TestSumOfAnUnalignedSlice(t *testing.T) {
	p := make([]uint64, 67)
	for i := range p {
		p[i] = uint64(i) + 1
	}
	for off := range 3 {
		q := p[off:]
		var want uint64
		for _, v := range q {
			want += v
		}
		if got := Sum(q); got != want {
			t.Errorf("offset %d: sum %d, want %d", off, got, want)
		}
	}
	vectorChecked(t)
}

// BenchmarkSum and BenchmarkSumGo read 256 MiB, past the last-level cache,
// with the vector loop and with the Go one.
func BenchmarkSum(b *testing.B)   { benchSum(b, Sum) }
func BenchmarkSumGo(b *testing.B) { benchSum(b, sumGo) }

func benchSum(b *testing.B, sum func([]uint64) uint64) {
	p := make([]uint64, 256<<20/8)
	for i := range p {
		p[i] = uint64(i)
	}
	b.SetBytes(int64(len(p) * 8))
	for b.Loop() {
		sink = sum(p)
	}
}

var sink uint64
