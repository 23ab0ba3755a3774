package cpu

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/device"
)

// program binds commands (from h.command) as one program, the way the
// runtime binds a plan's: every buffer mapped once, every command
// resolved, then Bind. It returns the program and its bound commands.
func (h *harness) program(cmds ...hcmd) (device.Program, []*Exec) {
	h.t.Helper()
	for i := len(h.dev); i < len(h.bufs); i++ {
		d, err := h.b.Map(h.bufs[i])
		if err != nil {
			h.t.Fatal(err)
		}
		h.dev = append(h.dev, d)
	}
	pl := &plans.Plan{}
	pl.Header.Target.Tuning.NormTG = 256
	for j := range h.bufs {
		pl.Buffers = append(pl.Buffers, plans.Buffer{Name: "b" + strconv.Itoa(j), Kind: plans.BufScratch, Size: uint64(len(h.bufs[j]))})
	}
	pr := &plans.Program{Name: "test", Batch: 1}
	for i, c := range cmds {
		k, _ := kernels.Lookup(c.p.Kernel)
		cmd := *c.cmd
		cmd.Pipeline = uint32(i)
		for _, bd := range cmd.Bindings {
			if k.Bindings[bd.Slot].Role == kernels.RoleWeight {
				pl.Buffers[bd.Buffer].Kind = plans.BufWeight
			}
		}
		pl.Pipelines = append(pl.Pipelines, c.p)
		harnessLaunch(k, c.p, &cmd, device.ChipTuning(pl.Header.Target.Tuning))
		pr.Commands = append(pr.Commands, cmd)
	}
	var rcs []device.Command
	for i := range pr.Commands {
		rc, err := device.Resolve(pl, pr, i, h.dev, harnessBounds)
		if err != nil {
			h.t.Fatal(err)
		}
		rcs = append(rcs, rc)
	}
	prog, err := h.b.Bind(rcs)
	if err != nil {
		h.t.Fatal(err)
	}
	return prog, h.b.Commands(prog)
}

type hcmd struct {
	p   plans.Pipeline
	cmd *plans.Command
}

func (h *harness) cmd(name string, params any, c consts, bs binds) hcmd {
	p, cmd := h.command(name, params, c, bs)
	return hcmd{p, cmd}
}

// A layer's q, k and v GEMVs (and gate and up) read one x: Bind groups
// them, Encode runs the group as one pool run, and every output has the
// bits each GEMV gives run alone, with chunks that cross from one
// member's rows to the next's, for every weight form a CPU plan's
// decode uses.
func TestGEMVGroupGivesEachGEMVsBits(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 1))
	const k = 1024
	ns := []int{256, 128, 128} // q, k, v: 32 groups of 16 rows, split in 3s on 3 threads
	for _, name := range []string{"gemv_q4_0_x16_f32", "gemv_q8_0_x16_f32", "gemv_q4_k_x16_f32", "gemv_q6_k_x16_f32", "gemv_q4_0_f32", "gemv_f16_f32"} {
		for _, threads := range []int{1, 3} {
			t.Run(name+"/"+strconv.Itoa(threads), func(t *testing.T) {
				kn, _ := kernels.Lookup(name)
				h := newHarness(t, threads)
				x := f32bytes(randFloats(r, k, 1))
				var ws, ys, want [][]byte
				var cmds []hcmd
				for i, n := range ns {
					w, _ := weights(t, r, kn.DType, n, k)
					if kn.Variant&kernels.X16 != 0 {
						rw := make([]byte, len(w))
						if err := x16Of(kn.DType).repack(rw, w, k); err != nil {
							t.Fatal(err)
						}
						w = rw
					}
					ws, ys = append(ws, w), append(ys, Alloc(4*n))
					bs := binds{"w": w, "x": x, "y": ys[i]}
					c := consts{}
					if i == 1 { // k with a bias, as Qwen2's
						bs["bias"], c["has_bias"] = f32bytes(randFloats(r, n, 1)), 1
					}
					cmds = append(cmds, h.cmd(name, kernels.GEMVParams{N: uint32(n), K: k}, c, bs))
				}
				prog, execs := h.program(cmds...)
				if execs[0].group == nil || len(execs[0].group.members) != 3 {
					t.Fatalf("q, k and v not grouped")
				}
				for _, e := range execs { // alone, as verify runs them
					e.Run()
				}
				for _, y := range ys {
					want = append(want, slices.Clone(y))
					clear(y)
				}
				h.b.Encode(prog, []plans.Step{{}})
				for i, y := range ys {
					if !slices.Equal(f32s(y), f32s(want[i])) {
						t.Fatalf("member %d: the group's rows differ from the GEMV's alone", i)
					}
				}
			})
		}
	}
}

