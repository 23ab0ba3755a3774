package gguf

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

const (
	tU8     = uint32(TypeUint8)
	tU32    = uint32(TypeUint32)
	tU64    = uint32(TypeUint64)
	tString = uint32(TypeString)
	tArray  = uint32(TypeArray)
	f32     = uint32(dtype.F32)
)

// hostile is a crafted file and what reading it must say.
type hostile struct {
	name string
	file []byte
	kind error    // the sentinel the error wraps
	want []string // substrings of the message
}

// hostileFiles are the files that broke other GGUF readers, and more: each
// count, length and offset pushed past what the file holds, or past a limit.
func hostileFiles() []hostile {
	var hs []hostile
	add := func(name string, file []byte, kind error, want ...string) {
		hs = append(hs, hostile{name, file, kind, want})
	}
	max64 := uint64(math.MaxUint64)

	// The preamble.
	add("an empty file", nil, ErrTruncated, "header at offset 0", "magic needs 4 bytes")
	add("a GGML magic", []byte("GGML\x03\x00\x00\x00"), ErrNotGGUF, `magic "GGML"`)
	add("a pre-GGUF GGJT file", []byte("tjgg\x03\x00\x00\x00"), ErrNotGGUF, "pre-GGUF")
	add("version 0", (&enc{}).raw([]byte("GGUF")...).u32(0).u64(0).u64(0).bytes(), ErrUnsupportedVersion, "at offset 4", "version 0")
	add("version 1", (&enc{}).raw([]byte("GGUF")...).u32(1).u64(0).u64(0).bytes(), ErrUnsupportedVersion, "v1")
	add("version 4", (&enc{}).raw([]byte("GGUF")...).u32(4).u64(0).u64(0).bytes(), ErrUnsupportedVersion, "version 4 is newer")
	add("a big-endian version 3", (&enc{}).raw([]byte("GGUF")...).u32(0x03000000).u64(0).u64(0).bytes(), ErrUnsupportedVersion, "byte-swapped", "little-endian")
	add("a file that ends in the counts", (&enc{}).raw([]byte("GGUF")...).u32(3).u32(0).bytes(), ErrTruncated, "tensor count needs 8 bytes")
	add("a tensor count of 2^63", header(1<<63, 0).zeros(64).bytes(), ErrTruncated, "9223372036854775808 tensors", "at least 2^63 bytes")
	add("a key count of 2^64-1", header(0, max64).zeros(64).bytes(), ErrTruncated, "18446744073709551615 metadata pairs")
	add("a key count just over what fits", header(0, 2).zeros(27).bytes(), ErrTruncated, "at least 28 bytes, but only 27 remain")

	// Metadata.
	add("a key length of 2^64-1", header(0, 1).u64(max64).zeros(16).bytes(), ErrLimit, "metadata pair 0 at offset 24", "key of 18446744073709551615 bytes")
	add("a key longer than the file", header(0, 1).u64(100).zeros(10).bytes(), ErrTruncated, "metadata pair 0 at offset 24", "key of 100 bytes runs past the end")
	add("an empty key", header(0, 1).str("").u32(tU8).u8(0).zeros(8).bytes(), ErrCorrupt, `key "" at offset 24`, "empty key")
	add("a duplicate key", header(0, 2).kvU32("a", 1).kvU32("a", 2).bytes(), ErrCorrupt, `key "a" at offset 41`, "duplicate key (first at offset 24)")
	add("value type 13", header(0, 1).str("k").u32(13).zeros(8).bytes(), ErrCorrupt, `key "k" at offset 33`, "unknown value type 13")
	add("value type 2^32-1", header(0, 1).str("k").u32(math.MaxUint32).zeros(8).bytes(), ErrCorrupt, "unknown value type 4294967295")
	add("a string of 2^64-1 bytes", header(0, 1).str("k").u32(tString).u64(max64).zeros(8).bytes(), ErrLimit, `key "k" at offset 37`, "string of 18446744073709551615 bytes")
	add("a string longer than the file", header(0, 1).str("k").u32(tString).u64(1000).zeros(5).bytes(), ErrTruncated, "string of 1000 bytes runs past the end")
	add("a u32 cut short", header(0, 1).str("key").u32(tU32).u16(7).zeros(1).bytes(), ErrTruncated, `key "key" at offset 39`, "u32 needs 4 bytes")
	add("an array of 2^63 elements", header(0, 1).str("k").u32(tArray).u32(tU8).u64(1<<63).zeros(8).bytes(), ErrLimit, "array of 9223372036854775808 u8")
	add("an array of 2^64-1 strings", header(0, 1).str("k").u32(tArray).u32(tString).u64(max64).zeros(8).bytes(), ErrLimit, "array of 18446744073709551615 str")
	add("an array of u64 longer than the file", header(0, 1).str("k").u32(tArray).u32(tU64).u64(1000).zeros(100).bytes(), ErrTruncated, "array of 1000 u64 needs at least 8000 bytes, but only 100 remain")
	add("strings that cannot all have their lengths", header(0, 1).str("k").u32(tArray).u32(tString).u64(10).zeros(79).bytes(), ErrTruncated, "array of 10 str needs at least 80 bytes")
	add("arrays that cannot all have their headers", header(0, 1).str("k").u32(tArray).u32(tArray).u64(10).zeros(119).bytes(), ErrTruncated, "array of 10 arr needs at least 120 bytes")
	add("an array of element type 13", header(0, 1).str("k").u32(tArray).u32(13).u64(0).bytes(), ErrCorrupt, "unknown array element type 13")
	deep := header(0, 1).str("k").u32(tArray)
	for range MaxDepth {
		deep.u32(tArray).u64(1)
	}
	add("arrays nested 9 deep", deep.zeros(24).bytes(), ErrLimit, `key "k"`, "nested more than 8 deep")
	add("alignment 0", header(0, 1).kvU32(alignmentKey, 0).bytes(), ErrCorrupt, `key "general.alignment" at offset 24`, "alignment 0 is not a power of two")
	add("alignment 3", header(0, 1).kvU32(alignmentKey, 3).bytes(), ErrCorrupt, "alignment 3 is not a power of two")
	add("alignment 2^31", header(0, 1).kvU32(alignmentKey, 1<<31).bytes(), ErrLimit, "alignment 2147483648 is larger than the 1048576 allowed")
	add("alignment 2^30", header(0, 1).kvU32(alignmentKey, 1<<30).bytes(), ErrLimit, "alignment 1073741824")
	add("an alignment stored as a u64", header(0, 1).str(alignmentKey).u32(tU64).u64(32).bytes(), ErrCorrupt, "alignment is u64, but must be a u32")
	add("an alignment stored as a string", header(0, 1).kvStr(alignmentKey, "32").bytes(), ErrCorrupt, "alignment is str")

	// The tensor table.
	long := strings.Repeat("x", 64)
	add("a tensor name of 64 bytes", header(1, 0).tensor(long, []uint64{1}, f32, 0).pad(32).zeros(32).bytes(), ErrLimit, "tensor table entry 0 at offset 24", "tensor name of 64 bytes is longer than the 63 allowed")
	add("a tensor name of 2^64-1 bytes", header(1, 0).u64(max64).zeros(32).bytes(), ErrLimit, "tensor name of 18446744073709551615 bytes")
	dup := header(2, 0).tensor("a", []uint64{8}, f32, 0)
	dupAt := len(dup.b)
	add("a duplicate tensor name", dup.tensor("a", []uint64{8}, f32, 32).pad(32).zeros(64).bytes(), ErrCorrupt,
		fmt.Sprintf(`tensor "a" at offset %d`, dupAt), "duplicate tensor name (first at offset 24)")
	add("5 dimensions", header(1, 0).tensor("t", []uint64{1, 1, 1, 1, 1}, f32, 0).pad(32).zeros(4).bytes(), ErrCorrupt, `tensor "t" at offset 24`, "5 dimensions, more than the 4")
	add("2^32-1 dimensions", header(1, 0).str("t").u32(math.MaxUint32).zeros(64).bytes(), ErrCorrupt, "4294967295 dimensions")
	add("a negative dimension", header(1, 0).tensor("t", []uint64{1 << 63}, f32, 0).pad(32).bytes(), ErrCorrupt, "dimension 0 is negative")
	add("dimensions whose product overflows", header(1, 0).tensor("t", []uint64{1 << 32, 1 << 32}, f32, 0).pad(32).bytes(), ErrCorrupt, "shape [4294967296 4294967296] has more elements than an int64")
	add("a product that overflows in the last dimension", header(1, 0).tensor("t", []uint64{3, 1 << 20, 1 << 20, 1 << 22}, f32, 0).pad(32).bytes(), ErrCorrupt, "more elements than an int64")
	add("a byte size that overflows", header(1, 0).tensor("t", []uint64{1 << 62}, f32, 0).pad(32).bytes(), ErrCorrupt, "shape [4611686018427387904]", "overflow")
	add("retired type code 4", header(1, 0).tensor("t", []uint64{32}, 4, 0).pad(32).zeros(32).bytes(), ErrCorrupt, `tensor "t" at offset 24`, "type code 4")
	add("type code 99", header(1, 0).tensor("t", []uint64{32}, 99, 0).pad(32).zeros(32).bytes(), ErrCorrupt, "type code 99")
	add("type code 2^32-1", header(1, 0).tensor("t", []uint64{32}, math.MaxUint32, 0).pad(32).zeros(32).bytes(), ErrCorrupt, "type code 4294967295")
	add("a Q4_0 row that is not whole blocks", header(1, 0).tensor("t", []uint64{33, 32}, uint32(dtype.Q4_0), 0).pad(32).zeros(1024).bytes(), ErrCorrupt, "rows of 33 elements are not a whole number of Q4_0 blocks")
	add("a quantized tensor with no dimensions", header(1, 0).tensor("t", nil, uint32(dtype.Q8_0), 0).pad(32).zeros(64).bytes(), ErrCorrupt, "rows of 1 elements")
	add("a table that ends in a tensor", header(1, 0).str("t").u32(2).u64(8).zeros(4).bytes(), ErrTruncated, `tensor "t"`, "dimension needs 8 bytes")

	// Where the data lies.
	add("an offset that is not aligned", header(1, 0).tensor("t", []uint64{1}, f32, 4).pad(32).zeros(64).bytes(), ErrCorrupt, `tensor "t" at offset 24`, "data offset 4 is not a multiple of the alignment 32")
	add("an offset that wraps", header(1, 0).tensor("t", []uint64{8}, f32, max64-31).pad(32).zeros(64).bytes(), ErrCorrupt, "data offset 18446744073709551584 plus size 32 overflows")
	add("an offset just under 2^63", header(1, 0).tensor("t", []uint64{8}, f32, 1<<63-32).pad(32).zeros(64).bytes(), ErrCorrupt, "overflows")
	add("an offset past the end of the file", header(1, 0).tensor("t", []uint64{8}, f32, 1<<40).pad(32).zeros(64).bytes(), ErrTruncated,
		"data [1099511627840, 1099511627872) lies outside the file (size 128)")
	add("data that runs past the end of the file", header(1, 0).tensor("t", []uint64{8}, f32, 0).pad(32).zeros(31).bytes(), ErrTruncated,
		`tensor "t" at offset 24: data [64, 96) lies outside the file (size 95)`)
	add("a data section past the end of the file", header(1, 0).tensor("z", []uint64{0}, f32, 0).bytes(), ErrTruncated, "the data section would start at 64", "size 57")
	ov := header(2, 0).tensor("a", []uint64{16}, f32, 0)
	ovAt := len(ov.b)
	add("overlapping tensors", ov.tensor("b", []uint64{8}, f32, 32).pad(32).zeros(64).bytes(), ErrCorrupt,
		fmt.Sprintf(`tensor "b" at offset %d: data [128, 160) overlaps that of tensor "a" [96, 160)`, ovAt))
	add("a tensor inside another", header(2, 0).tensor("big", []uint64{64}, f32, 0).tensor("in", []uint64{1}, f32, 64).pad(32).zeros(256).bytes(), ErrCorrupt, `tensor "in"`, `overlaps that of tensor "big"`)
	add("two tensors at one offset", header(2, 0).tensor("a", []uint64{1}, f32, 0).tensor("b", []uint64{1}, f32, 0).pad(32).zeros(32).bytes(), ErrCorrupt, "overlaps")
	return hs
}

