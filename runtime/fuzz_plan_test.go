package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/device"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
	"github.com/akunu-dev/akunu/specs/chips"
)

// The plan preamble's layout (plans/FORMAT.md): the body length at 16, the
// SHA-256 of bytes [0, 24) and the body at 24, the body from 56.
const (
	planBodyLenAt  = 16
	planChecksumAt = 24
	planBodyAt     = 56
)

// resealPlan makes data's preamble agree with its body again, as anyone
// can: the checksum detects damage, not tampering.
func resealPlan(data []byte) []byte {
	if len(data) < planBodyAt {
		return data
	}
	binary.LittleEndian.PutUint64(data[planBodyLenAt:], uint64(len(data)-planBodyAt))
	h := sha256.New()
	h.Write(data[:planChecksumAt])
	h.Write(data[planBodyAt:])
	h.Sum(data[planChecksumAt:planChecksumAt])
	return data
}

// fuzzPlan is stories260K's CPU plan, compiled once per process, with its
// targeted mutations (mutate_test.go).
var fuzzPlan struct {
	once  sync.Once
	model string
	base  []byte
	ms    []mutation
	err   error
}

func loadFuzzPlan(t testing.TB) {
	model := stories(t)
	fuzzPlan.once.Do(func() {
		fuzzPlan.model = model
		prof, err := chips.Resolve("cpu-avx2:2", 0)
		if err != nil {
			fuzzPlan.err = err
			return
		}
		p, err := compiler.Compile(model, compiler.Options{Chip: prof})
		if err != nil {
			fuzzPlan.err = err
			return
		}
		fuzzPlan.base = plans.Encode(p)
		fuzzPlan.ms = mutations(p)
	})
	if fuzzPlan.err != nil {
		t.Fatal(fuzzPlan.err)
	}
}

// FuzzPlanRun: a damaged plan, resealed, is refused at load with an error
// that wraps one of the plan or runtime sentinels, or it loads and runs a
// prefill and a decode step over the real model; it never panics, crashes
// or hangs. An input is an edit script, 5 bytes an edit: an op, a
// little-endian 24-bit argument and a value. Op%3 0 sets the body byte at
// the argument (modulo the body's length) to the value; 1 adds the value
// to it; 2 applies the targeted mutation the argument names (mutations,
// modulo their number) to the decoded plan and re-encodes it. The script
// is applied in order, then the plan resealed.
func FuzzPlanRun(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0x10, 0x00, 0x00, 0x00})
	f.Add([]byte{1, 0x00, 0x04, 0x00, 0x01})
	f.Add([]byte{2, 0x00, 0x00, 0x00, 0x00})
	f.Add([]byte{2, 0x1d, 0x0d, 0x00, 0x00, 0, 0x20, 0x30, 0x00, 0xff})
	// The edits issue 18 found crashing, by name.
	loadFuzzPlan(f)
	for i, m := range fuzzPlan.ms {
		switch m.name {
		case "hparams.ctx = 2^24", "hparams.vocab x2", "sampled[59] sample: param word 0 = 1",
			"decode[2] L0.attn.qkv: param word 0 = 2^30", "decode[6] L0.attn.attention: param word 7 = -1":
			f.Add([]byte{2, byte(i), byte(i >> 8), byte(i >> 16), 0})
		}
	}
	f.Fuzz(func(t *testing.T, edits []byte) {
		loadFuzzPlan(t)
		data := append([]byte(nil), fuzzPlan.base...)
		for ; len(edits) >= 5; edits = edits[5:] {
			arg := int(edits[1]) | int(edits[2])<<8 | int(edits[3])<<16
			switch edits[0] % 3 {
			case 0, 1:
				body := data[planBodyAt:]
				if edits[0]%3 == 0 {
					body[arg%len(body)] = edits[4]
				} else {
					body[arg%len(body)] += edits[4]
				}
			case 2:
				p, err := plans.Decode("", resealPlan(data))
				if err != nil {
					continue // an earlier edit broke it: the mutation needs a plan
				}
				if !applyMutation(fuzzPlan.ms[arg%len(fuzzPlan.ms)].edit, p) {
					continue // it was made for the plan before earlier edits, and no longer fits it
				}
				data = plans.Encode(p)
			}
		}
		data = resealPlan(data)
		start := time.Now()
		err := runPlanBytes(data, fuzzPlan.model)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("load and run took %v", d)
		}
		if err != nil && !knownRefusal(err) {
			t.Fatalf("an error that wraps no sentinel: %v", err)
		}
	})
}

// runPlanBytes decodes and loads a plan and runs a short prefill and one
// decode step.
func runPlanBytes(data []byte, model string) error {
	p, err := plans.Decode("fuzz.plan", data)
	if err != nil {
		return err
	}
	m, err := New(p, Options{Model: model, Threads: 1})
	if err != nil {
		return err
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = s.Generate(context.Background(), []int32{1, 20, 30}, GenerateOptions{MaxTokens: 2, IgnoreEOS: true})
	return err
}

// knownRefusal reports whether err is one of the refusals a damaged plan
// may get.
func knownRefusal(err error) bool {
	for _, s := range []error{plans.ErrNotPlan, plans.ErrCorrupt, plans.ErrTooNew, plans.ErrInvalid, plans.ErrPlanMismatch,
		device.ErrCommand, ErrUnsupportedPlan, ErrModelFile, ErrContextFull, ErrNoSeq,
		tokenizer.ErrInvalidVocab, tokenizer.ErrUnknownPreTokenizer, tokenizer.ErrUnsupportedModel} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// applyMutation applies edit to p, reporting false when the edit, written
// for the plan before the fuzzer's earlier byte edits, no longer fits it
// (a binding it indexes is gone): a panic in the test's own mutation, not
// in the code under test, which runs afterwards.
func applyMutation(edit func(*plans.Plan), p *plans.Plan) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	edit(p)
	return true
}
