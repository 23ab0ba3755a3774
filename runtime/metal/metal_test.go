package metal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

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
