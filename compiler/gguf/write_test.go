package gguf

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// Read(Write(x)) == x: every value type, nested arrays, tensors of several
// types, with the data where the table says.
func TestRoundTrip(t *testing.T) {
	for _, align := range []uint32{0, 1, 8, 32, 64, 4096} {
		t.Run("alignment "+formatAlign(align), func(t *testing.T) {
			b := NewBuilder()
			if align != 0 {
				b.SetAlignment(align)
			}
			kvs := everyType()
			for _, kv := range kvs {
				b.Set(kv.Key, kv.Value)
			}
			type tensor struct {
				name string
				typ  dtype.Type
				dims []uint64
				data []byte
			}
			tensors := []tensor{
				{"a", dtype.F32, []uint64{3, 2}, seq(24)},
				{"b", dtype.Q4_K, []uint64{256, 1, 1, 2}, seq(288)},
				{"c", dtype.F16, []uint64{1}, seq(2)},
				{"empty", dtype.F32, []uint64{0}, nil},
				{"scalar", dtype.I32, nil, seq(4)},
			}
			for _, tn := range tensors {
				b.AddTensor(tn.name, tn.typ, tn.dims, tn.data)
			}
			file := mustWrite(t, b)
			f, err := read(file)
			if err != nil {
				t.Fatal(err)
			}
			want := int64(align)
			if align == 0 {
				want = DefaultAlignment
			}
			if f.Alignment != want || f.Version != Version || f.DataOffset%want != 0 {
				t.Errorf("alignment %d, version %d, data at %d", f.Alignment, f.Version, f.DataOffset)
			}
			got := f.KVs
			if align != 0 {
				if got[0].Key != alignmentKey {
					t.Fatalf("first key %q", got[0].Key)
				}
				got = got[1:]
			}
			if len(got) != len(kvs) {
				t.Fatalf("%d keys back, wrote %d", len(got), len(kvs))
			}
			for i, kv := range kvs {
				if got[i].Key != kv.Key || !got[i].Value.Equal(kv.Value) {
					t.Errorf("key %d: %s = %v, want %s = %v", i, got[i].Key, got[i].Value, kv.Key, kv.Value)
				}
			}
			if len(f.Tensors) != len(tensors) {
				t.Fatalf("%d tensors back, wrote %d", len(f.Tensors), len(tensors))
			}
			for i, tn := range tensors {
				ti := f.Tensors[i]
				if ti.Name != tn.name || ti.Type != tn.typ || !slices.Equal(ti.Dims, tn.dims) && len(tn.dims)+len(ti.Dims) > 0 {
					t.Errorf("tensor %d: %v, want %s %v %v", i, &ti, tn.name, tn.typ, tn.dims)
				}
				if got := file[ti.FileOffset : ti.FileOffset+ti.Size]; !bytes.Equal(got, tn.data) {
					t.Errorf("%s: data %v, want %v", tn.name, got, tn.data)
				}
				if ti.FileOffset%want != 0 {
					t.Errorf("%s at %d, not aligned to %d", tn.name, ti.FileOffset, want)
				}
			}
			if int64(len(file))%want != 0 {
				t.Errorf("file of %d bytes does not end padded to %d", len(file), want)
			}
		})
	}
}

func formatAlign(a uint32) string {
	if a == 0 {
		return "default"
	}
	return strconv.Itoa(int(a))
}

