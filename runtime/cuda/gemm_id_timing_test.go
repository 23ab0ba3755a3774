package cuda_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
)

// BenchmarkExpertProduct times gemm_id (rows grouped by expert) against
// gemv_id (a GEMV per row and slot) on a Qwen3-30B-A3B expert projection
// in prefill: K 2048, N 768, 128 experts, 8 chosen a row, 512 rows, Q4_0,
// one x a row; one command a run, launch to completion as the host sees it.
// On an H100 (2026-11-26): gemm_id 1344 µs, gemv_id 1717 µs (medians of 20).
// That the two agree is TestEveryGPUKernelMatchesItsCPUTwin's business.
//
//	go test -run '^$' -bench ExpertProduct ./runtime/cuda (on a GPU machine)
func BenchmarkExpertProduct(b *testing.B) {
	g := cudaBackend(b)
	const ne, ns, rows, n, kk = 128, 8, 512, 768, 2048
	r := rand.New(rand.NewPCG(5, 6))
	// Q4_0 blocks of random quants and a scale of 1/64: values do not
	// matter to the time, and quantizing 200M weights would.
	const bs = 18
	w := make([]byte, ne*n*kk/32*bs)
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	for i := 0; i < len(w); i += bs {
		binary.LittleEndian.PutUint16(w[i:], dtype.Float16bits(1.0/64))
	}
	ids := make([]uint32, rows*ns)
	for row := range rows {
		for j, e := range r.Perm(ne)[:ns] {
			ids[row*ns+j] = uint32(e)
		}
	}
	p := kernels.GEMVIDParams{N: n, K: kk, NSlots: ns, NRows: rows, NExpert: ne, XStride: kk, YStride: ns * n}
	c := kcase{kernels.Shape{Tokens: rows, N: n, K: kk, Experts: ne, Slots: ns, VecX: true}, p,
		map[string][]byte{"w": w, "x": f16s(r, rows*kk, 1), "ids": u32s(ids...), "y": make([]byte, 2*rows*ns*n)}}
	for _, name := range []string{kernels.GEMMIDName(dtype.Q4_0, dtype.F16), kernels.GEMVIDName(dtype.Q4_0, dtype.F16)} {
		b.Run(name, func(b *testing.B) {
			k, ok := kernels.Lookup(name)
			if !ok {
				b.Fatalf("no kernel %s", name)
			}
			bc := bindCase(b, g, k, c)
			defer bc.free()
			step := []plans.Step{{}}
			for b.Loop() {
				g.Encode(bc.prog, step)
				g.Commit()
				if err := g.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
