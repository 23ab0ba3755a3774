package cpu

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
)

// task is work split into n items; do computes items [i0, i1) on worker w
// (0 ≤ w < threads), which indexes the worker's private scratch. A task is
// a pointer to a kernel's prepared state, so passing it costs no allocation.
type task interface {
	do(w, i0, i1 int)
}

// parallelMinBytes is the pool threshold: a split whose work touches fewer
// bytes runs on the calling goroutine. Starting the workers and meeting
// them again costs about a microsecond while they spin and ~10 µs once they
// have parked (BenchmarkPoolWake); one core streams 64 KiB in 5–10 µs, so
// below that the split would cost what it saves. ADR 0008 has the figures.
const parallelMinBytes = 64 << 10

// Spinners yield their P now and then (a worker every 1024 polls, the
// caller every 256): otherwise a goroutine that lost its P (the caller, a
// GC worker) waits for sysmon's 10 ms preemption. Spinning without yields
// measured slower on 16 threads (BenchmarkPoolWake 95 µs against 55 µs).

// spinLimit is how many polls of the generation counter a worker makes
// before it parks on its channel. With a PAUSE per poll (tens to ~140
// cycles, by CPU) that is about 0.2–1.5 ms: longer than the serial gap
// between two commands of a decode step, so during a chain the
// workers never park (ggml's thread pool spins the same way).
const spinLimit = 1 << 15

// pool is a fixed set of worker goroutines that the caller joins. run
// publishes a task by bumping a generation counter, which spinning workers
// see at once (parked ones get a token on their channel); items go out in
// chunks of grain through an atomic counter (dynamic, so a slow core does
// not hold the others back); run returns when every worker taking part has
// checked in. A run of c chunks takes workers 1..c−1 only: the others see
// the generation pass and go on waiting, so a small split neither wakes
// them nor waits for them. One run at a time: a Backend executes one
// command at a time.
//
// The counters every worker polls or bumps sit on cache lines of their own:
// sharing one, the spinning loads and the chunk claims ping-pong it
// between the cores.
type pool struct {
	threads int
	sleep   []atomic.Bool   // worker w announced it is parking
	wake    []chan struct{} // a token per wake-up of a parked worker
	closed  atomic.Bool
	t       task
	n       int
	grain   int

	_ [64]byte
	// state is the generation (high 32 bits) and how many workers take
	// part in it (low 32): one word, so a worker reads both at once. The
	// caller publishes a generation only after every worker taking part in
	// the last one has checked in, so a worker taking part reads task
	// fields that stay put until it checks in.
	state atomic.Uint64 // polled by spinning workers
	_     [56]byte
	next  atomic.Int64 // the next unclaimed item after the workers' first chunks
	_     [56]byte

	// rescues counts the parked workers rescue woke (tests read it).
	rescues atomic.Int64
	// done is the last generation each worker checked in for, a cache
	// line each: the caller reads them all, and no worker's check-in waits
	// for another's (one shared count made 15 check-ins take turns at 16
	// threads).
	done []doneLine

	// faulted and faultAddr record a memory fault a kernel hit (fault.go).
	faulted   atomic.Bool
	faultAddr atomic.Uintptr
}

func newPool(threads int) *pool {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	p := &pool{threads: threads, sleep: make([]atomic.Bool, threads), wake: make([]chan struct{}, threads), done: make([]doneLine, threads)}
	for w := 1; w < threads; w++ {
		p.wake[w] = make(chan struct{}, 1)
		go p.worker(w, uint32(p.state.Load()>>32))
	}
	return p
}

// worker serves runs after generation seen (read before it started, so a
// run published before the goroutine is scheduled is not missed).
func (p *pool) worker(w int, seen uint32) {
	debug.SetPanicOnFault(true) // a fault on a mapped weight is caught in work (fault.go)
	for {
		st := p.state.Load()
		for spins := 0; uint32(st>>32) == seen; spins++ {
			if spins < spinLimit {
				pause()
				if spins&1023 == 1023 {
					runtime.Gosched()
				}
				st = p.state.Load()
				continue
			}
			// Park: announce it, then look once more, so that either run
			// sees the announcement or we see the new generation.
			p.sleep[w].Store(true)
			if st = p.state.Load(); uint32(st>>32) != seen {
				if !p.sleep[w].CompareAndSwap(true, false) {
					<-p.wake[w] // run took the announcement: take its token
				}
				break
			}
			<-p.wake[w]
			// A token without a new generation (a rescue's, or one left
			// over) is spurious: spin and park again rather than work a
			// generation twice.
			p.sleep[w].Store(false)
			st = p.state.Load()
			spins = -1
		}
		seen = uint32(st >> 32)
		if p.closed.Load() {
			return
		}
		if w > int(uint32(st)) {
			continue // not needed in this run
		}
		p.work(w)
		p.done[w].gen.Store(seen)
	}
}

