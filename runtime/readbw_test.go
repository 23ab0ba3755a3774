package runtime

import "testing"

// TestSumWordsReadsEveryWord: ReadBandwidth's loop must touch every word,
// tails included, or it times less than the buffer it divides by.
func TestSumWordsReadsEveryWord(t *testing.T) {
	for n := range 11 {
		p := make([]uint64, n)
		var want uint64
		for i := range p {
			p[i] = uint64(1) << i
			want += p[i]
		}
		if got := sumWords(p); got != want {
			t.Errorf("%d words: sum %#x, want %#x", n, got, want)
		}
	}
}
