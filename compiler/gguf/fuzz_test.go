package gguf

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// The fuzz targets feed Read hostile bytes, whole files or one section
// inside a valid frame. Whatever the input, Read must return (never panic,
// hang or balloon), its errors must say where and wrap a sentinel, and what
// it accepts must satisfy every invariant it promises and survive a rewrite
// through Builder. Seeds are the crafted files of hostile_test.go and valid
// files, kept in code.

func FuzzHeader(f *testing.F) {
	for _, h := range hostileFiles() {
		f.Add(h.file)
	}
	f.Add(small(f))
	f.Add(header(0, 0).bytes())
	f.Add(mustWrite(f, everyTypeBuilder(64)))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFile(t, data)
	})
}

func FuzzMetadata(f *testing.F) {
	for _, h := range hostileFiles() {
		if n, k, sec, ok := split(h.file); ok && n == 0 {
			f.Add(k, sec)
		}
	}
	if _, k, sec, ok := split(mustWrite(f, everyTypeBuilder(0))); ok {
		f.Add(k, sec)
	}
	f.Fuzz(func(t *testing.T, nKV uint64, section []byte) {
		checkFile(t, append(header(0, nKV).bytes(), section...))
	})
}

func FuzzTensorInfo(f *testing.F) {
	for _, h := range hostileFiles() {
		if n, k, sec, ok := split(h.file); ok && k == 0 {
			f.Add(n, uint32(0), sec)
		}
	}
	for _, align := range []uint32{0, 1, 32, 64} {
		b := NewBuilder()
		b.AddTensor("a", dtype.F32, []uint64{3, 2}, seq(24))
		b.AddTensor("b", dtype.Q4_0, []uint64{64}, seq(36))
		b.AddZeroTensor("c", dtype.F16, []uint64{0, 7})
		file := mustWrite(f, b)
		n, _, sec, _ := split(file)
		f.Add(n, align, sec)
	}
	f.Fuzz(func(t *testing.T, nTensors uint64, align uint32, section []byte) {
		e := header(nTensors, 0)
		if align != 0 {
			e = header(nTensors, 1).kvU32(alignmentKey, align)
		}
		checkFile(t, append(e.bytes(), section...))
	})
}

