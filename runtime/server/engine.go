package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/akunu-dev/akunu/runtime"
)

// Errors an engine returns to a handler.
var (
	// errQueueFull: the model's queue holds MaxQueue waiting requests.
	errQueueFull = errors.New("the model's queue is full")
	// errClosed: the engine was unloaded or the server is shutting down.
	errClosed = errors.New("the model is not loaded")
)

// job is one generation request: the whole prompt (the rendered
// conversation, or a completion's prompt), the options, and where its
// events go. Cancelling ctx (the client went away) ends it at the next
// step and frees its slot.
type job struct {
	ctx    context.Context
	prompt []int32
	opts   runtime.GenerateOptions
	ev     *events
	// Timing, for the log line and the metrics.
	queued, started time.Time
	// cached is the prompt tokens the slot already held (not fed again).
	cached int
	// onToken, when set, is told when each token was accepted; onDone
	// what ended the job, before its last event is pushed (both on the
	// engine's goroutine: they must be quick).
	onToken func(at time.Time)
	onDone  func(ev event)
	// embed, when set, makes the job an embedding request: the engine
	// embeds its inputs between batched steps instead of generating.
	embed *embedWork
}

// embedWork is an embedding request's inputs and what the engine made of
// them so far: it embeds a request of many inputs a chunk at a time, in
// arrival order with the other requests' (embedStep). The handler reads
// it only after the job's last event.
type embedWork struct {
	inputs [][]int32
	vecs   [][]float32   // one per input embedded so far
	took   time.Duration // in Model.Embed, the chunks it shared included
	begun  bool
}

// end gives the job its last event.
func (j *job) end(ev event) {
	ev.Done = true
	if j.onDone != nil {
		j.onDone(ev)
	}
	j.ev.push(ev)
}

// engine runs one loaded model: its sessions (one per slot), its Batcher
// and the goroutine that admits jobs and steps the batch. Everything but
// submit and close runs on that goroutine.
type engine struct {
	id string
	m  *runtime.Model
	// lock is the backend's: engines that share a backend take turns
	// stepping (a backend runs one submission at a time).
	lock *sync.Mutex

	maxQueue int
	jobs     chan *job
	stop     chan struct{} // closed by close: finish what runs, refuse the rest
	done     chan struct{} // closed when the loop has ended

	slots   []*slot
	b       *runtime.Batcher
	waiting []*job
	// embedding are the embedding requests, in arrival order, the first
	// possibly part done. spare is the model's sequence slots that no
	// session holds: where Model.Embed packs inputs, one a slot.
	embedding []*job
	spare     int
	// spec, when set, makes every generation speculative (spec.go).
	spec *speculation
	// grammars are the compiled grammars of constrained requests.
	grammars grammarCache

	// Shared with handlers and the registry, under mu.
	mu       sync.Mutex
	queued   int // jobs submitted and not yet admitted
	running  int
	embeds   int // embedding requests begun and not answered
	lastUsed time.Time
	closed   bool
	aborted  bool
}

// slot is one KV sequence slot: its session and the job it runs, if any.
type slot struct {
	s   *runtime.Session
	j   *job
	gen *runtime.Gen
}

// newEngine starts the engine of a loaded model with parallel slots.
// The caller holds lock.
func newEngine(id string, m *runtime.Model, lock *sync.Mutex, parallel, maxQueue, prefillRows, busyPrefillRows int, spec *speculation) (*engine, error) {
	e := &engine{id: id, m: m, lock: lock, maxQueue: maxQueue, jobs: make(chan *job, maxQueue),
		stop: make(chan struct{}), done: make(chan struct{}), b: m.NewBatcher(), lastUsed: time.Now(), spec: spec}
	e.b.PrefillRows, e.b.BusyPrefillRows = prefillRows, busyPrefillRows
	for range parallel {
		s, err := m.NewSession()
		if err != nil {
			for _, sl := range e.slots {
				sl.s.Close()
			}
			spec.close()
			m.Close()
			return nil, err
		}
		e.slots = append(e.slots, &slot{s: s})
	}
	e.spare = m.Seqs() - parallel
	go e.loop()
	return e, nil
}

