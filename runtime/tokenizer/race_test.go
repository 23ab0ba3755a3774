package tokenizer_test

import (
	"slices"
	"sync"
	"testing"
)

// TestConcurrentUse: one Tokenizer, many goroutines, the same answers.
func TestConcurrentUse(t *testing.T) {
	for _, path := range vocabFiles(t) {
		tk := load(t, path)
		inputs, _ := vectors(t, path)
		want := make([][]int32, len(inputs))
		for i, in := range inputs {
			want[i] = tk.Tokenize(in, true, true)
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range 3 * len(inputs) {
					i := (k + g) % len(inputs)
					if got := tk.Tokenize(inputs[i], true, true); !slices.Equal(got, want[i]) {
						t.Errorf("%s input %d: %v, want %v", vocabName(path), i, got, want[i])
						return
					}
					for _, id := range want[i] {
						_ = tk.TokenToPiece(id, true)
					}
				}
			}()
		}
		wg.Wait()
	}
}
