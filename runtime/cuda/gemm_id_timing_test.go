package cuda_test

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
)

// With AKUNU_TIME_GEMM_ID=1, the median time of gemm_id and gemv_id on a
// Qwen3-30B-A3B expert projection in prefill (K 2048, N 768, 128 experts,
// 8 chosen a row, 512 rows, Q4_0, one x a row), each run 20 times after a
// warm-up, each run one command, launch to completion as the host sees it.
// A measurement, not a check: it logs and passes.
func TestTimeGEMMIDAgainstGEMVID(t *testing.T) {
	if os.Getenv("AKUNU_TIME_GEMM_ID") != "1" {
		t.Skip("AKUNU_TIME_GEMM_ID=1 times gemm_id against gemv_id")
	}
	g := cudaBackend(t)
	const ne, ns, rows, n, kk = 128, 8, 512, 768, 2048
	r := rand.New(rand.NewPCG(5, 6))
	// Q4_0 blocks of random quants and a scale of 1/64: values do not
	// matter to the time, and quantizing 200M weights would.
	const bs = 18
	w := make([]byte, ne*n*kk/32*bs)
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	for b := 0; b < len(w); b += bs {
		binary.LittleEndian.PutUint16(w[b:], dtype.Float16bits(1.0/64))
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
	var ys []map[string][]byte
	for _, name := range []string{kernels.GEMMIDName(dtype.Q4_0, dtype.F16), kernels.GEMVIDName(dtype.Q4_0, dtype.F16)} {
		k, ok := kernels.Lookup(name)
		if !ok {
			t.Fatalf("no kernel %s", name)
		}
		b := bindCase(t, g, k, c)
		var us []float64
		for i := range 23 {
			t0 := time.Now()
			g.Encode(b.prog, []plans.Step{{}})
			g.Commit()
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			if i >= 3 {
				us = append(us, float64(time.Since(t0).Nanoseconds())/1e3)
			}
		}
		for i, h := range b.bufs {
			if b.names[i] == "y" {
				y := make([]byte, len(c.bufs["y"]))
				if err := g.Read(y, h, 0); err != nil {
					t.Fatal(err)
				}
				ys = append(ys, map[string][]byte{"y": y})
			}
		}
		b.free()
		slices.Sort(us)
		t.Logf("%s: median %.1f µs (min %.1f, max %.1f) over %d runs; %d rows × %d of %d experts, N %d, K %d", name, us[len(us)/2], us[0], us[len(us)-1], len(us), rows, ns, ne, n, kk)
	}
	// The two agree (F16 W·x, in different orders).
	k, _ := kernels.Lookup(kernels.GEMMIDName(dtype.Q4_0, dtype.F16))
	compare(t, k, ys[0], ys[1], 4e-3, "gemv_id's")
}
