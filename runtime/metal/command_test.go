package metal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/device"
)

// recorder is a compute encoder that writes down the messages it gets.
type recorder struct{ log []string }

func (r *recorder) pushDebugGroup(l uintptr) { r.log = append(r.log, fmt.Sprintf("push %d", l)) }
func (r *recorder) popDebugGroup()           { r.log = append(r.log, "pop") }
func (r *recorder) setPipeline(p uintptr)    { r.log = append(r.log, fmt.Sprintf("pipeline %d", p)) }
func (r *recorder) setBuffer(b uintptr, off uint64, i uint32) {
	r.log = append(r.log, fmt.Sprintf("buffer %d+%d at %d", b, off, i))
}
func (r *recorder) setBytes(p unsafe.Pointer, n int, i uint32) {
	r.log = append(r.log, fmt.Sprintf("bytes % x at %d", unsafe.Slice((*byte)(p), n), i))
}
func (r *recorder) setThreadgroupMemory(n uint64, i uint32) {
	r.log = append(r.log, fmt.Sprintf("tgmem %d at %d", n, i))
}
func (r *recorder) dispatch(g, tg *[3]uint64, threads bool) {
	r.log = append(r.log, fmt.Sprintf("dispatch %v %v threads=%v", *g, *tg, threads))
}

func (r *recorder) copyBuffer(op *copyOp) {
	r.log = append(r.log, fmt.Sprintf("copy %d+%d to %d+%d size %d", op.src, op.srcOff, op.dst, op.dstOff, op.size))
}

// counter counts messages without allocating (for AllocsPerRun).
type counter struct{ n int }

func (c *counter) pushDebugGroup(uintptr)                { c.n++ }
func (c *counter) popDebugGroup()                        { c.n++ }
func (c *counter) setPipeline(uintptr)                   { c.n++ }
func (c *counter) setBuffer(uintptr, uint64, uint32)     { c.n++ }
func (c *counter) setBytes(unsafe.Pointer, int, uint32)  { c.n++ }
func (c *counter) setThreadgroupMemory(uint64, uint32)   { c.n++ }
func (c *counter) dispatch(*[3]uint64, *[3]uint64, bool) { c.n++ }

// onePlan is a plan of one program of one command over buffers of the
// given kinds and sizes, its pipeline the command's kernel.
func onePlan(kernel string, cmd plans.Command, kinds []plans.BufferKind, sizes []uint64) *plans.Plan {
	p := &plans.Plan{Pipelines: []plans.Pipeline{{Kernel: kernel, Key: kernel}}}
	for i, k := range kinds {
		p.Buffers = append(p.Buffers, plans.Buffer{Name: fmt.Sprintf("buf%d", i), Kind: k, Size: sizes[i]})
	}
	p.Programs = []plans.Program{{Name: "decode", Kind: plans.KindDecode, Batch: 1, Commands: []plans.Command{cmd}}}
	return p
}

// argmaxPlan is decode's argmax of an m1 plan: logits in, the token slot
// i+1 patched into its parameters.
func argmaxPlan() *plans.Plan {
	k, _ := kernels.Lookup("argmax_f16")
	params := make([]byte, k.Params.Size)
	binary.LittleEndian.PutUint32(params, 512)
	binary.LittleEndian.PutUint32(params[8:], 1)
	return onePlan("argmax_f16", plans.Command{
		Label: "argmax", Pipeline: 0,
		Bindings:          []plans.Binding{{Slot: 0, Buffer: 0}, {Slot: 1, Buffer: 1}},
		Params:            params,
		ParamsSlot:        uint32(k.ParamSlot),
		ThreadgroupMemory: 256, // the argmax rule's: 32 groups × 8 bytes
		Grid:              [3]uint32{1, 1, 1}, Threadgroup: [3]uint32{1024, 1, 1},
		Patches: []plans.Patch{{Kind: plans.PatchArgmaxSlot, Target: plans.PatchParam, At: 4, Width: 4, Stride: 1}},
	}, []plans.BufferKind{plans.BufScratch, plans.BufIO}, []uint64{1024, 1024})
}

// testBuffers makes a table with buffers 100 and 200 (the second as a
// no-copy wrap 4096 bytes into its page span) of the plan's sizes.
func testBuffers(p *plans.Plan) (*buffers, []device.Buffer) {
	bt := &buffers{}
	var hs []device.Buffer
	for i, b := range p.Buffers {
		e := bufEntry{bufRef: bufRef{id: uintptr(100 * (i + 1))}, size: int(b.Size)}
		if i == 1 {
			e.base = 4096
		}
		hs = append(hs, device.NewBuffer(bt.add(e), e.size))
	}
	return bt, hs
}

