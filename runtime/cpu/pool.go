package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// task is work split into n items; do computes items [i0, i1) on worker w
// (0 ≤ w < threads), which indexes the worker's private scratch. A task is
// a pointer to a kernel's prepared state, so passing it costs no allocation.
type task interface {
	do(w, i0, i1 int)
}

// parallelMinBytes is the pool threshold: a split whose work touches fewer
// bytes runs on the calling goroutine. Waking the workers and meeting them
// again costs a few microseconds (BenchmarkPoolWake); at the ~10 GB/s one
// core streams, 64 KiB is about that long, so below it the wake-up would cost
// as much as it saves. ADR 0008 has the measurement.
const parallelMinBytes = 64 << 10

// pool is a fixed set of worker goroutines that the caller joins: run hands
// out items in chunks of grain through an atomic counter (dynamic, so a
// slow core does not hold the others back) and returns when all are done.
// Only one run is in flight at a time: a Backend executes one command at a
// time.
type pool struct {
	threads int
	wake    []chan struct{} // one per worker 1..threads-1
	done    chan struct{}

	t     task
	n     int
	grain int
	next  atomic.Int64
	once  sync.Once
}

func newPool(threads int) *pool {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	p := &pool{threads: threads, done: make(chan struct{}, threads)}
	p.wake = make([]chan struct{}, threads)
	for w := 1; w < threads; w++ {
		p.wake[w] = make(chan struct{}, 1)
		go p.worker(w)
	}
	return p
}

func (p *pool) worker(w int) {
	for range p.wake[w] {
		p.work(w)
		p.done <- struct{}{}
	}
}

// work claims chunks until none remain.
func (p *pool) work(w int) {
	n, g := int64(p.n), int64(p.grain)
	for {
		i := p.next.Add(g) - g
		if i >= n {
			return
		}
		p.t.do(w, int(i), int(min(i+g, n)))
	}
}

// run computes the n items of t, grain items per chunk, each item touching
// about bytesPerItem bytes. Work under parallelMinBytes, or a single chunk,
// runs inline on worker 0.
func (p *pool) run(t task, n, grain int, bytesPerItem int) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	chunks := (n + grain - 1) / grain
	if p.threads == 1 || chunks == 1 || n*bytesPerItem < parallelMinBytes {
		t.do(0, 0, n)
		return
	}
	workers := min(p.threads, chunks)
	p.t, p.n, p.grain = t, n, grain
	p.next.Store(0)
	for w := 1; w < workers; w++ {
		p.wake[w] <- struct{}{}
	}
	p.work(0)
	for w := 1; w < workers; w++ {
		<-p.done
	}
	p.t = nil
}

// split picks a chunk size that gives each worker a few chunks (for
// balance) but no fewer than minGrain items (for locality).
func (p *pool) split(n, minGrain int) int {
	g := (n + 4*p.threads - 1) / (4 * p.threads)
	return max(g, minGrain, 1)
}

func (p *pool) close() {
	p.once.Do(func() {
		for w := 1; w < p.threads; w++ {
			close(p.wake[w])
		}
	})
}
