package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/runtime/conversation"
)

// delta is what a request's handler is given as its generation goes: the
// text released since the last delta (split into reasoning and content
// when the model thinks) and the tokens generated meanwhile, with their
// log-probabilities when asked.
type delta struct {
	Reasoning, Content string
	Tokens             []int32
	LogProbs           []runtime.StepLogProbs
}

// generation is one request's run on an engine.
type generation struct {
	e     *entry
	eng   *engine
	ids   []int32 // the whole prompt
	opts  runtime.GenerateOptions
	split *conversation.Splitter // nil: all content
	// started is called once the engine took the request (a stream sends
	// its headers then); onDelta with each delta. An error from either
	// ends the generation (the client went away).
	started func() error
	onDelta func(delta) error
}

// outcome is how a generation ended.
type outcome struct {
	Res    *runtime.Result
	Cached int
}

// run submits g and feeds its handler until it ends. The generation is
// cancelled when the request's context ends or the handler returns.
func (s *Server) run(r *http.Request, info *reqInfo, g *generation) (*outcome, *apiError) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	id := g.e.id
	var first, last time.Time
	arrived := time.Now()
	j := &job{ctx: ctx, prompt: g.ids, opts: g.opts, ev: newEvents()}
	j.onToken = func(at time.Time) {
		if first.IsZero() {
			first = at
			s.met.firstToken(id, at.Sub(arrived))
		} else {
			s.met.tokenGap(id, at.Sub(last))
		}
		last = at
	}
	j.onDone = func(ev event) {
		if ev.Result != nil {
			res := ev.Result
			s.met.generation(id, len(g.ids), j.cached, len(res.Tokens), res.PromptTime, res.DecodeTime, res.Stop == runtime.StopCancelled, res.Spec)
		}
	}
	eng, aerr := s.submit(ctx, g.e, g.eng, j)
	if aerr != nil {
		return nil, aerr
	}
	g.eng = eng
	if g.started != nil {
		if err := g.started(); err != nil {
			return nil, errorFor(context.Canceled)
		}
	}
	var buf []event
	var d delta
	for {
		evs, ok := j.ev.next(ctx, buf)
		if !ok {
			info.finish = "cancelled"
			return nil, errorFor(ctx.Err())
		}
		buf = evs
		d = delta{Tokens: d.Tokens[:0], LogProbs: d.LogProbs[:0]}
		var end *event
		for i := range evs {
			ev := &evs[i]
			switch {
			case ev.Done:
				end = ev
			case ev.IsToken:
				d.Tokens = append(d.Tokens, ev.Token)
				if ev.LogProb != nil {
					d.LogProbs = append(d.LogProbs, *ev.LogProb)
				}
			default:
				r, c := "", ev.Text
				if g.split != nil {
					r, c = g.split.Add(ev.Text)
				}
				d.Reasoning += r
				d.Content += c
			}
		}
		if end != nil && g.split != nil {
			r, c := g.split.Flush()
			d.Reasoning += r
			d.Content += c
		}
		if d.Reasoning != "" || d.Content != "" || len(d.Tokens) > 0 {
			if err := g.onDelta(d); err != nil {
				info.finish = "cancelled"
				return nil, errorFor(context.Canceled)
			}
		}
		if end == nil {
			continue
		}
		if end.Err != nil {
			if errors.Is(end.Err, runtime.ErrContextFull) {
				return nil, &apiError{Status: http.StatusBadRequest, Type: typeInvalid, Code: "context_length_exceeded", Message: end.Err.Error()}
			}
			return nil, errorFor(end.Err)
		}
		res := end.Result
		info.prompt, info.cached, info.completion = len(g.ids), j.cached, len(res.Tokens)
		info.promptTime, info.decodeTime = res.PromptTime, res.DecodeTime
		info.finish = finishReason(res.Stop)
		if res.Stop == runtime.StopCancelled {
			return nil, errorFor(context.Canceled)
		}
		return &outcome{Res: res, Cached: j.cached}, nil
	}
}

// finishReason is OpenAI's name for why a generation stopped.
func finishReason(s runtime.Stop) string {
	switch s {
	case runtime.StopLimit, runtime.StopContext:
		return "length"
	case runtime.StopCancelled:
		return "cancelled"
	}
	return "stop"
}