func TestHostileFiles(t *testing.T) {
	for _, h := range hostileFiles() {
		t.Run(h.name, func(t *testing.T) {
			f, err := read(h.file)
			if err == nil {
				t.Fatalf("read it: %d keys, %d tensors", len(f.KVs), len(f.Tensors))
			}
			checkErr(t, err, h.kind, h.want...)
			if !strings.HasPrefix(err.Error(), "gguf: ") || !strings.Contains(err.Error(), " at offset ") {
				t.Errorf("error %q does not say where", err)
			}
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Offset < 0 || fe.Offset > int64(len(h.file)) {
				t.Errorf("error %q: no FormatError with an offset inside the file", err)
			}
		})
	}
}

func TestUnknownTypeCodesWrapDtypeError(t *testing.T) {
	for _, code := range []uint32{4, 5, 31, 36, 99} {
		_, err := read(header(1, 0).tensor("t", []uint64{32}, code, 0).pad(32).zeros(256).bytes())
		if !errors.Is(err, dtype.ErrUnknownType) || !errors.Is(err, ErrCorrupt) {
			t.Errorf("type %d: %v", code, err)
		}
	}
}

// Edges that must be accepted: what GGML accepts, at the limits we set.
func TestEdgesThatAreValid(t *testing.T) {
	nested := header(0, 1).str("k").u32(tArray)
	for range MaxDepth - 1 {
		nested.u32(tArray).u64(1)
	}
	nested.u32(tU8).u64(0)
	cases := []struct {
		name  string
		file  []byte
		check func(t *testing.T, f *File)
	}{
		{"an empty file with no padding", header(0, 0).bytes(), func(t *testing.T, f *File) {
			if f.DataOffset != 24 || f.HeaderSize != 24 {
				t.Errorf("data at %d, header %d", f.DataOffset, f.HeaderSize)
			}
		}},
		{"a zero dimension (GGML allows empty tensors)", header(1, 0).tensor("z", []uint64{0, 5}, f32, 0).pad(32).bytes(), func(t *testing.T, f *File) {
			if ti := f.Tensors[0]; ti.Size != 0 || ti.Elements() != 0 {
				t.Errorf("size %d, elements %d", ti.Size, ti.Elements())
			}
		}},
		{"empty tensors may share an offset", header(2, 0).tensor("a", []uint64{0}, f32, 0).tensor("b", []uint64{4, 0}, f32, 0).pad(32).bytes(), nil},
		{"a scalar: no dimensions is one element", header(1, 0).tensor("s", nil, f32, 0).pad(32).zeros(4).bytes(), func(t *testing.T, f *File) {
			if ti := f.Tensors[0]; ti.Size != 4 || ti.Elements() != 1 || len(ti.Dims) != 0 {
				t.Errorf("size %d, elements %d", ti.Size, ti.Elements())
			}
		}},
		{"a name of 63 bytes", header(1, 0).tensor(strings.Repeat("n", 63), []uint64{1}, f32, 0).pad(32).zeros(4).bytes(), nil},
		{"an empty tensor name (GGML allows it)", header(1, 0).tensor("", []uint64{1}, f32, 0).pad(32).zeros(4).bytes(), nil},
		{"arrays nested 8 deep", nested.bytes(), func(t *testing.T, f *File) {
			v, _ := f.Get("k")
			for range MaxDepth - 1 {
				els, ok := v.Array()
				if !ok || len(els) != 1 {
					t.Fatalf("not nested: %v", v)
				}
				v = els[0]
			}
			if v.ElemType() != TypeUint8 || v.Len() != 0 {
				t.Errorf("innermost %v", v)
			}
		}},
		{"alignment 1", header(1, 1).kvU32(alignmentKey, 1).tensor("t", []uint64{1}, f32, 3).zeros(7).bytes(), func(t *testing.T, f *File) {
			if f.Alignment != 1 || f.DataOffset != f.HeaderSize || f.Tensors[0].FileOffset != f.HeaderSize+3 {
				t.Errorf("alignment %d, data %d, header %d", f.Alignment, f.DataOffset, f.HeaderSize)
			}
		}},
		{"alignment 1 MiB", header(1, 1).kvU32(alignmentKey, MaxAlignment).tensor("t", []uint64{1}, f32, 0).pad(MaxAlignment).zeros(4).bytes(), func(t *testing.T, f *File) {
			if f.DataOffset != MaxAlignment {
				t.Errorf("data at %d", f.DataOffset)
			}
		}},
		{"tensors out of table order (GGML wants them packed; we need only no overlap)", header(2, 0).tensor("a", []uint64{8}, f32, 32).tensor("b", []uint64{8}, f32, 0).pad(32).zeros(64).bytes(), nil},
		{"a bool byte of 2 is true, as in GGML", header(0, 1).str("b").u32(uint32(TypeBool)).u8(2).bytes(), func(t *testing.T, f *File) {
			if b, err := f.GetBool("b"); err != nil || !b {
				t.Errorf("GetBool = %v, %v", b, err)
			}
		}},
		{"a data section that ends without its last padding", header(1, 0).tensor("t", []uint64{1}, f32, 0).pad(32).zeros(4).bytes(), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := read(c.file)
			if err != nil {
				t.Fatal(err)
			}
			if c.check != nil {
				c.check(t, f)
			}
		})
	}
}

