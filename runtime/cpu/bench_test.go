package cpu

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/runtime/membw"
)

// BenchmarkGEMV_<dtype> times gemv_<dtype>_f32 (a CPU plan's decode GEMV,
// activation quantization included) on 1024×3072 (a small model's FFN
// down projection) and 4096×14336 (an 8B model's), on one thread and on
// all of them. b.SetBytes is the weight's bytes, so MB/s is the bandwidth
// the GEMV streams its weights at.
func benchGEMV(b *testing.B, dt dtype.Type) {
	for _, shape := range [][2]int{{1024, 3072}, {4096, 14336}} {
		for _, threads := range []int{1, runtime.NumCPU()} {
			n, k := shape[0], shape[1]
			b.Run(fmt.Sprintf("%dx%d/t%d", n, k, threads), func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 1))
				row, _ := weights(b, r, dt, 1, k)
				w := Alloc(n * len(row))
				for i := range n {
					copy(w[i*len(row):], row)
				}
				h := newHarness(b, threads)
				x, y := f32bytes(randFloats(r, k, 1)), Alloc(4*n)
				name := kernels.GEMVName(dt, 0, dtype.F32)
				e := h.bind(name, kernels.GEMVParams{N: uint32(n), K: uint32(k)}, nil, binds{"w": w, "x": x, "y": y})
				b.SetBytes(int64(len(w)))
				b.ResetTimer()
				for range b.N {
					e.Run()
				}
			})
		}
	}
}

func BenchmarkGEMV_f32(b *testing.B)  { benchGEMV(b, dtype.F32) }
func BenchmarkGEMV_f16(b *testing.B)  { benchGEMV(b, dtype.F16) }
func BenchmarkGEMV_bf16(b *testing.B) { benchGEMV(b, dtype.BF16) }
func BenchmarkGEMV_q4_0(b *testing.B) { benchGEMV(b, dtype.Q4_0) }
func BenchmarkGEMV_q4_1(b *testing.B) { benchGEMV(b, dtype.Q4_1) }
func BenchmarkGEMV_q5_0(b *testing.B) { benchGEMV(b, dtype.Q5_0) }
func BenchmarkGEMV_q5_1(b *testing.B) { benchGEMV(b, dtype.Q5_1) }
func BenchmarkGEMV_q8_0(b *testing.B) { benchGEMV(b, dtype.Q8_0) }
func BenchmarkGEMV_q4_k(b *testing.B) { benchGEMV(b, dtype.Q4_K) }
func BenchmarkGEMV_q5_k(b *testing.B) { benchGEMV(b, dtype.Q5_K) }
func BenchmarkGEMV_q6_k(b *testing.B) { benchGEMV(b, dtype.Q6_K) }

// BenchmarkGEMM_<dtype> times simd_gemm_<dtype>_f32 (a CPU plan's prefill
// GEMM, activation quantization included) for 64 rows of X against
// 1024×3072 weights, on one thread and on all of them. b.SetBytes is the
// weight's bytes, as for the GEMV; the GEMM is compute-bound, so read
// MB/s as 64 rows' worth of weights per op.
func benchGEMM(b *testing.B, dt dtype.Type) {
	const m, n, k = 64, 1024, 3072
	for _, threads := range []int{1, runtime.NumCPU()} {
		b.Run(fmt.Sprintf("m%d_%dx%d/t%d", m, n, k, threads), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			row, _ := weights(b, r, dt, 1, k)
			w := Alloc(n * len(row))
			for i := range n {
				copy(w[i*len(row):], row)
			}
			h := newHarness(b, threads)
			x, y := f32bytes(randFloats(r, m*k, 1)), Alloc(4*m*n)
			e := h.bind(kernels.GEMMName(dt, false, dtype.F32), kernels.GEMMParams{M: m, N: n, K: k, LDA: k, LDC: n}, nil, binds{"w": w, "x": x, "y": y})
			b.SetBytes(int64(len(w)))
			b.ResetTimer()
			for range b.N {
				e.Run()
			}
		})
	}
}