// submit queues a job; errQueueFull when MaxQueue jobs wait already,
// errClosed when the engine is closing.
func (e *engine) submit(j *job) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return errClosed
	case e.queued >= e.maxQueue:
		return errQueueFull
	}
	e.queued++
	e.lastUsed = time.Now()
	j.queued = time.Now()
	e.jobs <- j // never blocks: the channel holds maxQueue and queued counts them
	return nil
}

// load is the engine's load: requests queued and running.
func (e *engine) load() (queued, running int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.queued, e.running
}

// isClosed reports whether the engine refuses new jobs.
func (e *engine) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// idle reports whether nothing is queued or running, and since when the
// engine was last used.
func (e *engine) idle() (bool, time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.queued == 0 && e.running == 0 && e.embeds == 0, e.lastUsed
}

// close stops the engine: it refuses new jobs, lets the running and
// queued ones finish (a drain) unless ctx ends first, which cancels them;
// then it closes the sessions and the model.
func (e *engine) close(ctx context.Context) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		<-e.done
		return
	}
	e.closed = true
	e.mu.Unlock()
	close(e.stop)
	select {
	case <-e.done:
	case <-ctx.Done():
		e.abort()
		<-e.done
	}
}

// abort ends every job now: the next step cancels them.
func (e *engine) abort() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	e.aborted = true
}

// loop is the engine's goroutine.
func (e *engine) loop() {
	defer close(e.done)
	defer e.release()
	stopping := false
	for {
		active := e.active()
		if active == 0 && len(e.waiting) == 0 && len(e.embedding) == 0 {
			if stopping && len(e.jobs) == 0 {
				return
			}
			select {
			case j := <-e.jobs:
				e.take(j)
				e.gather()
			case <-e.stop:
				stopping = true
				continue
			}
		}
		e.drain()
		if !stopping {
			select {
			case <-e.stop:
				stopping = true
			default:
			}
		}
		// Between steps nothing is in flight and no output waits to be
		// read: the model is free for an embedding chunk.
		e.embedStep()
		e.admit()
		if e.active() == 0 {
			continue
		}
		ctx := context.Background()
		if e.isAborted() {
			c, cancel := context.WithCancel(ctx)
			cancel()
			ctx = c
		}
		e.lock.Lock()
		err := e.b.Step(ctx)
		e.lock.Unlock()
		e.collect(err)
	}
}

// burstWindow is how long an idle engine that was just given a request
// waits for more before its first step: requests that arrive together
// (a burst of clients, a UI's parallel calls) are then prefilled in one
// step and decode in step from the start, instead of each joining a step
// later with its prompt fed a busy-budget chunk at a time. It is small
// beside any prefill.
const burstWindow = 2 * time.Millisecond

// gather waits up to burstWindow for more jobs, until every slot would
// have one.
func (e *engine) gather() {
	t := time.NewTimer(burstWindow)
	defer t.Stop()
	for len(e.waiting) < len(e.slots) {
		select {
		case j := <-e.jobs:
			e.take(j)
		case <-t.C:
			return
		case <-e.stop:
			return
		}
	}
}

func (e *engine) isAborted() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.aborted
}

// active is the number of slots running a job.
func (e *engine) active() int {
	n := 0
	for _, s := range e.slots {
		if s.j != nil {
			n++
		}
	}
	return n
}

// take files a submitted job: a generation waits for a slot, an
// embedding request for embedStep.
func (e *engine) take(j *job) {
	if j.embed != nil {
		e.embedding = append(e.embedding, j)
	} else {
		e.waiting = append(e.waiting, j)
	}
}