// Every proper prefix of a valid file is a truncated file, whatever byte it
// ends at.
func TestTruncationAtEveryByte(t *testing.T) {
	full := small(t)
	if _, err := read(full); err != nil {
		t.Fatal(err)
	}
	for n := range len(full) {
		_, err := read(full[:n])
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d of %d: %v, want ErrTruncated", n, len(full), err)
		}
	}
}

// The section boundaries by name, with where the error must point.
func TestTruncationAtSectionBoundaries(t *testing.T) {
	full := small(t)
	f, err := read(full)
	if err != nil {
		t.Fatal(err)
	}
	last := f.Tensors[len(f.Tensors)-1]
	firstKV, lastKV := f.KVs[0], f.KVs[len(f.KVs)-1]
	cases := []struct {
		name string
		cut  int64
		want string
	}{
		{"inside the magic", 2, "magic needs 4 bytes"},
		{"after the magic", 4, "version needs 4 bytes"},
		{"after the version", 8, "tensor count needs 8 bytes"},
		{"after the tensor count", 16, "key count needs 8 bytes"},
		{"after the counts", 24, "need at least"},
		{"inside the first key", firstKV.Offset + 10, "need at least"},
		{"after the last key's name", lastKV.Offset + 8 + int64(len(lastKV.Key)), fmt.Sprintf("key %q", lastKV.Key)},
		{"at the start of the tensor table", f.Tensors[0].InfoOffset, "tensor table entry 0"},
		{"inside a tensor's dimensions", f.Tensors[1].InfoOffset + 8 + int64(len(f.Tensors[1].Name)) + 4 + 3, fmt.Sprintf("tensor %q", f.Tensors[1].Name)},
		{"at the end of the tensor table", f.HeaderSize, "the data section would start at"},
		{"inside the header padding", f.DataOffset - 1, "the data section would start at"},
		{"at the start of the data", f.DataOffset, "lies outside the file"},
		{"inside the last tensor", last.FileOffset + last.Size/2, fmt.Sprintf("tensor %q at offset %d: data [%d, %d) lies outside the file", last.Name, last.InfoOffset, last.FileOffset, last.FileOffset+last.Size)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := read(full[:c.cut])
			checkErr(t, err, ErrTruncated, c.want)
		})
	}
}