// What must stay apart does: a GEMV that writes what the next reads, one
// that reads another x, another K,
// the SiLU form, and a command between.
func TestGEMVGroupKeepsApartWhatMustRunInTurn(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 2))
	const name, n, k = "gemv_q4_0_x16_f32", 64, 256
	kn, _ := kernels.Lookup(name)
	w := func(n, k int) []byte {
		p, _ := weights(t, r, kn.DType, n, k)
		rw := make([]byte, len(p))
		if err := x16Of(kn.DType).repack(rw, p, k); err != nil {
			t.Fatal(err)
		}
		return rw
	}
	gemv := func(h *harness, x, y []byte, k int) hcmd {
		return h.cmd(name, kernels.GEMVParams{N: n, K: uint32(k)}, nil, binds{"w": w(n, k), "x": x, "y": y})
	}
	for _, c := range []struct {
		name string
		cmds func(h *harness, x []byte) []hcmd
	}{
		{"the first writes x", func(h *harness, x []byte) []hcmd {
			return []hcmd{gemv(h, x, x, k), gemv(h, x, Alloc(4*n), k)}
		}},
		{"the second writes the first's output", func(h *harness, x []byte) []hcmd {
			y := Alloc(4 * n)
			return []hcmd{gemv(h, x, y, k), gemv(h, x, y, k)}
		}},
		{"another x", func(h *harness, x []byte) []hcmd {
			return []hcmd{gemv(h, x, Alloc(4*n), k), gemv(h, f32bytes(randFloats(r, k, 1)), Alloc(4*n), k)}
		}},
		{"another K", func(h *harness, x []byte) []hcmd {
			return []hcmd{gemv(h, x, Alloc(4*n), k), gemv(h, x, Alloc(4*n), k/2)}
		}},
		{"a SiLU GEMV", func(h *harness, x []byte) []hcmd {
			return []hcmd{gemv(h, x, Alloc(4*n), k), h.cmd("gemv_q4_0_x16_silu_f32", kernels.GEMVParams{N: n, K: k}, nil,
				binds{"w": w(n, k), "gate": x, "up": f32bytes(randFloats(r, k, 1)), "y": Alloc(4 * n)})}
		}},
		{"a command between", func(h *harness, x []byte) []hcmd {
			return []hcmd{gemv(h, x, Alloc(4*n), k),
				h.cmd("rmsnorm_f32", kernels.NormParams{Dim: 8, NRows: 1, NHeads: 1, Stride: 8, Eps: 1e-6}, nil,
					binds{"x": Alloc(32), "weight": f32bytes(randFloats(r, 8, 1)), "out": Alloc(32)}),
				gemv(h, x, Alloc(4*n), k)}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, 2)
			_, execs := h.program(c.cmds(h, f32bytes(randFloats(r, k, 1)))...)
			for i, e := range execs {
				if e.group != nil || e.grouped {
					t.Fatalf("command %d grouped", i)
				}
			}
		})
	}
	t.Run("the same x twice", func(t *testing.T) { // the control: the test can see a group
		h := newHarness(t, 2)
		x := f32bytes(randFloats(r, k, 1))
		_, execs := h.program(gemv(h, x, Alloc(4*n), k), gemv(h, x, Alloc(4*n), k))
		if execs[0].group == nil || !execs[1].grouped {
			t.Fatal("not grouped")
		}
	})
}
