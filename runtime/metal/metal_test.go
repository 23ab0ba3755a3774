package metal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
)

func TestPageSpan(t *testing.T) {
	const page = PageSize
	for _, tc := range []struct {
		name       string
		addr       uintptr
		n          int
		start, len uintptr
		off        uint64
	}{
		{"an aligned page stays as it is", 4 * page, page, 4 * page, page, 0},
		{"a tensor inside one page wraps that page", 4*page + 100, 200, 4 * page, page, 100},
		{"the start rounds down and the end up", 4*page + 100, page, 4 * page, 2 * page, 100},
		{"a range ending on a boundary adds no page", 4*page + 100, page - 100, 4 * page, page, 100},
		{"an empty range still wraps one page", 4*page + 8, 0, 4 * page, page, 8},
		{"a large unaligned tensor", 3*page - 1, 10 * page, 2 * page, 11 * page, page - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := pageSpan(tc.addr, tc.n, page)
			if err != nil {
				t.Fatal(err)
			}
			if sp.Start != tc.start || sp.Length != tc.len || sp.Offset != tc.off {
				t.Fatalf("pageSpan(%#x, %d) = start %#x len %#x off %d, want %#x %#x %d", tc.addr, tc.n, sp.Start, sp.Length, sp.Offset, tc.start, tc.len, tc.off)
			}
			if sp.Start%page != 0 || sp.Length%page != 0 || uint64(sp.Start)+sp.Offset != uint64(tc.addr) ||
				sp.Start+sp.Length < tc.addr+uintptr(tc.n) {
				t.Fatalf("span %+v does not cover [%#x, +%d) in whole pages", sp, tc.addr, tc.n)
			}
		})
	}
	t.Run("a page size that is not a power of two is refused", func(t *testing.T) {
		if _, err := pageSpan(0, 1, 3000); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("an overflowing range is refused", func(t *testing.T) {
		if _, err := pageSpan(^uintptr(0)-10, 100, page); err == nil {
			t.Fatal("no error")
		}
	})
}

func TestEncodeConstant(t *testing.T) {
	for _, tc := range []struct {
		c    plans.Constant
		typ  uint64
		want []byte
	}{
		{plans.Bool(2, true), mtlDataTypeBool, []byte{1}},
		{plans.Bool(2, false), mtlDataTypeBool, []byte{0}},
		{plans.U32(0, 4096), mtlDataTypeUInt, []byte{0, 0x10, 0, 0}},
		{plans.I32(1, -2), mtlDataTypeInt, []byte{0xfe, 0xff, 0xff, 0xff}},
		{plans.F32(3, 1.5), mtlDataTypeFloat, binary.LittleEndian.AppendUint32(nil, math.Float32bits(1.5))},
	} {
		t.Run(tc.c.String()+" is encoded as Metal reads it", func(t *testing.T) {
			v, err := encodeConstant(tc.c)
			if err != nil {
				t.Fatal(err)
			}
			if v.dataType != tc.typ || v.index != tc.c.Index || string(v.bytes[:v.size]) != string(tc.want) {
				t.Fatalf("got type %d index %d bytes % x, want type %d index %d bytes % x", v.dataType, v.index, v.bytes[:v.size], tc.typ, tc.c.Index, tc.want)
			}
		})
	}
	t.Run("a bool other than 0 or 1 is refused", func(t *testing.T) {
		if _, err := encodeConstant(plans.Constant{Index: 0, Type: plans.ConstBool, Value: 2}); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("an unknown type is refused", func(t *testing.T) {
		if _, err := encodeConstant(plans.Constant{Type: 99}); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("an index given twice is refused", func(t *testing.T) {
		p := plans.Pipeline{Kernel: "k", Constants: []plans.Constant{plans.U32(0, 1), plans.U32(0, 2)}}
		if _, err := encodeConstants(p); err == nil {
			t.Fatal("no error")
		}
	})
}

func TestPipelineKey(t *testing.T) {
	cs := []plans.Constant{plans.U32(0, 4), plans.U32(1, 2), plans.Bool(2, false)}
	t.Run("a pipeline without a stored key gets CacheKey", func(t *testing.T) {
		if got, want := pipelineKey(plans.Pipeline{Kernel: "gemv_f32", Constants: cs}), "gemv_f32|0:u32=4|1:u32=2|2:bool=false"; got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
	t.Run("the stored key is used as it is", func(t *testing.T) {
		if got := pipelineKey(plans.Pipeline{Kernel: "x", Key: "stored"}); got != "stored" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("constants that differ give different keys", func(t *testing.T) {
		a := pipelineKey(plans.Pipeline{Kernel: "gemv_f32", Constants: cs})
		b := pipelineKey(plans.Pipeline{Kernel: "gemv_f32", Constants: []plans.Constant{plans.U32(0, 4), plans.U32(1, 2), plans.Bool(2, true)}})
		if a == b {
			t.Fatalf("both %q", a)
		}
	})
}

func TestCommandError(t *testing.T) {
	for _, tc := range []struct {
		name  string
		infos []encoderInfo
		want  string
	}{
		{"a faulted encoder's innermost signpost names the command",
			[]encoderInfo{{Label: "step 0", State: encoderStateCompleted, Signposts: []string{"embed"}},
				{Label: "step 1", State: encoderStateFaulted, Signposts: []string{"embed", "L6.attn.flash"}},
				{Label: "step 2", State: encoderStatePending}},
			"metal: command buffer failed in L6.attn.flash (step 1 of 3): page fault: Execution aborted"},
		{"a per-command encoder's label names the command",
			[]encoderInfo{{Label: "step 3: L0.ffn.down", State: encoderStateFaulted}},
			"metal: command buffer failed in L0.ffn.down (step 3 of 3): page fault: Execution aborted"},
		{"an affected encoder is named when none faulted",
			[]encoderInfo{{Label: "step 0", State: encoderStateCompleted}, {Label: "step 2", State: encoderStateAffected}},
			"metal: command buffer failed in step 2 of 3 (Metal named no command of its 180): page fault: Execution aborted"},
		{"no encoder infos", nil,
			"metal: command buffer failed (Metal named none of its 180 commands): page fault: Execution aborted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &CommandError{Commands: 180, Steps: 3, Code: 3, Message: "Execution aborted"}
			e.Label, e.Step = failedCommand(tc.infos)
			if got := e.Error(); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			if !errors.Is(e, ErrCommandBuffer) {
				t.Fatal("not ErrCommandBuffer")
			}
		})
	}
	t.Run("the runtime's wrapping keeps the program and the label", func(t *testing.T) {
		e := &CommandError{Label: "L2.attn.flash", Step: 5, Steps: 64, Code: 2, Message: "Caused GPU Timeout Error"}
		got := fmt.Errorf("runtime: decode at position 12: %w", e).Error()
		if !strings.Contains(got, "decode at position 12: metal: command buffer failed in L2.attn.flash (step 5 of 64): timeout: Caused GPU Timeout Error") {
			t.Fatal(got)
		}
	})
}

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

// argmaxCommand is decode's argmax of an m1 plan: logits in, the token
// slot i+1 patched into its parameters.
func argmaxCommand() (*plans.Command, [][]byte) {
	k, _ := kernels.Lookup("argmax_f16")
	params := make([]byte, k.Params.Size)
	binary.LittleEndian.PutUint32(params, 512)
	cmd := &plans.Command{
		Label: "argmax", Pipeline: 0,
		Bindings:          []plans.Binding{{Slot: 0, Buffer: 0}, {Slot: 1, Buffer: 1}},
		Params:            params,
		ParamsSlot:        uint32(k.ParamSlot),
		ThreadgroupMemory: 250,
		Grid:              [3]uint32{1, 1, 1}, Threadgroup: [3]uint32{1024, 1, 1},
		Patches: []plans.Patch{{Kind: plans.PatchArgmaxSlot, Target: plans.PatchParam, At: 4, Width: 4, Stride: 1}},
	}
	return cmd, [][]byte{make([]byte, 1024), make([]byte, 1024)}
}

func bindFor(t *testing.T, cmd *plans.Command, bufs [][]byte, maxThreads int) (*Command, error) {
	t.Helper()
	var reg registry
	reg.add(bufs[0], bufRef{id: 100})
	reg.add(bufs[1], bufRef{id: 200, base: 4096}) // as a no-copy wrap 4096 bytes into its page span
	return bindCommand(&Pipeline{Key: "argmax_f16", Kernel: "argmax_f16", MaxThreads: maxThreads, pso: 7}, cmd, bufs, reg.lookup)
}

func TestCommandEncode(t *testing.T) {
	cmd, bufs := argmaxCommand()
	c, err := bindFor(t, cmd, bufs, 1024)
	if err != nil {
		t.Fatal(err)
	}
	c.label = 9
	t.Run("each step is patched, then encoded as one dispatch in a debug group", func(t *testing.T) {
		var r recorder
		c.encode(&r, plans.Step{Index: 2, Pos: 7, Batch: 1})
		want := []string{
			"push 9", "pipeline 7", "buffer 100+0 at 0", "buffer 200+4096 at 1",
			"bytes 00 02 00 00 03 00 00 00 00 00 00 00 00 00 00 00 at 2",
			"tgmem 256 at 0", "dispatch [1 1 1] [1024 1 1] threads=false", "pop",
		}
		if strings.Join(r.log, "\n") != strings.Join(want, "\n") {
			t.Fatalf("got\n%s\nwant\n%s", strings.Join(r.log, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("the plan's parameter bytes are copied, not aliased", func(t *testing.T) {
		if binary.LittleEndian.Uint32(cmd.Params[4:]) != 0 {
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
	t.Run("encoding allocates nothing", func(t *testing.T) {
		var n counter
		s := plans.Step{Index: 1, Pos: 3, Batch: 1}
		if a := testing.AllocsPerRun(1000, func() { c.encode(&n, s) }); a != 0 {
			t.Fatalf("%v allocations per encode", a)
		}
	})
}

func TestBindingPatch(t *testing.T) {
	cmd, bufs := argmaxCommand()
	cmd.Patches = append(cmd.Patches, plans.Patch{Kind: plans.PatchToken, Target: plans.PatchBinding, At: 1, Base: 8, Stride: 4})
	c, err := bindFor(t, cmd, bufs, 0)
	if err != nil {
		t.Fatal(err)
	}
	var r recorder
	c.encode(&r, plans.Step{Index: 3})
	// Binding patches move the plan's offset; the wrap's page offset is
	// added on top.
	if !strings.Contains(strings.Join(r.log, "\n"), fmt.Sprintf("buffer 200+%d at 1", 4096+8+4*3)) {
		t.Fatal(r.log)
	}
}

func TestBindRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*plans.Command, [][]byte) [][]byte
		max   int
		match string
	}{
		{"a slot past Metal's 31", func(c *plans.Command, b [][]byte) [][]byte { c.Bindings[0].Slot = 31; return b }, 0, "slot 31"},
		{"a buffer this backend did not make", func(c *plans.Command, b [][]byte) [][]byte {
			return [][]byte{make([]byte, 8), b[1]}
		}, 0, "not allocated or wrapped"},
		{"a threadgroup larger than the pipeline allows", func(c *plans.Command, b [][]byte) [][]byte { return b }, 512, "allows 512"},
		{"a param patch outside the parameters", func(c *plans.Command, b [][]byte) [][]byte {
			c.Patches[0].At = 14
			return b
		}, 0, "outside the 16 parameter bytes"},
		{"inline parameters over 4 KiB", func(c *plans.Command, b [][]byte) [][]byte {
			c.Params = make([]byte, 5000)
			return b
		}, 0, "setBytes takes at most 4096"},
		{"an empty grid", func(c *plans.Command, b [][]byte) [][]byte { c.Grid[1] = 0; return b }, 0, "empty launch"},
	} {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			cmd, bufs := argmaxCommand()
			var reg registry
			reg.add(bufs[0], bufRef{id: 100})
			reg.add(bufs[1], bufRef{id: 200})
			bufs = tc.edit(cmd, bufs)
			_, err := bindCommand(&Pipeline{Key: "argmax_f16", Kernel: "argmax_f16", MaxThreads: tc.max}, cmd, bufs, reg.lookup)
			if err == nil || !strings.Contains(err.Error(), tc.match) || !strings.Contains(err.Error(), "argmax") {
				t.Fatalf("got %v, want an error naming the command and %q", err, tc.match)
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	var r registry
	big := make([]byte, 4096)
	r.add(big, bufRef{id: 1, base: 100})
	t.Run("a sub-slice binds at its offset inside the buffer", func(t *testing.T) {
		ref, ok := r.lookup(big[1000:2000])
		if !ok || ref.id != 1 || ref.base != 1100 {
			t.Fatalf("got %+v %v", ref, ok)
		}
	})
	t.Run("a slice outside every buffer is not found", func(t *testing.T) {
		if _, ok := r.lookup(make([]byte, 10)); ok {
			t.Fatal("found")
		}
	})
	t.Run("an empty slice at a buffer's start is found", func(t *testing.T) {
		if ref, ok := r.lookup(big[:0]); !ok || ref.id != 1 {
			t.Fatal("not found")
		}
	})
}

func TestCopy(t *testing.T) {
	var reg registry
	tokens, readback, wrapped := make([]byte, 256), make([]byte, 64), make([]byte, 64)
	reg.add(tokens, bufRef{id: 100})
	reg.add(readback, bufRef{id: 200})
	reg.add(wrapped, bufRef{id: 300, base: 4096})
	for _, tc := range []struct {
		name      string
		dst       []byte
		dstOff    int
		src       []byte
		srcOff, n int
		want      string
	}{
		{"a chain's tokens go to the readback buffer", readback, 0, tokens, 4, 64, "copy 100+4 to 200+0 size 64"},
		{"the last token goes to slot 0 of the same buffer", tokens, 0, tokens, 64, 4, "copy 100+64 to 100+0 size 4"},
		{"a sub-slice copies from its offset inside the buffer", readback, 8, tokens[16:], 4, 8, "copy 100+20 to 200+8 size 8"},
		{"a wrap's page offset is added", readback, 0, wrapped, 8, 4, "copy 300+4104 to 200+0 size 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op, err := resolveCopy(tc.dst, tc.dstOff, tc.src, tc.srcOff, tc.n, reg.lookup)
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
		dst    []byte
		dstOff int
		src    []byte
		srcOff int
		n      int
		match  string
	}{
		{"a range past the source", readback, 0, tokens, 250, 8, "out of range"},
		{"a range past the destination", readback, 60, tokens, 0, 8, "out of range"},
		{"an empty copy", readback, 0, tokens, 0, 0, "out of range"},
		{"a size not a multiple of 4", readback, 0, tokens, 0, 6, "multiples of 4"},
		{"an offset not a multiple of 4", readback, 2, tokens, 0, 4, "multiples of 4"},
		{"a buffer this backend did not make", make([]byte, 8), 0, tokens, 0, 4, "not allocated"},
		{"overlapping ranges of one buffer", tokens, 0, tokens, 4, 8, "overlap"},
	} {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			_, err := resolveCopy(tc.dst, tc.dstOff, tc.src, tc.srcOff, tc.n, reg.lookup)
			if err == nil || !strings.Contains(err.Error(), tc.match) {
				t.Fatalf("got %v, want an error saying %q", err, tc.match)
			}
		})
	}
	t.Run("resolving a copy allocates nothing", func(t *testing.T) {
		if a := testing.AllocsPerRun(1000, func() { resolveCopy(readback, 0, tokens, 4, 64, reg.lookup) }); a != 0 {
			t.Fatalf("%v allocations per copy", a)
		}
	})
}