// A reader that runs dry before the size it was promised.
func TestReaderShorterThanItsSize(t *testing.T) {
	full := small(t)
	_, err := Read(bytes.NewReader(full[:100]), int64(len(full)))
	checkErr(t, err, ErrTruncated, "file ends before its stated size")
}

// No claim in a file makes Read allocate more than the file justifies:
// a few hundred bytes that claim 2^30-element arrays, 2^63 tensors or a
// 1 GiB string cost the read-ahead window and little else.
func TestHostileCountsAllocateLittle(t *testing.T) {
	for _, h := range hostileFiles() {
		alloc := allocated(func() { _, _ = read(h.file) })
		if limit := uint64(readWindow + 16<<10 + 16*len(h.file)); alloc > limit {
			t.Errorf("%s: %d bytes allocated reading a %d-byte file (limit %d)", h.name, alloc, len(h.file), limit)
		}
	}
	// A 1 GiB string claim in a file that has the bytes for the claim's
	// length field but not the string: the check comes before the allocation.
	file := header(0, 1).str("k").u32(tString).u64(MaxStringLen).zeros(1 << 16).bytes()
	if alloc := allocated(func() { _, _ = read(file) }); alloc > 1<<20 {
		t.Errorf("a 1 GiB string claim allocated %d bytes", alloc)
	}
}

// Valid files of small elements cost memory in proportion to their size.
func TestDenseArraysAllocateInProportion(t *testing.T) {
	const n = 1 << 16
	cases := []struct {
		name string
		file []byte
	}{
		{"empty nested arrays", func() []byte {
			e := header(0, 1).str("k").u32(tArray).u32(tArray).u64(n)
			for range n {
				e.u32(tU8).u64(0)
			}
			return e.bytes()
		}()},
		{"empty strings", header(0, 1).str("k").u32(tArray).u32(tString).u64(n).zeros(8 * n).bytes()},
		{"bools", header(0, 1).str("k").u32(tArray).u32(uint32(TypeBool)).u64(n).zeros(n).bytes()},
	}
	for _, c := range cases {
		alloc := allocated(func() {
			if _, err := read(c.file); err != nil {
				t.Fatal(err)
			}
		})
		if limit := uint64(8*len(c.file) + readWindow + 64<<10); alloc > limit {
			t.Errorf("%s: %d bytes allocated for a %d-byte file (limit %d)", c.name, alloc, len(c.file), limit)
		}
	}
}

func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