func BenchmarkGEMM_q4_0(b *testing.B) { benchGEMM(b, dtype.Q4_0) }
func BenchmarkGEMM_q8_0(b *testing.B) { benchGEMM(b, dtype.Q8_0) }
func BenchmarkGEMM_f16(b *testing.B)  { benchGEMM(b, dtype.F16) }
func BenchmarkGEMM_bf16(b *testing.B) { benchGEMM(b, dtype.BF16) }
func BenchmarkGEMM_f32(b *testing.B)  { benchGEMM(b, dtype.F32) }

// BenchmarkPoolWake is the cost of waking the workers for a split that
// does nothing: what the parallelMinBytes threshold weighs against.
func BenchmarkPoolWake(b *testing.B) {
	p := newPool(runtime.NumCPU())
	defer p.close()
	t := &nopTask{}
	for range b.N {
		p.run(t, p.threads, 1, parallelMinBytes)
	}
}

type nopTask struct{}

func (*nopTask) do(_, _, _ int) {}

func TestPoolRunsEveryItemOnceAndParksSafely(t *testing.T) {
	p := newPool(4)
	defer p.close()
	c := &countTask{hits: make([]int32, 1000)}
	for round := range 200 {
		if round%50 == 49 { // let the workers park, then wake them
			for spins := 0; spins < 4*spinLimit; spins++ {
				runtime.Gosched()
			}
		}
		// Grains from 7 (every worker) to 400 (three chunks: workers 1
		// and 2 only), so runs that leave workers out follow runs that
		// take them all, and the reverse.
		grain := []int{7, 400, 334, 500, 7}[round%5]
		p.run(c, len(c.hits), grain, parallelMinBytes)
	}
	for i, h := range c.hits {
		if h != 200 {
			t.Fatalf("item %d ran %d times in 200 runs", i, h)
		}
	}
}

type countTask struct{ hits []int32 }

func (c *countTask) do(_, i0, i1 int) {
	for i := i0; i < i1; i++ {
		c.hits[i]++ // chunks are disjoint and runs are sequential
	}
}

