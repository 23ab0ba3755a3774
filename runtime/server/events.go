package server

import (
	"context"
	"sync"

	"github.com/akunu-dev/akunu/runtime"
)

// event is what an engine tells a request's handler, in order: pieces of
// text (stop strings already held back), tokens (with their
// log-probabilities when asked), and a last event with the result (or the
// error that ended it).
type event struct {
	Text    string
	Token   int32
	IsToken bool
	LogProb *runtime.StepLogProbs
	Done    bool
	Result  *runtime.Result
	Err     error
}

// events is a job's queue of events: the engine pushes without ever
// blocking (a slow client must not stall the batch), the handler pops,
// waiting. Memory is bounded by the job's tokens.
type events struct {
	mu    sync.Mutex
	q     []event
	ready chan struct{} // holds a token while q is not empty
}

func newEvents() *events { return &events{ready: make(chan struct{}, 1)} }

// push appends an event (the engine's side).
func (e *events) push(ev event) {
	e.mu.Lock()
	e.q = append(e.q, ev)
	e.mu.Unlock()
	select {
	case e.ready <- struct{}{}:
	default:
	}
}

// next returns the events queued since the last call, waiting for one
// when there are none; ok is false when ctx ended first.
func (e *events) next(ctx context.Context, into []event) ([]event, bool) {
	for {
		e.mu.Lock()
		if len(e.q) > 0 {
			into = append(into[:0], e.q...)
			e.q = e.q[:0]
			e.mu.Unlock()
			return into, true
		}
		e.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			return into[:0], false
		}
	}
}