// drain moves every submitted job into waiting (or embedding), and
// answers the generations whose client went away while they waited.
func (e *engine) drain() {
	for {
		select {
		case j := <-e.jobs:
			e.take(j)
			continue
		default:
		}
		break
	}
	kept := e.waiting[:0]
	for _, j := range e.waiting {
		if j.ctx.Err() != nil {
			e.dequeued(0)
			j.end(event{Result: &runtime.Result{Prompt: j.prompt, Stop: runtime.StopCancelled}})
			continue
		}
		kept = append(kept, j)
	}
	e.waiting = kept
}

// dequeued moves n jobs from queued to running (n may be 0: a job left).
func (e *engine) dequeued(n int) {
	e.mu.Lock()
	e.queued--
	e.running += n
	e.mu.Unlock()
}

// admit gives free slots to waiting jobs, as schedule says.
func (e *engine) admit() {
	if len(e.waiting) == 0 {
		return
	}
	states := make([]slotState, len(e.slots))
	for i, s := range e.slots {
		states[i] = slotState{busy: s.j != nil, hist: s.s.History()}
	}
	prompts := make([][]int32, len(e.waiting))
	for i, j := range e.waiting {
		prompts[i] = j.prompt
	}
	plan := schedule(prompts, states)
	started := map[int]bool{}
	for _, a := range plan {
		j, sl := e.waiting[a.Job], e.slots[a.Slot]
		started[a.Job] = true
		e.dequeued(1)
		keep := a.Keep
		var err error
		if a.From != a.Slot {
			e.lock.Lock()
			err = sl.s.CopyFrom(e.slots[a.From].s, min(keep, e.slots[a.From].s.Pos()))
			e.lock.Unlock()
			keep = sl.s.Pos()
		}
		if err == nil {
			sl.s.Rewind(keep)
			j.cached, j.started = min(keep, sl.s.Pos()), time.Now()
			sl.j = j
			o := j.opts
			o.OnText = func(t string) bool { j.ev.push(event{Text: t}); return true }
			o.OnToken = func(id int32) bool {
				if j.onToken != nil {
					j.onToken(time.Now())
				}
				ev := event{Token: id, IsToken: true}
				if o.LogProbs {
					r := sl.gen.Result()
					lp := r.LogProbs[len(r.LogProbs)-1]
					ev.LogProb = &lp
				}
				j.ev.push(ev)
				return true
			}
			// Under a grammar too: verification masks each draft row by the
			// grammar's state after the rows before it.
			o.Spec = e.spec.forSlot(a.Slot)
			sl.gen, err = e.b.Add(j.ctx, sl.s, j.prompt[keep:], o)
		}
		if err != nil {
			sl.j, sl.gen = nil, nil
			e.finished(fmt.Errorf("server: %s: %w", e.id, err))
			j.end(event{Err: err})
		}
	}
	kept := e.waiting[:0]
	for i, j := range e.waiting {
		if !started[i] {
			kept = append(kept, j)
		}
	}
	e.waiting = kept
}

// collect hands finished generations their last event and frees their
// slots; a Step error ends every running job with it.
func (e *engine) collect(stepErr error) {
	for _, sl := range e.slots {
		if sl.j == nil {
			continue
		}
		if stepErr == nil && !sl.gen.Done() {
			continue
		}
		ev := event{Done: true, Result: sl.gen.Result(), Err: sl.gen.Err()}
		if stepErr != nil && ev.Err == nil {
			ev.Err = stepErr
		}
		sl.j.end(ev)
		sl.j, sl.gen = nil, nil
		e.finished(nil)
	}
}

// finished notes that a running job ended.
func (e *engine) finished(error) {
	e.mu.Lock()
	e.running--
	e.lastUsed = time.Now()
	e.mu.Unlock()
}

// release closes the sessions and the model (the loop's last act).
func (e *engine) release() {
	for _, j := range e.waiting {
		j.end(event{Err: errClosed})
	}
	for _, j := range e.embedding {
		e.embedEnded(j)
		j.end(event{Err: errClosed})
	}
	e.lock.Lock()
	defer e.lock.Unlock()
	for _, sl := range e.slots {
		sl.s.Close()
	}
	e.spec.close()
	e.m.Close()
}