// Rewriting a real file through Read and Builder gives it back byte for
// byte: the Builder lays data out as llama.cpp's own writer does.
func TestRewriteStoriesIsIdentical(t *testing.T) {
	path := storiesPath(t)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Map(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b := NewBuilder()
	for _, kv := range m.KVs {
		b.Set(kv.Key, kv.Value)
	}
	for i := range m.Tensors {
		ti := &m.Tensors[i]
		b.AddTensor(ti.Name, ti.Type, ti.Dims, m.Data(ti))
	}
	if got := mustWrite(t, b); !bytes.Equal(got, orig) {
		n := 0
		for n < min(len(got), len(orig)) && got[n] == orig[n] {
			n++
		}
		t.Errorf("rewritten file differs from the original at byte %d (lengths %d and %d)", n, len(got), len(orig))
	}
}

// The same calls give the same bytes.
func TestWriteIsDeterministic(t *testing.T) {
	a, b := small(t), small(t)
	if !bytes.Equal(a, b) {
		t.Error("two writes of the same content differ")
	}
}

func TestSetReplacesInPlace(t *testing.T) {
	b := NewBuilder()
	b.SetUint32("a", 1)
	b.SetString("b", "x")
	b.SetUint32("a", 2)
	f, err := read(mustWrite(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.KVs) != 2 || f.KVs[0].Key != "a" {
		t.Fatalf("keys %v", f.KVs)
	}
	if n, _ := f.GetUint("a"); n != 2 {
		t.Errorf("a = %d", n)
	}
}

func TestConvenienceSetters(t *testing.T) {
	b := NewBuilder()
	b.SetInt32("i32", -4)
	b.SetUint64("u64", 1<<40)
	b.SetFloat32("f32", 0.25)
	b.SetBool("bool", true)
	f, err := read(mustWrite(t, b))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]Value{"i32": Int32(-4), "u64": Uint64(1 << 40), "f32": Float32(0.25), "bool": Bool(true)} {
		if got, _ := f.Get(key); !got.Equal(want) {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
}

// A tensor streamed through AddTensorFunc lands like one given as bytes, and
// a writer that writes too much or too little is caught.
func TestStreamedTensors(t *testing.T) {
	data := seq(4096)
	b := NewBuilder()
	b.AddTensorFunc("s", dtype.F32, []uint64{1024}, func(w io.Writer) error {
		for i := 0; i < len(data); i += 100 {
			if _, err := w.Write(data[i:min(i+100, len(data))]); err != nil {
				return err
			}
		}
		return nil
	})
	file := mustWrite(t, b)
	f, err := read(file)
	if err != nil {
		t.Fatal(err)
	}
	ti := f.Tensors[0]
	if !bytes.Equal(file[ti.FileOffset:ti.FileOffset+ti.Size], data) {
		t.Error("streamed data differs")
	}

	cases := []struct {
		name  string
		write func(io.Writer) error
		want  string
	}{
		{"too little", func(w io.Writer) error { _, err := w.Write(make([]byte, 10)); return err }, "wrote 10 bytes, want 16"},
		{"too much", func(w io.Writer) error { _, err := w.Write(make([]byte, 17)); return err }, "longer than its shape says"},
		{"an error", func(io.Writer) error { return errors.New("source gone") }, "source gone"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := NewBuilder()
			b.AddTensorFunc("bad", dtype.F32, []uint64{4}, c.write)
			_, err := b.WriteTo(io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `tensor "bad"`) {
				t.Errorf("error %v, want one naming the tensor and saying %q", err, c.want)
			}
		})
	}
}

// The Builder refuses what Read would refuse, names what it refuses, and
// keeps the first error.
func TestBuilderRefusesBadInput(t *testing.T) {
	deep := Uint8s(nil)
	for range MaxDepth {
		deep, _ = Arrays(deep)
	}
	cases := []struct {
		name  string
		build func(b *Builder)
		want  string
	}{
		{"an empty key", func(b *Builder) { b.SetUint32("", 1) }, "empty key"},
		{"a key over the limit", func(b *Builder) { b.SetUint32(strings.Repeat("k", MaxKeyLen+1), 1) }, "longer than the 65536 allowed"},
		{"a zero Value", func(b *Builder) { b.Set("k", Value{}) }, `key "k": invalid (zero) Value`},
		{"arrays nested 9 deep", func(b *Builder) { b.Set("k", deep) }, "nested more than 8 deep"},
		{"alignment 0", func(b *Builder) { b.SetAlignment(0) }, "power of two"},
		{"alignment 48", func(b *Builder) { b.SetAlignment(48) }, "power of two"},
		{"alignment 2 MiB", func(b *Builder) { b.SetAlignment(2 << 20) }, "power of two up to 1048576"},
		{"alignment as a u64", func(b *Builder) { b.SetUint64(alignmentKey, 32) }, "not u64 32"},
		{"an empty tensor name", func(b *Builder) { b.AddZeroTensor("", dtype.F32, []uint64{1}) }, "empty tensor name"},
		{"a name of 64 bytes", func(b *Builder) { b.AddZeroTensor(strings.Repeat("n", 64), dtype.F32, []uint64{1}) }, "longer than the 63"},
		{"a duplicate name", func(b *Builder) {
			b.AddZeroTensor("t", dtype.F32, []uint64{1})
			b.AddZeroTensor("t", dtype.F32, []uint64{1})
		}, `tensor "t": duplicate tensor name`},
		{"5 dimensions", func(b *Builder) { b.AddZeroTensor("t", dtype.F32, []uint64{1, 1, 1, 1, 1}) }, "5 dimensions"},
		{"an unknown type", func(b *Builder) { b.AddZeroTensor("t", dtype.Type(4), []uint64{32}) }, "unknown type code 4"},
		{"rows that are not whole blocks", func(b *Builder) { b.AddZeroTensor("t", dtype.Q4_K, []uint64{255, 2}) }, "not a whole number of Q4_K blocks"},
		{"a shape that overflows", func(b *Builder) { b.AddZeroTensor("t", dtype.F32, []uint64{1 << 32, 1 << 32}) }, "more elements than an int64"},
		{"a byte size that overflows", func(b *Builder) { b.AddZeroTensor("t", dtype.F64, []uint64{1 << 62}) }, "overflow"},
		{"data of the wrong size", func(b *Builder) { b.AddTensor("t", dtype.F16, []uint64{4}, make([]byte, 7)) }, "7 bytes of data, but F16 [4] takes 8"},
		{"a nil write function", func(b *Builder) { b.AddTensorFunc("t", dtype.F16, []uint64{4}, nil) }, "nil write function"},
		{"the first error wins", func(b *Builder) {
			b.SetUint32("", 1)
			b.AddZeroTensor("", dtype.F32, nil)
		}, "empty key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := NewBuilder()
			c.build(b)
			for _, err := range []error{b.Err(), second(b.WriteTo(io.Discard)), b.WriteFile(filepath.Join(t.TempDir(), "x.gguf"), true)} {
				checkErr(t, err, ErrInvalid, c.want)
			}
		})
	}
}

// Zero tensors: written as zeros by WriteTo and by WriteFile without sparse;
// skipped as holes with sparse. All three read back the same.
func TestZeroTensors(t *testing.T) {
	build := func() *Builder {
		b := NewBuilder()
		b.SetString("general.architecture", "llama")
		b.AddTensor("head", dtype.F32, []uint64{4}, seq(16))
		b.AddZeroTensor("big", dtype.Q8_0, []uint64{4096, 1024}) // 4.25 MiB
		b.AddTensor("mid", dtype.F32, []uint64{4}, seq(16))
		b.AddZeroTensor("tail", dtype.F16, []uint64{1 << 20}) // a trailing hole
		return b
	}
	mem := mustWrite(t, build())
	dir := t.TempDir()
	dense, sparse := filepath.Join(dir, "dense.gguf"), filepath.Join(dir, "sparse.gguf")
	if err := build().WriteFile(dense, false); err != nil {
		t.Fatal(err)
	}
	if err := build().WriteFile(sparse, true); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dense, sparse} {
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, mem) {
			t.Errorf("%s differs from WriteTo's bytes (%d vs %d bytes)", filepath.Base(p), len(got), len(mem))
		}
	}
	// The mode is any new file's under this umask, not a temporary file's
	// 0600.
	probe := filepath.Join(t.TempDir(), "probe")
	if err := os.WriteFile(probe, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	want, _ := os.Stat(probe)
	if st, err := os.Stat(sparse); err != nil || st.Mode().Perm() != want.Mode().Perm() {
		t.Errorf("mode %v, %v; want %v", st.Mode(), err, want.Mode().Perm())
	}
	bad := filepath.Join(dir, "no", "such", "x.gguf")
	if err := build().WriteFile(bad, true); err == nil || !strings.Contains(err.Error(), "writing "+bad+": ") || strings.Contains(err.Error(), ".tmp") {
		t.Errorf("WriteFile into a missing folder: %v; want an error naming %s and no temporary file", err, bad)
	}
	if used, ok := diskUsage(sparse); ok && used > 1<<20 {
		t.Errorf("the sparse file uses %d bytes of disk for %d bytes of mostly holes", used, len(mem))
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// A failed write leaves no file, and no temporary file, behind.
func TestWriteFileFailsCleanly(t *testing.T) {
	dir := t.TempDir()
	b := NewBuilder()
	b.AddTensorFunc("t", dtype.F32, []uint64{4}, func(io.Writer) error { return errors.New("no") })
	if err := b.WriteFile(filepath.Join(dir, "x.gguf"), false); err == nil {
		t.Fatal("no error")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
	if err := NewBuilder().WriteFile(filepath.Join(dir, "no", "such", "dir.gguf"), false); err == nil {
		t.Error("wrote into a missing directory")
	}
}