// BenchmarkGEMMX16 times the x16 GEMMs (simd_gemm_q4_0_x16_f32 and
// simd_gemm_q8_0_x16_f32, weights repacked) against the plain ones on the
// same 3072×1024 weights (a small model's FFN up projection), on two
// threads, for M = 1 (decode), 4, 8, 16 (batched decode) and 128
// (prefill) rows of X; activation quantization included. GMAC/s counts
// M·N·K.
func BenchmarkGEMMX16(b *testing.B) {
	const n, k = 3072, 1024
	r := rand.New(rand.NewPCG(1, 16))
	for _, l := range x16Layouts {
		dt := strings.ToLower(l.dt.String())
		plain, _ := weights(b, r, l.dt, n, k)
		packed := Alloc(len(plain))
		if err := l.repack(packed, plain, k); err != nil {
			b.Fatal(err)
		}
		for _, m := range []int{1, 4, 8, 16, 128} {
			for _, form := range []struct {
				name, kernel string
				w            []byte
			}{{"plain", "simd_gemm_" + dt + "_f32", plain}, {"x16", "simd_gemm_" + dt + "_x16_f32", packed}} {
				b.Run(fmt.Sprintf("%s/%s/m%d/t2", dt, form.name, m), func(b *testing.B) {
					h := newHarness(b, 2)
					x, y := f32bytes(randFloats(r, m*k, 1)), Alloc(4*m*n)
					e := h.bind(form.kernel, kernels.GEMMParams{M: uint32(m), N: n, K: k, LDA: k, LDC: n}, nil, binds{"w": form.w, "x": x, "y": y})
					b.ResetTimer()
					for range b.N {
						e.Run()
					}
					b.ReportMetric(float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
				})
			}
		}
	}
}

// BenchmarkAttentionPieces times one item of batched decode attention (two
// query heads of a kv head, head size 128, n positions, the rows in
// cache): the one-head pieces run for each head against the two-head ones.
func BenchmarkAttentionPieces(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const hd = 128
	for _, n := range []int{64, 512} {
		k, v := make([]uint16, n*hd), make([]uint16, n*hd)
		for i := range k {
			k[i], v[i] = f2h(float32(r.NormFloat64())), f2h(float32(r.NormFloat64()))
		}
		q0, q1 := randFloats(r, hd, 1), randFloats(r, hd, 1)
		s0, s1 := make([]float32, n), make([]float32, n)
		acc0, acc1 := make([]float32, hd), make([]float32, hd)
		b.Run(fmt.Sprintf("n=%d/each", n), func(b *testing.B) {
			for range b.N {
				scoresF16(k, q0, 0.1, s0)
				scoresF16(k, q1, 0.1, s1)
				accF16(acc0, s0, v)
				accF16(acc1, s1, v)
			}
		})
		b.Run(fmt.Sprintf("n=%d/pair", n), func(b *testing.B) {
			for range b.N {
				scoresF16x2(k, q0, q1, 0.1, s0, s1)
				accF16x2(acc0, acc1, s0, s1, v)
			}
		})
	}
}

// A worker that misses its wake-up (its parking flag lost, so publish
// sends it no token) no longer hangs the run: after a few milliseconds run
// gives every worker that has not checked in a token. Every item still
// runs once, in every run, and a worker woken for nothing parks again.
func TestPoolRescuesAWorkerThatMissedItsWakeUp(t *testing.T) {
	p := newPool(4)
	defer p.close()
	c := &countTask{hits: make([]int32, 1000)}
	parked := func() bool {
		for w := 1; w < p.threads; w++ {
			if !p.sleep[w].Load() {
				return false
			}
		}
		return true
	}
	for round := range 20 {
		deadline := time.Now().Add(5 * time.Second)
		for !parked() {
			if time.Now().After(deadline) {
				t.Fatal("the workers never parked")
			}
			time.Sleep(time.Millisecond)
		}
		p.sleep[1+round%3].Store(false) // the lost announcement: publish will not wake it
		done := make(chan struct{})
		go func() { p.run(c, len(c.hits), 7, parallelMinBytes); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the run hung with a worker parked and no token", round)
		}
	}
	for i, h := range c.hits {
		if h != 20 {
			t.Fatalf("item %d ran %d times in 20 runs", i, h)
		}
	}
	if p.rescues.Load() == 0 {
		t.Error("no rescue was counted")
	}
}

// BenchmarkGEMVX16Cold times the x16 kernels for one activation row (a
// decode step's GEMV) on weights that are not in any cache: 48 copies of a
// 1024×3072 matrix (a small model's FFN down projection), 84–125 MB, run in
// turn on two threads and on every core (where there are more than two), so
// that each call streams its weights from memory as decode does.
// BenchmarkGEMMX16's m1 case reads one matrix again and again from the
// caches and hid what this shows: the Q6_K one-row kernel read
// cold weights at 20 GB/s against the Q4_K kernel's 36 on the Zen 4 dev box
// until its prefetches went to L2 (x16kgen_test.go). GB/s counts the
// weights' bytes. m8 is a speculative verify pass of seven drafts: at the
// rate of m1 it would cost one decode step's time (docs/runtime.md).
func BenchmarkGEMVX16Cold(b *testing.B) {
	const n, k, copies = 1024, 3072, 48
	r := rand.New(rand.NewPCG(1, 16))
	for _, l := range x16Layouts {
		dt := strings.ToLower(l.dt.String())
		plain, ws := coldCopies(b, r, l, n, k, copies)
		for _, m := range []int{1, 8} { // a decode step's rows, and a verify pass's of 7 drafts
			for _, threads := range benchThreads() {
				b.Run(fmt.Sprintf("%s/m%d/t%d", dt, m, threads), func(b *testing.B) {
					h := newHarness(b, threads)
					x, y := f32bytes(randFloats(r, m*k, 1)), Alloc(4*m*n)
					es := make([]*Exec, copies)
					for i, w := range ws {
						es[i] = h.bind("simd_gemm_"+dt+"_x16_f32", kernels.GEMMParams{M: uint32(m), N: n, K: k, LDA: k, LDC: n}, nil, binds{"w": w, "x": x, "y": y})
					}
					b.ResetTimer()
					for i := range b.N {
						es[i%copies].Run()
					}
					b.ReportMetric(float64(len(plain))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
				})
			}
		}
	}
}

// coldCopies is a random n × k matrix of l's type (plain: the file's
// layout) and copies of it in l's layout, read in turn so that each call
// streams its weights from memory.
func coldCopies(b *testing.B, r *rand.Rand, l *x16Layout, n, k, copies int) ([]byte, [][]byte) {
	plain, _ := weights(b, r, l.dt, n, k)
	ws := make([][]byte, copies)
	for i := range ws {
		ws[i] = Alloc(len(plain))
		if err := l.repack(ws[i], plain, k); err != nil {
			b.Fatal(err)
		}
	}
	return plain, ws
}

// BenchmarkGEMVX16ColdPulled is BenchmarkGEMVX16Cold's 8-row Q8_0 case
// (a verify pass of 7 drafts) with h of the cores reading the next copy's
// weights while the pool's other cores run the GEMV on the current one,
// each helper a slice small enough for its own L2, from where the pool's
// cores take the lines. On the 16-core host the 8-row passes at 16 threads
// stream at about half the one-row rate, a thread's memory wait and its
// arithmetic adding rather than overlapping (docs/runtime.md, session 25);
// this measures whether cores that only pull and cores that only compute
// do better than all of them doing both. GB/s of weights.
func BenchmarkGEMVX16ColdPulled(b *testing.B) {
	const n, k, copies, m = 1024, 3072, 48, 8
	l := x16Of(dtype.Q8_0)
	r := rand.New(rand.NewPCG(1, 16))
	plain, ws := coldCopies(b, r, l, n, k, copies)
	all := runtime.NumCPU()
	for _, h := range slices.Compact([]int{0, all / 8, all / 4, all / 2}) {
		b.Run(fmt.Sprintf("q8_0/m%d/t%d/h%d", m, all-h, h), func(b *testing.B) {
			hs := newHarness(b, all-h)
			x, y := f32bytes(randFloats(r, m*k, 1)), Alloc(4*m*n)
			es := make([]*Exec, copies)
			for i, w := range ws {
				es[i] = hs.bind("simd_gemm_q8_0_x16_f32", kernels.GEMMParams{M: m, N: n, K: k, LDA: k, LDC: n}, nil, binds{"w": w, "x": x, "y": y})
			}
			jobs := make([]chan []byte, h)
			var wg sync.WaitGroup
			var sink atomic.Uint64
			for j := range jobs {
				jobs[j] = make(chan []byte, 1)
				go func(ch chan []byte) {
					for w := range ch {
						sink.Add(membw.Sum(unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(w))), len(w)/8)))
						wg.Done()
					}
				}(jobs[j])
			}
			b.ResetTimer()
			for i := range b.N {
				next := ws[(i+1)%copies]
				wg.Add(h)
				for j := range h { // whole cache lines, so that the words are aligned
					jobs[j] <- next[j*len(next)/h&^63 : (j+1)*len(next)/h&^63]
				}
				es[i%copies].Run()
				wg.Wait()
			}
			b.StopTimer()
			for _, ch := range jobs {
				close(ch)
			}
			b.ReportMetric(float64(len(plain))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// benchThreads is 2 and, on a machine with more cores, all of them.
func benchThreads() []int {
	if n := runtime.NumCPU(); n > 2 {
		return []int{2, n}
	}
	return []int{2}
}
