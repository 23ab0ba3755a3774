package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
)

// harness builds single commands the way a plan would: each named binding
// is its own buffer (offset 0), the parameter struct encoded by the
// catalog, the constants by name.
type harness struct {
	t    testing.TB
	b    *Backend
	bufs [][]byte
}

func newHarness(t testing.TB, threads int) *harness {
	b := New(Options{Threads: threads})
	t.Cleanup(b.Close)
	return &harness{t: t, b: b}
}

type binds map[string][]byte
type consts map[string]uint32

func (h *harness) command(name string, params any, c consts, bs binds) (plans.Pipeline, *plans.Command) {
	h.t.Helper()
	k, ok := kernels.Lookup(name)
	if !ok {
		h.t.Fatalf("no kernel %s", name)
	}
	var p plans.Pipeline
	p.Kernel = name
	for _, kc := range k.Constants {
		if v, ok := c[kc.Name]; ok {
			typ := plans.ConstU32
			if kc.Type == kernels.ConstBool {
				typ = plans.ConstBool
			}
			p.Constants = append(p.Constants, plans.Constant{Index: uint32(kc.Index), Type: typ, Value: v})
		}
	}
	cmd := &plans.Command{Label: "test." + name, Params: kernels.Encode(params), ParamsSlot: uint32(k.ParamSlot)}
	for _, b := range k.Bindings {
		if buf, ok := bs[b.Name]; ok {
			h.bufs = append(h.bufs, buf)
			cmd.Bindings = append(cmd.Bindings, plans.Binding{Slot: uint32(b.Slot), Buffer: uint32(len(h.bufs) - 1)})
		}
	}
	return p, cmd
}

func (h *harness) bind(name string, params any, c consts, bs binds) *Exec {
	h.t.Helper()
	p, cmd := h.command(name, params, c, bs)
	e, err := h.b.Bind(p, cmd, h.bufs)
	if err != nil {
		h.t.Fatalf("bind %s: %v", name, err)
	}
	return e
}

func (h *harness) run(name string, params any, c consts, bs binds) {
	h.t.Helper()
	h.bind(name, params, c, bs).Run()
}

// Activation buffers.

func randFloats(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

// actBytes stores x in the activation dtype (f16 rounds).
func actBytes(a act, x []float32) []byte {
	b := Alloc(len(x) * a.size())
	a.store(b, 0, x)
	return b
}

// actFloats reads n elements back as float64.
func actFloats(a act, b []byte, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(a.get(b, i))
	}
	return out
}

// stored is x as an activation buffer of dtype a holds it.
func stored(a act, x []float32) []float64 { return actFloats(a, actBytes(a, x), len(x)) }

// weights quantizes random floats to dt and returns the bytes and what
// they dequantize to (the reference's W).
func weights(t testing.TB, r *rand.Rand, dt dtype.Type, n, k int) ([]byte, []float64) {
	t.Helper()
	src := randFloats(r, n*k, 1)
	rb, _ := dt.RowBytes(int64(k))
	w := Alloc(n * int(rb))
	if err := dtype.Quantize(dt, src, w); err != nil {
		t.Fatal(err)
	}
	deq := make([]float32, n*k)
	if err := dtype.Dequantize(dt, w, deq); err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(deq))
	for i, v := range deq {
		out[i] = float64(v)
	}
	return w, out
}

func f32bytes(x []float32) []byte {
	b := Alloc(4 * len(x))
	copy(f32s(b), x)
	return b
}

func acts() []dtype.Type { return []dtype.Type{dtype.F32, dtype.F16} }

// f16ulp is the relative rounding of an F16 store: 2^-11.
const f16ulp = 1.0 / 2048

func near(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol || (math.IsInf(got, 0) && got == want)
}