var testBounds = plans.StepBounds{Slots: 4, Ctx: 64, Seqs: 1, Batch: 1, Out: 1}

// resolve is the runtime's first half of binding: device.Resolve.
func resolve(p *plans.Plan, hs []device.Buffer) ([]device.Command, error) {
	c, err := device.Resolve(p, &p.Programs[0], 0, hs, testBounds)
	return []device.Command{c}, err
}

func pipelineOf(maxThreads int) func(plans.Pipeline) (*Pipeline, error) {
	return func(p plans.Pipeline) (*Pipeline, error) {
		return &Pipeline{Key: p.Key, Kernel: p.Kernel, MaxThreads: maxThreads, pso: 7}, nil
	}
}

// bindPlan resolves and binds the plan's one command as the backend does.
func bindPlan(t *testing.T, p *plans.Plan, maxThreads int) (*Command, *buffers, []device.Buffer) {
	t.Helper()
	bt, hs := testBuffers(p)
	cmds, err := resolve(p, hs)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := bindProgram(cmds, pipelineOf(maxThreads), bt)
	if err != nil {
		t.Fatal(err)
	}
	return prog[0], bt, hs
}

func TestCommandEncode(t *testing.T) {
	p := argmaxPlan()
	c, _, _ := bindPlan(t, p, 1024)
	c.label = 9
	t.Run("each step is patched, then encoded as one dispatch in a debug group", func(t *testing.T) {
		var r recorder
		c.encode(&r, plans.Step{Index: 2, Pos: 7, Batch: 1})
		want := []string{
			"push 9", "pipeline 7", "buffer 100+0 at 0", "buffer 200+4096 at 1",
			"bytes 00 02 00 00 03 00 00 00 01 00 00 00 00 00 00 00 at 2",
			"tgmem 256 at 0", "dispatch [1 1 1] [1024 1 1] threads=false", "pop",
		}
		if strings.Join(r.log, "\n") != strings.Join(want, "\n") {
			t.Fatalf("got\n%s\nwant\n%s", strings.Join(r.log, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("the plan's parameter bytes are copied, not aliased", func(t *testing.T) {
		if binary.LittleEndian.Uint32(p.Programs[0].Commands[0].Params[4:]) != 0 {
			t.Fatal("the plan's params were patched")
		}
	})
	t.Run("SetParam reaches the next encode", func(t *testing.T) {
		c.SetParam(8, 4, 0xabcd)
		var r recorder
		c.encode(&r, plans.Step{Index: 0})
		if !strings.Contains(strings.Join(r.log, "\n"), "bytes 00 02 00 00 01 00 00 00 cd ab 00 00") {
			t.Fatal(r.log)
		}
	})
	t.Run("SetParam outside the parameter struct is ignored", func(t *testing.T) {
		c.SetParam(14, 4, 0xffff)
		if got := len(c.Params()); got != 16 || binary.LittleEndian.Uint16(c.Params()[14:]) != 0 {
			t.Fatalf("params % x", c.Params())
		}
	})
	t.Run("encoding allocates nothing", func(t *testing.T) {
		var n counter
		s := plans.Step{Index: 1, Pos: 3, Batch: 1}
		if a := testing.AllocsPerRun(1000, func() { c.encode(&n, s) }); a != 0 {
			t.Fatalf("%v allocations per encode", a)
		}
	})
}

func TestBindingPatch(t *testing.T) {
	p := argmaxPlan()
	cmd := &p.Programs[0].Commands[0]
	cmd.Patches = append(cmd.Patches, plans.Patch{Kind: plans.PatchToken, Target: plans.PatchBinding, At: 1, Base: 8, Stride: 4})
	c, _, _ := bindPlan(t, p, 0)
	var r recorder
	c.encode(&r, plans.Step{Index: 3})
	// Binding patches move the binding's offset; the wrap's page offset is
	// added on top.
	if !strings.Contains(strings.Join(r.log, "\n"), fmt.Sprintf("buffer 200+%d at 1", 4096+8+4*3)) {
		t.Fatal(r.log)
	}
}

// gatherPlan is a batch's gather_rows: x bound 256 bytes into its buffer,
// moved by a binding patch, so the bounds tail has something to follow.
func gatherPlan() *plans.Plan {
	k, _ := kernels.Lookup("gather_rows_f16")
	params := make([]byte, k.Params.Size)
	binary.LittleEndian.PutUint32(params, 2)      // n_rows
	binary.LittleEndian.PutUint32(params[4:], 1)  // n_cols
	binary.LittleEndian.PutUint32(params[16:], 1) // out_stride
	return onePlan("gather_rows_f16", plans.Command{
		Label: "gather", Pipeline: 0,
		Bindings:   []plans.Binding{{Slot: 0, Buffer: 0, Offset: 256}, {Slot: 1, Buffer: 1}, {Slot: 2, Buffer: 2}},
		Params:     params,
		ParamsSlot: uint32(k.ParamSlot),
		Grid:       [3]uint32{1, 2, 1}, Threadgroup: [3]uint32{256, 1, 1},
		Patches: []plans.Patch{{Kind: plans.PatchToken, Target: plans.PatchBinding, At: 0, Base: 256, Stride: 64}},
	}, []plans.BufferKind{plans.BufScratch, plans.BufIO, plans.BufScratch}, []uint64{1024, 64, 512})
}

func TestBoundsTail(t *testing.T) {
	c, _, _ := bindPlan(t, gatherPlan(), 0)
	tail := func(r *recorder) string {
		for _, l := range r.log {
			if strings.HasPrefix(l, "bytes ") {
				return l
			}
		}
		return ""
	}
	t.Run("the buffers' lengths from their offsets follow the parameter struct", func(t *testing.T) {
		var r recorder
		c.encode(&r, plans.Step{Index: 0})
		want := "bytes 02 00 00 00 01 00 00 00" + strings.Repeat(" 00", 8) + " 01 00 00 00" + strings.Repeat(" 00", 12) +
			" 00 03 00 00 00 00 00 00" + // x: 1024 - 256
			" 40 00 00 00 00 00 00 00" + // rows: 64
			" 00 02 00 00 00 00 00 00" + // out: 512
			strings.Repeat(" 00", 8) + " at 3" // the parameter slot: unbound
		if got := tail(&r); got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
	t.Run("a binding patch moves the length with the offset", func(t *testing.T) {
		var r recorder
		c.encode(&r, plans.Step{Index: 3}) // x at 256 + 3·64 = 448: 576 bytes left
		if got := tail(&r); !strings.Contains(got, " 01 00 00 00"+strings.Repeat(" 00", 12)+" 40 02 00 00 00 00 00 00 40 00") {
			t.Fatal(got)
		}
	})
	t.Run("SetParam cannot write the lengths", func(t *testing.T) {
		c.SetParam(32, 8, 1)
		if len(c.Params()) != 32 || binary.LittleEndian.Uint64(c.params[32:]) != 576 {
			t.Fatalf("params % x", c.params)
		}
	})
	t.Run("encoding with the lengths allocates nothing", func(t *testing.T) {
		var n counter
		s := plans.Step{Index: 2}
		if a := testing.AllocsPerRun(1000, func() { c.encode(&n, s) }); a != 0 {
			t.Fatalf("%v allocations per encode", a)
		}
	})
}

func TestBindRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plan  func(*plans.Command)                             // edits the plan: device.Resolve refuses
		edit  func(*device.Command, *buffers, []device.Buffer) // edits the resolved command: Metal refuses
		max   int
		match string
		is    error
	}{
		{name: "a param patch outside the parameters", plan: func(c *plans.Command) { c.Patches[0].At = 14 },
			match: "outside the 16 parameter bytes", is: device.ErrCommand},
		{name: "an empty grid", plan: func(c *plans.Command) { c.Grid[1] = 0 }, match: "empty launch", is: device.ErrCommand},
		{name: "a slot past Metal's 31", edit: func(c *device.Command, _ *buffers, hs []device.Buffer) {
			for len(c.Slots) < 32 {
				c.Slots = append(c.Slots, device.Slot{})
			}
			c.Slots[31] = device.Slot{Buf: hs[0]}
		}, match: "slot 31", is: ErrUnsupported},
		{name: "a buffer this backend did not make", edit: func(c *device.Command, _ *buffers, _ []device.Buffer) {
			c.Slots[0].Buf = device.NewBuffer(99, 1024)
		}, match: "not made by this backend", is: ErrUnsupported},
		{name: "a buffer freed since", edit: func(c *device.Command, bt *buffers, hs []device.Buffer) {
			bt.remove(hs[1].ID())
		}, match: "buffer 2 was not made by this backend", is: ErrUnsupported},
		{name: "a threadgroup larger than the pipeline allows", max: 512, match: "allows 512", is: ErrUnsupported},
		{name: "inline parameters over 4 KiB", edit: func(c *device.Command, _ *buffers, _ []device.Buffer) {
			c.Params = make([]byte, 5000)
		}, match: "setBytes takes at most 4096", is: ErrUnsupported},
	} {
		t.Run(tc.name+" is refused, naming the command", func(t *testing.T) {
			p := argmaxPlan()
			if tc.plan != nil {
				tc.plan(&p.Programs[0].Commands[0])
			}
			bt, hs := testBuffers(p)
			cmds, err := resolve(p, hs)
			if err == nil {
				if tc.edit != nil {
					tc.edit(&cmds[0], bt, hs)
				}
				_, err = bindProgram(cmds, pipelineOf(tc.max), bt)
			}
			if err == nil || !strings.Contains(err.Error(), tc.match) || !strings.Contains(err.Error(), "[0] argmax") || !errors.Is(err, tc.is) {
				t.Fatalf("got %v, want an error naming [0] argmax and %q, wrapping %v", err, tc.match, tc.is)
			}
		})
	}
	t.Run("a pipeline that cannot be made is refused, naming the command", func(t *testing.T) {
		p := argmaxPlan()
		bt, hs := testBuffers(p)
		cmds, err := resolve(p, hs)
		if err != nil {
			t.Fatal(err)
		}
		_, err = bindProgram(cmds, func(pl plans.Pipeline) (*Pipeline, error) {
			return nil, fmt.Errorf("pipeline %s: no MSL: %w", pl.Key, ErrUnsupported)
		}, bt)
		if err == nil || err.Error() != "metal: [0] argmax: pipeline argmax_f16: no MSL: metal: unsupported" {
			t.Fatalf("got %v", err)
		}
	})
}

func TestCopy(t *testing.T) {
	bt := &buffers{}
	add := func(id uintptr, base uint64, size int) device.Buffer {
		return device.NewBuffer(bt.add(bufEntry{bufRef: bufRef{id: id, base: base}, size: size}), size)
	}
	tokens, readback, wrapped := add(100, 0, 256), add(200, 0, 64), add(300, 4096, 64)
	odd := add(400, 4098, 64) // a wrap whose bytes start 2 past a multiple of 4
	freed := add(500, 0, 64)
	bt.remove(freed.ID())
	for _, tc := range []struct {
		name      string
		dst       device.Buffer
		dstOff    int
		src       device.Buffer
		srcOff, n int
		want      string
	}{
		{"a chain's tokens go to the readback buffer", readback, 0, tokens, 4, 64, "copy 100+4 to 200+0 size 64"},
		{"the last token goes to slot 0 of the same buffer", tokens, 0, tokens, 64, 4, "copy 100+64 to 100+0 size 4"},
		{"a copy lands at its offset inside the destination", readback, 8, tokens, 20, 8, "copy 100+20 to 200+8 size 8"},
		{"a wrap's page offset is added", readback, 0, wrapped, 8, 4, "copy 300+4104 to 200+0 size 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op, err := resolveCopy(bt, tc.dst, tc.dstOff, tc.src, tc.srcOff, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			var r recorder
			r.copyBuffer(&op)
			if got := strings.Join(r.log, "\n"); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name   string
		dst    device.Buffer
		dstOff int
		src    device.Buffer
		srcOff int
		n      int
		match  string
	}{
		{"a range past the source", readback, 0, tokens, 252, 8, "out of range"},
		{"a range past the destination", readback, 60, tokens, 0, 8, "out of range"},
		{"a negative offset", readback, -4, tokens, 0, 4, "out of range"},
		{"an empty copy", readback, 0, tokens, 0, 0, "out of range"},
		{"a size not a multiple of 4", readback, 0, tokens, 0, 6, "multiples of 4"},
		{"an offset not a multiple of 4", readback, 2, tokens, 0, 4, "multiples of 4"},
		{"a wrap whose page offset is not a multiple of 4", readback, 0, odd, 0, 4, "multiples of 4"},
		{"a buffer this backend did not make", device.NewBuffer(77, 8), 0, tokens, 0, 4, "not made by this backend"},
		{"a freed buffer", readback, 0, freed, 0, 4, "not made by this backend"},
		{"overlapping ranges of one buffer", tokens, 0, tokens, 4, 8, "overlap"},
	} {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			_, err := resolveCopy(bt, tc.dst, tc.dstOff, tc.src, tc.srcOff, tc.n)
			if err == nil || !strings.Contains(err.Error(), tc.match) {
				t.Fatalf("got %v, want an error saying %q", err, tc.match)
			}
		})
	}
	t.Run("resolving a copy allocates nothing", func(t *testing.T) {
		if a := testing.AllocsPerRun(1000, func() { resolveCopy(bt, readback, 0, tokens, 4, 64) }); a != 0 {
			t.Fatalf("%v allocations per copy", a)
		}
	})
}