// embedStep embeds the next chunk of the embedding requests, in arrival
// order: as many inputs as one replay of the largest embedding program
// packs (its rows, a free sequence slot each), at least one; while
// generations run, only BusyPrefillRows rows, so that a long request
// delays their next token by a short chunk, as a long prompt does.
// Requests whose client went away are dropped first; a request is
// answered when its last input is embedded.
func (e *engine) embedStep() {
	aborted := e.isAborted()
	kept := e.embedding[:0]
	for _, j := range e.embedding {
		switch {
		case aborted:
			e.embedEnded(j)
			j.end(event{Err: errClosed})
		case j.ctx.Err() != nil:
			e.embedEnded(j)
			j.end(event{Err: j.ctx.Err()})
		default:
			kept = append(kept, j)
		}
	}
	clear(e.embedding[len(kept):])
	e.embedding = kept
	if len(kept) == 0 {
		return
	}
	rows := e.m.MaxEmbedTokens()
	if e.active() > 0 && e.b.BusyPrefillRows > 0 {
		rows = min(rows, e.b.BusyPrefillRows)
	}
	e.lock.Lock()
	defer e.lock.Unlock()
	lent := e.lend()
	slots := e.spare + len(lent)
	if slots == 0 {
		return // every slot generates: wait for one to finish
	}
	var in [][]int32
	var owner []*job
	n := 0
chunk:
	for _, j := range kept {
		w := j.embed
		for _, x := range w.inputs[len(w.vecs):] {
			if len(in) > 0 && (len(in) == slots || n+len(x) > rows) {
				break chunk
			}
			if !w.begun {
				w.begun = true
				e.mu.Lock()
				e.queued--
				e.embeds++
				e.mu.Unlock()
			}
			in, owner, n = append(in, x), append(owner, j), n+len(x)
		}
	}
	start := time.Now()
	vecs, err := e.m.Embed(context.Background(), in)
	took := time.Since(start)
	e.reopen(lent)
	for i, j := range owner {
		if i > 0 && owner[i-1] == j {
			continue
		}
		j.embed.took += took
	}
	kept = e.embedding[:0]
	for _, j := range e.embedding {
		w := j.embed
		switch {
		case err != nil && slices.Contains(owner, j):
			e.embedEnded(j)
			j.end(event{Err: fmt.Errorf("server: %s: %w", e.id, err)})
			continue
		case err == nil:
			for i, o := range owner {
				if o == j {
					w.vecs = append(w.vecs, vecs[i])
				}
			}
			if len(w.vecs) == len(w.inputs) {
				e.embedEnded(j)
				j.end(event{})
				continue
			}
		}
		kept = append(kept, j)
	}
	clear(e.embedding[len(kept):])
	e.embedding = kept
}

// embedEnded notes that an embedding request left: answered, failed or
// dropped, begun or still queued.
func (e *engine) embedEnded(j *job) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if j.embed.begun {
		e.embeds--
	} else {
		e.queued--
	}
	e.lastUsed = time.Now()
}

// lend closes the sessions of the idle generation slots when no sequence
// slot is spare (every slot of the plan generates), so that an embedding
// chunk has somewhere to go; their cached prefixes are lost. reopen gives
// them new sessions.
func (e *engine) lend() []int {
	if e.spare > 0 {
		return nil
	}
	var lent []int
	for i, sl := range e.slots {
		if sl.j == nil {
			sl.s.Close()
			lent = append(lent, i)
		}
	}
	return lent
}

// reopen gives the lent slots new sessions (Embed gave every slot it took
// back, so there is one for each). A slot that cannot have one (it cannot
// happen) leaves the engine.
func (e *engine) reopen(lent []int) {
	drop := map[int]bool{}
	for _, i := range lent {
		s, err := e.m.NewSession()
		if err != nil {
			drop[i] = true
			continue
		}
		e.slots[i].s = s
	}
	if len(drop) > 0 {
		kept := e.slots[:0]
		for i, sl := range e.slots {
			if !drop[i] {
				kept = append(kept, sl)
			}
		}
		e.slots = kept
	}
}
