package runtime

import (
	"errors"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/plans"
)

// TestALateLoadErrorIsAnErrorNotAPanic: every error after the model file is
// mapped (the tokenizer, the buffers) comes back as the real message, the
// half-made model released (a shared backend stays usable), and never as a
// panic of the cleanup (issue 18.1).
func TestALateLoadErrorIsAnErrorNotAPanic(t *testing.T) {
	model := stories(t)
	planPath := compile(t, model, "cpu-avx2:2")
	good, err := plans.ReadFile(planPath)
	if err != nil {
		t.Fatal(err)
	}
	be := NewCPU(2)
	t.Cleanup(func() { be.Close() })
	for _, tc := range []struct {
		name   string
		mutate func(p *plans.Plan)
		want   string
	}{
		{"a token that repeats an earlier one", func(p *plans.Plan) {
			p.Model.Tokenizer.Tokens[17] = p.Model.Tokenizer.Tokens[5]
		}, "tokenizer.ggml.tokens: token 17 "},
		{"a BOS id outside the vocabulary", func(p *plans.Plan) {
			p.Model.Tokenizer.BOS = int32(len(p.Model.Tokenizer.Tokens) + 3)
		}, "tokenizer.bos"},
		{"an unknown tokenizer model", func(p *plans.Plan) { p.Model.Tokenizer.Model = "t5x" }, `"t5x"`},
		{"a weight outside the model file", func(p *plans.Plan) {
			for i := len(p.Buffers) - 1; i >= 0; i-- {
				if p.Buffers[i].Kind == plans.BufWeight {
					p.Buffers[i].Offset = p.Header.Model.Size + 64
					return
				}
			}
			t.Fatal("the plan has no weight buffer")
		}, "lies outside"},
		{"the io logits buffer missing", func(p *plans.Plan) {
			for i := range p.Buffers {
				if p.Buffers[i].Role == "logits" {
					p.Buffers[i].Role = "spare"
				}
			}
		}, `no io "logits" buffer`},
	} {
		t.Run(tc.name+" is an error naming it", func(t *testing.T) {
			p, err := plans.ReadFile(planPath)
			if err != nil {
				t.Fatal(err)
			}
			tc.mutate(p)
			for _, shared := range []Backend{nil, be} {
				var m *Model
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Fatalf("New panicked: %v", r)
						}
					}()
					m, err = New(p, Options{Model: model, Backend: shared, Threads: 2})
				}()
				if err == nil {
					m.Close()
					t.Fatalf("loaded; want an error mentioning %q", tc.want)
				}
				if m != nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
					t.Errorf("New = %v, %q; want nil and one line mentioning %q", m, err, tc.want)
				}
				if err := m.Close(); err != nil {
					t.Errorf("closing the nil result: %v", err)
				}
			}
		})
	}
	t.Run("the shared backend still loads and runs the good plan", func(t *testing.T) {
		m, err := New(good, Options{Model: model, Backend: be})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		s := sess(t, m)
		r, err := s.Generate(t.Context(), m.Tokenizer.Tokenize("Once upon", true, false), GenerateOptions{MaxTokens: 3})
		if err != nil || len(r.Tokens) == 0 {
			t.Fatalf("generate: %+v, %v", r, err)
		}
	})
}

// Options.NewBackend is called with the plan's target once Load has read
// the plan, and the model runs on what it returns.
func TestLoadMakesTheBackendFromThePlansTarget(t *testing.T) {
	model := stories(t)
	plan := compile(t, model, "m1")
	var got plans.Target
	var made Backend
	m, err := Load(plan, Options{Model: model, NewBackend: func(tg plans.Target) (Backend, error) {
		got, made = tg, NewCPU(2)
		return made, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer made.Close()
	defer m.Close()
	if got.Vendor != "apple" || got.Kind != "gpu" || m.Backend() != made {
		t.Fatalf("target %+v, backend %v (made %v)", got, m.Backend(), made)
	}
	if _, err := Load(plan, Options{Model: model, NewBackend: func(plans.Target) (Backend, error) {
		return nil, errors.New("no such device")
	}}); err == nil || err.Error() != "no such device" {
		t.Fatalf("a failing NewBackend: %v", err)
	}
}