func FuzzTokenizerArrays(f *testing.F) {
	// The arrays of the real stories260K vocabulary.
	raw, err := os.ReadFile(storiesPath(f))
	if err != nil {
		f.Fatal(err)
	}
	sf, err := read(raw)
	if err != nil {
		f.Fatal(err)
	}
	payload := func(key string) (uint64, []byte) {
		kv, _ := sf.KV(key)
		start := kv.Offset + 8 + int64(len(key)) + 4 + 4 // key, type, element type
		n := binary.LittleEndian.Uint64(raw[start:])
		end := sf.HeaderSize
		for _, o := range sf.KVs {
			if o.Offset > kv.Offset {
				end = min(end, o.Offset)
			}
		}
		return n, raw[start+8 : end]
	}
	// Only the first tokens: the fuzzer minimizes every new input it
	// finds, and time spent minimizing kilobytes is time not fuzzing.
	const keep = 24
	nt, tok := payload("tokenizer.ggml.tokens")
	_, score := payload("tokenizer.ggml.scores")
	_, typ := payload("tokenizer.ggml.token_type")
	if nt != 512 {
		f.Fatalf("stories260K has %d tokens, want 512", nt)
	}
	tokEnd := 0
	for range keep {
		tokEnd += 8 + int(binary.LittleEndian.Uint64(tok[tokEnd:]))
	}
	f.Add(uint64(keep), tok[:tokEnd], uint64(keep), score[:4*keep], uint64(keep), typ[:4*keep], uint64(0), []byte(nil))

	// A small BPE vocabulary with merges.
	strs := func(ss ...string) []byte {
		e := &enc{}
		for _, s := range ss {
			e.str(s)
		}
		return e.bytes()
	}
	f.Add(uint64(3), strs("a", "b", "ab"), uint64(3), make([]byte, 12), uint64(3), (&enc{}).u32(1).u32(1).u32(1).bytes(), uint64(1), strs("a b"))
	// Counts that lie.
	f.Add(uint64(1<<63), strs("a"), uint64(0), []byte(nil), uint64(0), []byte(nil), uint64(0), []byte(nil))
	f.Add(uint64(2), strs("a"), uint64(3), make([]byte, 8), uint64(1<<40), make([]byte, 4), uint64(5), strs("a b"))
	f.Add(uint64(1), (&enc{}).u64(1<<64-1).bytes(), uint64(0), []byte(nil), uint64(0), []byte(nil), uint64(0), []byte(nil))

	f.Fuzz(func(t *testing.T, nTok uint64, tok []byte, nScore uint64, score []byte, nType uint64, typ []byte, nMerge uint64, merge []byte) {
		e := header(0, 6).kvStr("general.architecture", "llama").kvStr("tokenizer.ggml.model", "gpt2")
		arr := func(key string, elem ValueType, n uint64, payload []byte) {
			e.str(key).u32(tArray).u32(uint32(elem)).u64(n).raw(payload...)
		}
		arr("tokenizer.ggml.tokens", TypeString, nTok, tok)
		arr("tokenizer.ggml.scores", TypeFloat32, nScore, score)
		arr("tokenizer.ggml.token_type", TypeInt32, nType, typ)
		arr("tokenizer.ggml.merges", TypeString, nMerge, merge)
		file := e.bytes()
		gf := checkFile(t, file)
		if gf == nil {
			return
		}
		// A lying count can swallow the pairs after it, so a key may be
		// missing; but a pair that is there reads as its type says.
		for _, c := range []struct {
			key  string
			elem ValueType
			get  func(Value) (int, bool)
		}{
			{"tokenizer.ggml.tokens", TypeString, func(v Value) (int, bool) { s, ok := v.Strings(); return len(s), ok }},
			{"tokenizer.ggml.scores", TypeFloat32, func(v Value) (int, bool) { s, ok := v.Float32s(); return len(s), ok }},
			{"tokenizer.ggml.token_type", TypeInt32, func(v Value) (int, bool) { s, ok := v.Int32s(); return len(s), ok }},
			{"tokenizer.ggml.merges", TypeString, func(v Value) (int, bool) { s, ok := v.Strings(); return len(s), ok }},
		} {
			v, ok := gf.Get(c.key)
			n, got := c.get(v)
			if want := ok && v.Type() == TypeArray && v.ElemType() == c.elem; want && (!got || n != v.Len()) {
				t.Fatalf("%s = %v: accessor gave %d, %v", c.key, v, n, got)
			}
		}
	})
}

// everyTypeBuilder is everyType's metadata with no tensors.
func everyTypeBuilder(align uint32) *Builder {
	b := NewBuilder()
	if align != 0 {
		b.SetAlignment(align)
	}
	for _, kv := range everyType() {
		b.Set(kv.Key, kv.Value)
	}
	return b
}

// split takes a v3 file apart into its counts and the bytes after them.
func split(file []byte) (nTensors, nKV uint64, rest []byte, ok bool) {
	if len(file) < 24 || string(file[:4]) != Magic || binary.LittleEndian.Uint32(file[4:]) != 3 {
		return 0, 0, nil, false
	}
	return binary.LittleEndian.Uint64(file[8:]), binary.LittleEndian.Uint64(file[16:]), file[24:], true
}

