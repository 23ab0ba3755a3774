package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// storiesPath is ../shared/models/stories260K.gguf relative to the
// repository root. A missing model fails the test: a test of a real file
// that silently skips proves nothing.
func storiesPath(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			p := filepath.Join(filepath.Dir(d), "shared", "models", "stories260K.gguf")
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("the test model is missing: %v", err)
			}
			return p
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no go.mod above %s", wd)
		}
	}
}

// enc crafts GGUF bytes by hand, including bytes no Builder would write.
type enc struct{ b []byte }

func (e *enc) u8(v uint8) *enc   { e.b = append(e.b, v); return e }
func (e *enc) u16(v uint16) *enc { e.b = binary.LittleEndian.AppendUint16(e.b, v); return e }
func (e *enc) u32(v uint32) *enc { e.b = binary.LittleEndian.AppendUint32(e.b, v); return e }
func (e *enc) u64(v uint64) *enc { e.b = binary.LittleEndian.AppendUint64(e.b, v); return e }
func (e *enc) raw(b ...byte) *enc {
	e.b = append(e.b, b...)
	return e
}
func (e *enc) str(s string) *enc { return e.u64(uint64(len(s))).raw([]byte(s)...) }

// pad appends zeros up to a multiple of a.
func (e *enc) pad(a int) *enc {
	for len(e.b)%a != 0 {
		e.b = append(e.b, 0)
	}
	return e
}

// zeros appends n zero bytes.
func (e *enc) zeros(n int) *enc { e.b = append(e.b, make([]byte, n)...); return e }

func (e *enc) bytes() []byte { return e.b }

// header starts a file: magic, version 3, counts.
func header(nTensors, nKV uint64) *enc {
	return (&enc{}).raw([]byte(Magic)...).u32(3).u64(nTensors).u64(nKV)
}

func (e *enc) kvU32(key string, v uint32) *enc { return e.str(key).u32(uint32(TypeUint32)).u32(v) }
func (e *enc) kvStr(key, v string) *enc        { return e.str(key).u32(uint32(TypeString)).str(v) }

// tensor appends a tensor table entry.
func (e *enc) tensor(name string, dims []uint64, typ uint32, off uint64) *enc {
	e.str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		e.u64(d)
	}
	return e.u32(typ).u64(off)
}

func read(b []byte) (*File, error) { return Read(bytes.NewReader(b), int64(len(b))) }

// mustWrite writes a Builder to memory.
func mustWrite(t testing.TB, b *Builder) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := b.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

// everyType is one metadata pair of each value type, nested arrays
// included, with values at the edges of their ranges.
func everyType() []KV {
	inner := Int32s([]int32{-1, 2})
	nested, _ := Arrays(inner, Strings([]string{"x", ""}), Float64s(nil))
	deeper, _ := Arrays(nested, nested)
	return []KV{
		{Key: "t.u8", Value: Uint8(math.MaxUint8)},
		{Key: "t.i8", Value: Int8(math.MinInt8)},
		{Key: "t.u16", Value: Uint16(math.MaxUint16)},
		{Key: "t.i16", Value: Int16(math.MinInt16)},
		{Key: "t.u32", Value: Uint32(math.MaxUint32)},
		{Key: "t.i32", Value: Int32(math.MinInt32)},
		{Key: "t.f32", Value: Float32(float32(math.Inf(-1)))},
		{Key: "t.bool", Value: Bool(true)},
		{Key: "t.str", Value: String("héllo\x00world")},
		{Key: "t.str.empty", Value: String("")},
		{Key: "t.u64", Value: Uint64(math.MaxUint64)},
		{Key: "t.i64", Value: Int64(math.MinInt64)},
		{Key: "t.f64", Value: Float64(math.NaN())},
		{Key: "a.u8", Value: Uint8s([]uint8{0, 1, 255})},
		{Key: "a.i8", Value: Int8s([]int8{-128, 127})},
		{Key: "a.u16", Value: Uint16s([]uint16{1, 65535})},
		{Key: "a.i16", Value: Int16s([]int16{-32768, 5})},
		{Key: "a.u32", Value: Uint32s([]uint32{7, math.MaxUint32})},
		{Key: "a.i32", Value: Int32s([]int32{-7, math.MaxInt32})},
		{Key: "a.f32", Value: Float32s([]float32{0.5, float32(math.Copysign(0, -1)), float32(math.NaN())})},
		{Key: "a.bool", Value: Bools([]bool{true, false, true})},
		{Key: "a.str", Value: Strings([]string{"<unk>", "", "▁the"})},
		{Key: "a.u64", Value: Uint64s([]uint64{math.MaxUint64})},
		{Key: "a.i64", Value: Int64s([]int64{math.MinInt64, 0})},
		{Key: "a.f64", Value: Float64s([]float64{1e300, -1e-300})},
		{Key: "a.empty", Value: Uint32s(nil)},
		{Key: "a.nested", Value: nested},
		{Key: "a.deeper", Value: deeper},
	}
}

// small is a small valid file: every value type, a tokenizer, three
// tensors. The last tensor fills its alignment exactly, so every proper
// prefix of the file is truncated somewhere that matters.
func small(t testing.TB) []byte {
	t.Helper()
	b := NewBuilder()
	b.SetString("general.architecture", "llama")
	for _, kv := range everyType() {
		b.Set(kv.Key, kv.Value)
	}
	b.SetStrings("tokenizer.ggml.tokens", []string{"<unk>", "<s>", "</s>", "a"})
	b.Set("tokenizer.ggml.scores", Float32s([]float32{0, 0, 0, -1.5}))
	b.Set("tokenizer.ggml.token_type", Int32s([]int32{2, 3, 3, 1}))
	b.SetStrings("tokenizer.ggml.merges", []string{"a b"})
	b.AddTensor("tok", dtype.F32, []uint64{3}, seq(12))
	b.AddTensor("q", dtype.Q8_0, []uint64{32, 2}, seq(68))
	b.AddTensor("last", dtype.F16, []uint64{16}, seq(32))
	return mustWrite(t, b)
}

// seq is n bytes 1, 2, 3, ...
func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i + 1)
	}
	return b
}

// checkErr fails unless err wraps kind and its message holds every want.
func checkErr(t *testing.T, err, kind error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", kind)
	}
	if !errors.Is(err, kind) {
		t.Errorf("error %q does not wrap %v", err, kind)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

// second is the error of a two-result call.
func second[T any](_ T, err error) error { return err }
