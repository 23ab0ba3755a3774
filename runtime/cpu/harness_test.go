package cpu

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/device"
	"github.com/akunu-dev/akunu/specs/chips"
)

// harness builds single commands the way a plan would: each named binding
// is its own buffer (offset 0), the parameter struct encoded by the
// catalog, the constants by name.
type harness struct {
	t    testing.TB
	b    *Backend
	bufs [][]byte
	dev  []device.Buffer // bufs[i] as mapped into b, once
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
	cmd := &plans.Command{Label: "test." + name, Params: kernels.Encode(params), ParamsSlot: uint32(k.ParamSlot),
		Grid: [3]uint32{1, 1, 1}, Threadgroup: [3]uint32{32, 1, 1}}
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
	e, err := h.exec(p, cmd)
	if err != nil {
		h.t.Fatalf("bind %s: %v", name, err)
	}
	return e
}

// harnessBounds are the steps the harness's commands may take: 8 token
// slots, positions below 1<<20, 64 sequence slots, 1<<16 rows.
var harnessBounds = plans.StepBounds{Slots: 8, Ctx: 1 << 20, Seqs: 64, Batch: 1 << 16, Out: 1 << 16}

// exec binds cmd as the runtime would: the harness's buffers mapped into
// the backend (scratch, so writable; the test keeps reading and writing
// the same bytes), the command resolved by device.Resolve, then bound.
func (h *harness) exec(p plans.Pipeline, cmd *plans.Command) (*Exec, error) {
	pl := &plans.Plan{Pipelines: []plans.Pipeline{p}}
	for i := len(h.dev); i < len(h.bufs); i++ {
		d, err := h.b.Map(h.bufs[i])
		if err != nil {
			return nil, err
		}
		h.dev = append(h.dev, d)
	}
	// The plan holds the command's buffers only, renumbered.
	var bufs []device.Buffer
	c := *cmd
	c.Bindings = append([]plans.Binding(nil), cmd.Bindings...)
	k, _ := kernels.Lookup(p.Kernel)
	for j, bd := range c.Bindings {
		// Each buffer of the kind its slot's role takes (Resolve checks).
		kind := plans.BufScratch
		if k != nil && int(bd.Slot) < len(k.Bindings) {
			switch k.Bindings[bd.Slot].Role {
			case kernels.RoleWeight:
				kind = plans.BufWeight
			case kernels.RoleKV:
				kind = plans.BufKV
			}
		}
		pl.Buffers = append(pl.Buffers, plans.Buffer{Name: "b" + strconv.Itoa(j), Kind: kind, Size: uint64(len(h.bufs[bd.Buffer]))})
		bufs = append(bufs, h.dev[bd.Buffer])
		c.Bindings[j].Buffer = uint32(j)
	}
	c.Pipeline = 0
	pl.Header.Target.Tuning.NormTG = 256
	if k != nil {
		harnessLaunch(k, p, &c, device.ChipTuning(pl.Header.Target.Tuning))
	}
	pr := &plans.Program{Name: "test", Batch: 1, Commands: []plans.Command{c}}
	// The bounds the command's own cache allows: its max_ctx positions
	// and one sequence slot (device.Resolve holds a command to them).
	b := harnessBounds
	b.Seqs = 1
	if f, ok := k.Params.Field("max_ctx"); k != nil && ok && f.Offset+4 <= len(c.Params) {
		b.Ctx = binary.LittleEndian.Uint32(c.Params[f.Offset:])
	}
	rc, err := device.Resolve(pl, pr, 0, bufs, b)
	if err != nil {
		return nil, err
	}
	prog, err := h.b.Bind([]device.Command{rc})
	if err != nil {
		return nil, err
	}
	return h.b.Commands(prog)[0], nil
}

// harnessLaunch gives c the launch its kernel's geometry rule gives for the
// shape of its parameters, as the compiler would; a shape the rule refuses
// leaves the launch as it is, for Resolve to refuse.
func harnessLaunch(k *kernels.Kernel, p plans.Pipeline, c *plans.Command, t chips.Tuning) {
	x := &kernels.Extents{Params: c.Params, Constants: make([]uint32, len(k.Constants)), Set: make([]bool, len(k.Constants))}
	for _, pc := range p.Constants {
		if int(pc.Index) < len(k.Constants) {
			x.Constants[pc.Index], x.Set[pc.Index] = pc.Value, true
		}
	}
	s, err := k.ShapeOf(x)
	if err != nil {
		return
	}
	l, err := k.Geometry(s, t)
	if err != nil {
		return
	}
	for d := range 3 {
		c.Grid[d], c.Threadgroup[d] = uint32(l.Grid[d]), uint32(l.Threadgroup[d])
	}
	c.ThreadgroupMemory = uint32(l.TGMem)
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

// needCPU skips t where the CPU lacks the feature the kernels under test
// need, and records the skip under SKIPPED PROOFS (internal/proof): such
// a machine has not held those kernels to the portable Go, and says so
// instead of printing ok.
func needCPU(t testing.TB, have bool, feature string) {
	t.Helper()
	if !have {
		proof.Elsewhere(t, "the "+feature+" kernels are not held to the portable Go (run on a CPU with "+feature+")", "this CPU lacks "+feature)
	}
}

// mustPanic reports an error unless f panics: the assembly wrappers check
// every slice the kernel would read before calling it.
func mustPanic(t testing.TB, name string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", name)
		}
	}()
	f()
}