// checkFile reads data and checks what Read promises. It returns the File
// when data reads.
func checkFile(t *testing.T, data []byte) *File {
	t.Helper()
	f, err := read(data)
	if err != nil {
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("error without a place: %v", err)
		}
		n := 0
		for _, s := range []error{ErrNotGGUF, ErrUnsupportedVersion, ErrTruncated, ErrCorrupt, ErrLimit} {
			if errors.Is(err, s) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("error wraps %d sentinels: %v", n, err)
		}
		if fe.Offset < 0 || fe.Offset > int64(len(data)) {
			t.Fatalf("error points outside the file: %v", err)
		}
		return nil
	}
	size := int64(len(data))
	if f.FileSize != size || f.HeaderSize > size || f.DataOffset < f.HeaderSize || f.DataOffset > size {
		t.Fatalf("header %d, data %d, file %d", f.HeaderSize, f.DataOffset, size)
	}
	if a := f.Alignment; a <= 0 || a > MaxAlignment || a&(a-1) != 0 || len(f.Tensors) > 0 && f.DataOffset%a != 0 {
		t.Fatalf("alignment %d, data at %d", a, f.DataOffset)
	}
	if sha256.Sum256(data[:f.HeaderSize]) != f.HeaderHash {
		t.Fatal("HeaderHash is not the header's SHA-256")
	}
	for _, kv := range f.KVs {
		if v, ok := f.Get(kv.Key); !ok || !v.Equal(kv.Value) {
			t.Fatalf("Get(%q) does not find its pair", kv.Key)
		}
		_ = kv.Value.String()
	}
	spans := make([][2]int64, 0, len(f.Tensors))
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		want, err := ti.Type.RowBytes(ti.Elements())
		if err != nil || want != ti.Size || len(ti.Dims) > MaxDims || len(ti.Name) > MaxNameLen {
			t.Fatalf("%v: size %d, want %d (%v)", ti, ti.Size, want, err)
		}
		if ti.FileOffset != f.DataOffset+int64(ti.Offset) || ti.FileOffset+ti.Size > size || int64(ti.Offset)%f.Alignment != 0 {
			t.Fatalf("%v lies wrong (data at %d, file %d)", ti, f.DataOffset, size)
		}
		if got, ok := f.Tensor(ti.Name); !ok || got != ti {
			t.Fatalf("Tensor(%q) does not find it", ti.Name)
		}
		if ti.Size > 0 {
			spans = append(spans, [2]int64{ti.FileOffset, ti.FileOffset + ti.Size})
		}
	}
	slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	for i := 1; i < len(spans); i++ {
		if spans[i][0] < spans[i-1][1] {
			t.Fatalf("tensors overlap: %v and %v", spans[i-1], spans[i])
		}
	}
	rewrite(t, f)
	return f
}

// rewrite writes what was read through a Builder (data as zeros) and reads
// it back: the metadata and the table must come back equal.
func rewrite(t *testing.T, f *File) {
	b := NewBuilder()
	for _, kv := range f.KVs {
		b.Set(kv.Key, kv.Value)
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if ti.Name == "" {
			return // GGML reads an empty name, but we do not write one
		}
		b.AddZeroTensor(ti.Name, ti.Type, ti.Dims)
	}
	var buf bytes.Buffer
	if _, err := b.WriteTo(&buf); err != nil {
		t.Fatalf("Builder refuses what Read accepted: %v", err)
	}
	g, err := read(buf.Bytes())
	if err != nil {
		t.Fatalf("Read refuses what Builder wrote: %v", err)
	}
	if len(g.KVs) != len(f.KVs) || len(g.Tensors) != len(f.Tensors) {
		t.Fatalf("rewrite has %d keys and %d tensors, want %d and %d", len(g.KVs), len(g.Tensors), len(f.KVs), len(f.Tensors))
	}
	for i := range f.KVs {
		if g.KVs[i].Key != f.KVs[i].Key || !g.KVs[i].Value.Equal(f.KVs[i].Value) {
			t.Fatalf("key %d: rewrote %s = %v as %s = %v", i, f.KVs[i].Key, f.KVs[i].Value, g.KVs[i].Key, g.KVs[i].Value)
		}
	}
	for i := range f.Tensors {
		a, c := &f.Tensors[i], &g.Tensors[i]
		if a.Name != c.Name || a.Type != c.Type || !slices.Equal(a.Dims, c.Dims) || a.Size != c.Size {
			t.Fatalf("tensor %d: rewrote %v as %v", i, a, c)
		}
	}
}
