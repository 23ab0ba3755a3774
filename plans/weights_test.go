package plans

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckWeights(t *testing.T) {
	p := Example()
	w := &p.Header.Model.Weights
	sums := func(full bool) [][32]byte {
		s := make([][32]byte, len(w.Tensors))
		for i, ts := range w.Tensors {
			s[i] = ts.Sampled
			if full {
				s[i] = ts.Full
			}
		}
		return s
	}
	for _, full := range []bool{false, true} {
		if err := p.CheckWeights(w.Scheme, sums(full), full); err != nil {
			t.Errorf("full %v: the recorded sums: %v", full, err)
		}
	}
	bad := sums(true)
	bad[1][0] ^= 1
	err := p.CheckWeights(w.Scheme, bad, true)
	if !errors.Is(err, ErrPlanMismatch) || !strings.Contains(err.Error(), `1 of 20 tensors differ (every byte): "blk.0.attn_norm.weight"`) {
		t.Errorf("one sum changed: %v", err)
	}
	if err := p.CheckWeights(w.Scheme, bad[:3], true); !errors.Is(err, ErrPlanMismatch) {
		t.Errorf("sums of another number of tensors: %v", err)
	}
	if err := p.CheckWeights("another scheme", sums(false), false); !errors.Is(err, ErrNoWeightSums) {
		t.Errorf("another scheme: %v", err)
	}
	long := Example()
	long.Header.Model.Weights.Tensors[2].Name = strings.Repeat("x", MaxNameBytes+1)
	if err := long.WeightsCheckable(w.Scheme, false); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "tensors[2].name") {
		t.Errorf("a name over the limit: %v", err)
	}
	none := Example()
	none.Header.Model.Weights = Weights{}
	if err := none.WeightsCheckable(w.Scheme, false); !errors.Is(err, ErrNoWeightSums) || !strings.Contains(err.Error(), "records no weight sums") {
		t.Errorf("a plan without sums: %v", err)
	}
	p.Header.Model.Weights.Full = false
	if err := p.WeightsCheckable(w.Scheme, true); !errors.Is(err, ErrNoWeightSums) || !strings.Contains(err.Error(), "--sampled-sums-only") {
		t.Errorf("full asked of sampled sums: %v", err)
	}
}