// doneLine is a worker's check-in on a cache line of its own.
type doneLine struct {
	gen atomic.Uint32
	_   [60]byte
}

// work does chunk w (each worker taking part has one of its own, so that
// the run does not start with every worker claiming from one counter at
// once), then claims chunks until none remain.
func (p *pool) work(w int) {
	defer p.catch()
	n, g := int64(p.n), int64(p.grain)
	if i := int64(w) * g; i < n {
		p.t.do(w, int(i), int(min(i+g, n)))
	}
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
	active := min(chunks, p.threads) - 1
	p.t, p.n, p.grain = t, n, grain
	p.next.Store(int64(active+1) * int64(grain)) // chunks 0..active: the workers' first
	p.publish(active)
	gen := uint32(p.state.Load() >> 32)
	p.work(0)
	spins := 0
	for w := 1; w <= active; w++ {
		for ; p.done[w].gen.Load() != gen; spins++ {
			pause()
			if spins&255 == 255 {
				runtime.Gosched()
			}
			if spins >= rescueAfter && spins&(rescueAfter-1) == 0 {
				p.rescue(active)
			}
		}
	}
	p.t = nil
}

// rescueAfter is how many polls of the check-ins (a few ms) run waits before it
// looks for a worker of the run that is parked without its token.
const rescueAfter = 1 << 14

// rescue gives a token to every worker of the run that has not checked in:
// a parked one wakes and sees the run; a busy one finds the token when it
// next parks, and, seeing no new generation, parks again. (Two device runs
// with a CUDA backend in the same process hung with every worker parked
// and a check-in missing; the cause is not found, and this ends such a
// hang, whatever its cause, a few milliseconds in.)
func (p *pool) rescue(active int) {
	g := uint32(p.state.Load() >> 32)
	for w := 1; w <= active; w++ {
		if p.done[w].gen.Load() != g {
			p.rescues.Add(1)
			p.token(w)
		}
	}
}

// publish starts the next generation with workers 1..active taking part,
// and wakes those of them that parked.
func (p *pool) publish(active int) {
	g := uint32(p.state.Load()>>32) + 1
	p.state.Store(uint64(g)<<32 | uint64(active))
	for w := 1; w <= active; w++ {
		if p.sleep[w].CompareAndSwap(true, false) {
			p.token(w)
		}
	}
}

// token wakes worker w if it is parked, or makes its next park return at
// once: a send that never blocks (a token already waiting does the same).
func (p *pool) token(w int) {
	select {
	case p.wake[w] <- struct{}{}:
	default:
	}
}

// split picks a chunk size that gives each worker a few chunks (for
// balance) but no fewer than minGrain items (for locality).
func (p *pool) split(n, minGrain int) int {
	g := (n + 4*p.threads - 1) / (4 * p.threads)
	return max(g, minGrain, 1)
}

// gemvChunkBytes is the least weight bytes a GEMV chunk streams: below it
// a chunk's claim and its cold start cost what its rows save.
const gemvChunkBytes = 16 << 10

// gemvGrain is the chunk of a GEMV's pool run over items of itemBytes of
// weights each (a row, or an x16 group of sixteen): split's few chunks a
// worker, each at least gemvChunkBytes, rounded up to a multiple of align
// (4 for rows, so that only the last chunk has a remainder of a quad).
func (p *pool) gemvGrain(items, itemBytes, align int) int {
	g := p.split(items, max(1, gemvChunkBytes/max(itemBytes, 1)))
	return (g + align - 1) / align * align
}

func (p *pool) close() {
	if p.closed.Swap(true) {
		return
	}
	p.publish(p.threads - 1)
}
