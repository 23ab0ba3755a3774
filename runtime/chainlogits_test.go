package runtime

import (
	"slices"
	"testing"

	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/sampling"
)

// The logits the host reads after a chain of decode steps are its last
// step's, bit for bit as a host loop of single steps gives them, and its
// tokens are theirs: a backend may copy the logits for the host in a
// chain's last step only (device.HostOnly).
func TestAChainEndsWithItsLastStepsLogits(t *testing.T) {
	chainEndsWithItsLastLogits(t, storiesModel(t))
}

func chainEndsWithItsLastLogits(t *testing.T, m *Model) {
	t.Helper()
	s := sess(t, m)
	gen(t, s, m.Tokenizer.Tokenize("Once upon a time", true, false), GenerateOptions{MaxTokens: 1})
	pos := s.Pos()
	const n = 5
	if err := m.writeToken(0, s.hist[pos]); err != nil {
		t.Fatal(err)
	}
	if err := s.chain(m.decode, n); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, m.vocab)
	ids := make([]byte, 4*(n+1))
	if err := m.be.Read(f32Bytes(got), m.io.logits, 0); err != nil {
		t.Fatal(err)
	}
	if err := m.be.Read(ids, m.io.tokens, 0); err != nil {
		t.Fatal(err)
	}
	// The same positions again, a step a submission, each token the
	// host's argmax of the step's logits.
	want := make([]float32, m.vocab)
	tok := s.hist[pos]
	for i := range n {
		if err := m.writeToken(0, tok); err != nil {
			t.Fatal(err)
		}
		m.step[0] = plans.Step{Pos: uint32(pos + i), Batch: 1, Seq: uint32(s.seq)}
		if err := m.replay(m.decode); err != nil {
			t.Fatal(err)
		}
		if err := m.be.Read(f32Bytes(want), m.io.logits, 0); err != nil {
			t.Fatal(err)
		}
		tok = sampling.Argmax(want)
		if c := int32(u32At(ids, i+1)); c != tok {
			t.Fatalf("step %d: the chain's token %d, the host's %d", i, c, tok)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("after a chain of %d steps the host reads other logits than its last step's", n)
	}
}
