package server

import (
	"fmt"

	"github.com/akunu-dev/akunu/runtime"
)

// speculation is an engine's speculative decoding: its drafters, one per
// slot (a draft model's each keep a session on it, following its slot's
// conversation), and the draft model, loaded on the target's backend.
type speculation struct {
	cfg      Spec
	draft    *runtime.Model
	drafters []runtime.Drafter
	closers  []func()
}

// newSpeculation loads what sp needs for target's slots.
func newSpeculation(sp Spec, target *runtime.Model, slots int) (*speculation, error) {
	s := &speculation{cfg: sp}
	switch sp.Mode {
	case "ngram":
		ng := &runtime.NGram{} // it holds no state: the slots share it
		for range slots {
			s.drafters = append(s.drafters, ng)
		}
	case "draft":
		d, err := runtime.Load(sp.DraftPlan, runtime.Options{Model: sp.DraftModel, Backend: target.Backend(), Seqs: slots})
		if err != nil {
			return nil, fmt.Errorf("the draft plan %s: %w", sp.DraftPlan, err)
		}
		s.draft = d
		most := sp.Max
		if most <= 0 {
			most = runtime.DefaultDraftMax
		}
		for range slots {
			md, err := runtime.NewModelDrafter(target, d, most)
			if err != nil {
				s.close()
				return nil, fmt.Errorf("the draft plan %s: %w", sp.DraftPlan, err)
			}
			md.SetShortlist(sp.Vocab)
			s.drafters = append(s.drafters, md)
			s.closers = append(s.closers, md.Close)
		}
	default:
		return nil, fmt.Errorf("speculation %q: want ngram or draft", sp.Mode)
	}
	return s, nil
}

// forSlot is the Speculation of a generation on slot i (nil without).
func (s *speculation) forSlot(i int) *runtime.Speculation {
	if s == nil || i < 0 || i >= len(s.drafters) {
		return nil
	}
	return &runtime.Speculation{Drafter: s.drafters[i], Max: s.cfg.Max, Min: s.cfg.Min}
}

// close frees the drafters' sessions and the draft model (the backend is
// the target's).
func (s *speculation) close() {
	if s == nil {
		return
	}
	for _, c := range s.closers {
		c()
	}
	s.closers = nil
	if s.draft != nil {
		s.draft.Close()
		s.draft = nil
	}
}
