package tokenizer_test

import (
	"testing"

	"github.com/akunu-dev/akunu/runtime/tokenizer"
)

func TestVectorsMatchLlamaCpp(t *testing.T) {
	for _, path := range vocabFiles(t) {
		t.Run(vocabName(path), func(t *testing.T) {
			tk := load(t, path)
			inputs, outputs := vectors(t, path)
			for i, in := range inputs {
				got := tokenizer.FormatVectorLine(tk.Tokenize(in, false, false))
				if got != outputs[i] {
					t.Errorf("input %d %q:\n got %s\nwant %s", i, in, got, outputs[i])
				}
			}
		})
	}
}
