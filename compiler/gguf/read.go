package gguf

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// Limits the reader enforces. docs/gguf.md#limits says why each is what it is.
const (
	Magic            = "GGUF"
	Version          = 3       // the version Builder writes; Read accepts 2 and 3
	DefaultAlignment = 32      // when general.alignment is absent
	MaxAlignment     = 1 << 20 // ours: no real writer uses more than a page or two
	MaxDims          = 4       // GGML_MAX_DIMS
	MaxNameLen       = 63      // GGML_MAX_NAME (64) less its NUL terminator
	MaxKeyLen        = 64 << 10
	MaxStringLen     = 1 << 30 // GGML's own bound on a string
	MaxArrayLen      = 1 << 30 // GGML's own bound on an array
	MaxDepth         = 8       // arrays within arrays; GGML itself allows none

	// The fewest bytes a metadata pair and a tensor table entry can take,
	// which bound the counts in the header before anything is allocated.
	minKVBytes     = 8 + 1 + 4 + 1 // key length, a 1-byte key, type, a 1-byte value
	minTensorBytes = 8 + 4 + 4 + 8 // name length, n_dims, type, offset
)

const alignmentKey = "general.alignment"

// Open reads the header of the GGUF file at path: metadata and tensor table,
// never the tensor data (the compiler has no use for weight bytes).
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	f, err := Read(fd, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Read parses a GGUF header from r, whose size the caller states. Reads past
// the header are at most a 64 KiB read-ahead window; tensor data is checked
// for its place in the file but never read.
//
// Read trusts nothing in the file: see the package documentation. Memory it
// allocates is bounded by a small multiple of the header's size.
func Read(r io.ReaderAt, size int64) (*File, error) {
	if r == nil || size < 0 {
		return nil, fmt.Errorf("gguf: Read needs a reader and a size >= 0 (got size %d): %w", size, ErrInvalid)
	}
	p := &parser{c: newCursor(r, size)}
	return p.file()
}

type parser struct {
	c *cursor
	f File
}

func (p *parser) file() (*File, error) {
	c, f := p.c, &p.f
	f.FileSize = c.size
	if err := p.preamble(); err != nil {
		return nil, err
	}
	nTensors, err := c.u64("tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := c.u64("key count")
	if err != nil {
		return nil, err
	}
	tb, ok1 := mulCount(nTensors, minTensorBytes)
	kb, ok2 := mulCount(nKV, minKVBytes)
	need, ok3 := addOff(tb, kb)
	if !ok1 || !ok2 || !ok3 || need > c.remaining() {
		return nil, errAt(ErrTruncated, "header", 8, "%d tensors and %d metadata pairs need at least %s bytes, but only %d remain in the file",
			nTensors, nKV, atLeast(need, ok1 && ok2 && ok3), c.remaining())
	}
	// Both counts are now below size/14, so the slices below are
	// justified by the file; still, let a huge claim grow by appending.
	f.KVs = make([]KV, 0, min(nKV, 1024))
	f.keys = make(map[string]int, min(nKV, 1024))
	for i := range nKV {
		if err := p.kv(i); err != nil {
			return nil, err
		}
	}
	if err := p.alignment(); err != nil {
		return nil, err
	}
	f.Tensors = make([]TensorInfo, 0, min(nTensors, 1024))
	f.tensors = make(map[string]int, min(nTensors, 1024))
	for i := range nTensors {
		if err := p.tensorInfo(i); err != nil {
			return nil, err
		}
	}
	f.HeaderSize = c.off
	f.HeaderHash = c.sum()
	if err := p.layout(); err != nil {
		return nil, err
	}
	return f, nil
}

// preamble reads and checks the magic and the version.
func (p *parser) preamble() error {
	c := p.c
	if err := c.need(4, "magic"); err != nil {
		return err
	}
	m, err := c.take(4)
	if err != nil {
		return err
	}
	if string(m) != Magic {
		msg := fmt.Sprintf("magic %q is not %q", m, Magic)
		switch string(m) {
		case "lmgg", "fmgg", "tjgg": // GGML, GGMF, GGJT stored as little-endian words
			msg += " (a pre-GGUF GGML file: convert it to GGUF)"
		}
		return errAt(ErrNotGGUF, "header", 0, "%s", msg)
	}
	v, err := c.u32("version")
	if err != nil {
		return err
	}
	p.f.Version = v
	switch {
	case v == 0:
		return errAt(ErrUnsupportedVersion, "header", 4, "version 0 is not a GGUF version")
	case v&0xFFFF == 0:
		return errAt(ErrUnsupportedVersion, "header", 4,
			"version %#08x looks byte-swapped: this is probably a big-endian file, and only little-endian GGUF is supported", v)
	case v == 1:
		return errAt(ErrUnsupportedVersion, "header", 4, "GGUF v1 (32-bit counts) is not supported: convert the model again with a current converter")
	case v > Version:
		return errAt(ErrUnsupportedVersion, "header", 4, "version %d is newer than the versions this reader knows (2 and 3)", v)
	}
	return nil
}

// kv reads metadata pair number i.
func (p *parser) kv(i uint64) error {
	c, f := p.c, &p.f
	at := c.off
	c.where = fmt.Sprintf("metadata pair %d", i)
	key, err := c.str("key", MaxKeyLen)
	if err != nil {
		return err
	}
	c.where = keyWhere(key)
	if key == "" {
		return errAt(ErrCorrupt, c.where, at, "empty key")
	}
	if j, dup := f.keys[key]; dup {
		return errAt(ErrCorrupt, c.where, at, "duplicate key (first at offset %d)", f.KVs[j].Offset)
	}
	t, err := c.u32("value type")
	if err != nil {
		return err
	}
	v, err := p.value(ValueType(t), 0)
	if err != nil {
		return err
	}
	f.keys[key] = len(f.KVs)
	f.KVs = append(f.KVs, KV{Key: key, Value: v, Offset: at})
	return nil
}

// value reads one value of type t; depth counts the arrays around it.
func (p *parser) value(t ValueType, depth int) (Value, error) {
	c := p.c
	switch t {
	case TypeUint8:
		x, err := c.u8("u8")
		return Uint8(x), err
	case TypeInt8:
		x, err := c.u8("i8")
		return Int8(int8(x)), err
	case TypeBool:
		x, err := c.u8("bool")
		return Bool(x != 0), err // any non-zero byte is true, as in GGML
	case TypeUint16:
		x, err := c.u16("u16")
		return Uint16(x), err
	case TypeInt16:
		x, err := c.u16("i16")
		return Int16(int16(x)), err
	case TypeUint32:
		x, err := c.u32("u32")
		return Uint32(x), err
	case TypeInt32:
		x, err := c.u32("i32")
		return Int32(int32(x)), err
	case TypeFloat32:
		x, err := c.u32("f32")
		return Float32(math.Float32frombits(x)), err
	case TypeUint64:
		x, err := c.u64("u64")
		return Uint64(x), err
	case TypeInt64:
		x, err := c.u64("i64")
		return Int64(int64(x)), err
	case TypeFloat64:
		x, err := c.u64("f64")
		return Float64(math.Float64frombits(x)), err
	case TypeString:
		s, err := c.str("string", MaxStringLen)
		return String(s), err
	case TypeArray:
		return p.array(depth)
	}
	return Value{}, errAt(ErrCorrupt, c.where, c.off-4, "unknown value type %d", uint32(t))
}

// array reads an array's element type, count and elements. The count is
// checked against the remaining bytes (count × the element's smallest
// encoding) before the elements are allocated.
func (p *parser) array(depth int) (Value, error) {
	c := p.c
	at := c.off
	if depth >= MaxDepth {
		return Value{}, errAt(ErrLimit, c.where, at, "arrays nested more than %d deep", MaxDepth)
	}
	et, err := c.u32("array element type")
	if err != nil {
		return Value{}, err
	}
	elem := ValueType(et)
	if !elem.Valid() {
		return Value{}, errAt(ErrCorrupt, c.where, at, "unknown array element type %d", et)
	}
	n, err := c.u64("array length")
	if err != nil {
		return Value{}, err
	}
	if n > MaxArrayLen {
		return Value{}, errAt(ErrLimit, c.where, at, "array of %d %s is longer than the %d elements allowed", n, elem, MaxArrayLen)
	}
	if need, ok := mulCount(n, elem.minSize()); !ok || need > c.remaining() {
		return Value{}, errAt(ErrTruncated, c.where, at, "array of %d %s needs at least %s bytes, but only %d remain in the file",
			n, elem, atLeast(need, ok), c.remaining())
	}
	k := int(n)
	switch elem {
	case TypeUint8:
		return arr(c, k, elem, func(b []byte) uint8 { return b[0] })
	case TypeInt8:
		return arr(c, k, elem, func(b []byte) int8 { return int8(b[0]) })
	case TypeBool:
		return arr(c, k, elem, func(b []byte) bool { return b[0] != 0 })
	case TypeUint16:
		return arr(c, k, elem, binary.LittleEndian.Uint16)
	case TypeInt16:
		return arr(c, k, elem, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) })
	case TypeUint32:
		return arr(c, k, elem, binary.LittleEndian.Uint32)
	case TypeInt32:
		return arr(c, k, elem, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) })
	case TypeFloat32:
		return arr(c, k, elem, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })
	case TypeUint64:
		return arr(c, k, elem, binary.LittleEndian.Uint64)
	case TypeInt64:
		return arr(c, k, elem, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) })
	case TypeFloat64:
		return arr(c, k, elem, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) })
	case TypeString:
		out := make([]string, k)
		for i := range out {
			if out[i], err = c.str("array string", MaxStringLen); err != nil {
				return Value{}, err
			}
		}
		return arrayOf(elem, out), nil
	default: // TypeArray
		out := make([]Value, k)
		for i := range out {
			if out[i], err = p.array(depth + 1); err != nil {
				return Value{}, err
			}
		}
		return arrayOf(elem, out), nil
	}
}

// arr reads n fixed-width elements, a window at a time; the caller has
// checked that n × width bytes remain.
func arr[T any](c *cursor, n int, elem ValueType, dec func([]byte) T) (Value, error) {
	w := elem.width()
	out := make([]T, n)
	per := readWindow / w
	for i := 0; i < n; {
		k := min(n-i, per)
		b, err := c.take(k * w)
		if err != nil {
			return Value{}, err
		}
		for j := range k {
			out[i+j] = dec(b[j*w:])
		}
		i += k
	}
	return arrayOf(elem, out), nil
}

// alignment applies general.alignment, which GGML requires to be a u32
// power of two; we also bound it (see MaxAlignment).
func (p *parser) alignment() error {
	f := &p.f
	f.Alignment = DefaultAlignment
	kv, ok := f.KV(alignmentKey)
	if !ok {
		return nil
	}
	if kv.Value.Type() != TypeUint32 {
		return errAt(ErrCorrupt, keyWhere(alignmentKey), kv.Offset, "alignment is %s, but must be a u32", describe(kv.Value))
	}
	a, _ := kv.Value.Uint()
	if a == 0 || a&(a-1) != 0 {
		return errAt(ErrCorrupt, keyWhere(alignmentKey), kv.Offset, "alignment %d is not a power of two", a)
	}
	if a > MaxAlignment {
		return errAt(ErrLimit, keyWhere(alignmentKey), kv.Offset, "alignment %d is larger than the %d allowed", a, MaxAlignment)
	}
	f.Alignment = int64(a)
	return nil
}

// tensorInfo reads and checks tensor table entry number i, all but its
// place in the data section (layout checks that once the table is read).
func (p *parser) tensorInfo(i uint64) error {
	c, f := p.c, &p.f
	at := c.off
	c.where = fmt.Sprintf("tensor table entry %d", i)
	name, err := c.str("tensor name", MaxNameLen)
	if err != nil {
		return err
	}
	c.where = tensorWhere(name)
	if j, dup := f.tensors[name]; dup {
		return errAt(ErrCorrupt, c.where, at, "duplicate tensor name (first at offset %d)", f.Tensors[j].InfoOffset)
	}
	nDims, err := c.u32("dimension count")
	if err != nil {
		return err
	}
	if nDims > MaxDims {
		return errAt(ErrCorrupt, c.where, at, "%d dimensions, more than the %d GGML allows", nDims, MaxDims)
	}
	dims := make([]uint64, nDims)
	n := uint64(1)
	for j := range dims {
		d, err := c.u64("dimension")
		if err != nil {
			return err
		}
		dims[j] = d
		if int64(d) < 0 {
			return errAt(ErrCorrupt, c.where, at, "dimension %d is negative (%d)", j, int64(d))
		}
		hi, lo := bits.Mul64(n, d)
		if hi != 0 || lo > math.MaxInt64 {
			return errAt(ErrCorrupt, c.where, at, "shape %v has more elements than an int64 can count", dims[:j+1])
		}
		n = lo
	}
	code, err := c.u32("type")
	if err != nil {
		return err
	}
	typ := dtype.Type(code)
	info, ok := typ.Lookup()
	if !ok {
		return &FormatError{Where: c.where, Offset: at, Msg: fmt.Sprintf("type code %d", code), Kind: ErrCorrupt, Cause: dtype.ErrUnknownType}
	}
	row := uint64(1)
	if len(dims) > 0 {
		row = dims[0]
	}
	if row%uint64(info.BlockSize) != 0 {
		return errAt(ErrCorrupt, c.where, at, "rows of %d elements are not a whole number of %v blocks (%d elements each)", row, typ, info.BlockSize)
	}
	size, err := typ.RowBytes(int64(n))
	if err != nil {
		return &FormatError{Where: c.where, Offset: at, Msg: fmt.Sprintf("shape %v", dims), Kind: ErrCorrupt, Cause: err}
	}
	off, err := c.u64("data offset")
	if err != nil {
		return err
	}
	f.tensors[name] = len(f.Tensors)
	f.Tensors = append(f.Tensors, TensorInfo{Name: name, Dims: dims, Type: typ, Offset: off, Size: size, InfoOffset: at})
	return nil
}

// layout places the data section and checks each tensor's bytes: aligned,
// inside the file, and overlapping no other tensor's. (GGML is stricter: it
// wants the tensors packed in table order. We accept any non-overlapping
// layout, and Builder writes the packed one.)
func (p *parser) layout() error {
	f := &p.f
	f.DataOffset = f.HeaderSize
	if len(f.Tensors) == 0 {
		return nil // GGML pads the header only when there is data to align
	}
	d, ok := alignUp(f.HeaderSize, f.Alignment)
	if !ok || d > f.FileSize {
		return errAt(ErrTruncated, "header", f.HeaderSize, "the data section would start at %d (the header end rounded up to the alignment %d), past the end of the file (size %d)",
			d, f.Alignment, f.FileSize)
	}
	f.DataOffset = d
	for i := range f.Tensors {
		t := &f.Tensors[i]
		where := tensorWhere(t.Name)
		if t.Offset%uint64(f.Alignment) != 0 {
			return errAt(ErrCorrupt, where, t.InfoOffset, "data offset %d is not a multiple of the alignment %d", t.Offset, f.Alignment)
		}
		start, ok1 := addOff(f.DataOffset, int64(t.Offset))
		end, ok2 := addOff(start, t.Size)
		if t.Offset > math.MaxInt64 || !ok1 || !ok2 {
			return errAt(ErrCorrupt, where, t.InfoOffset, "data offset %d plus size %d overflows", t.Offset, t.Size)
		}
		if end > f.FileSize {
			return errAt(ErrTruncated, where, t.InfoOffset, "data [%d, %d) lies outside the file (size %d)", start, end, f.FileSize)
		}
		t.FileOffset = start
	}
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		ta, tb := &f.Tensors[a], &f.Tensors[b]
		return cmp.Or(cmp.Compare(ta.FileOffset, tb.FileOffset), cmp.Compare(ta.Size, tb.Size), cmp.Compare(a, b))
	})
	prev := -1 // the tensor whose data ends last so far
	for _, i := range order {
		t := &f.Tensors[i]
		if t.Size == 0 {
			continue // holds no bytes, so overlaps nothing
		}
		if prev >= 0 {
			q := &f.Tensors[prev]
			if t.FileOffset < q.FileOffset+q.Size {
				return errAt(ErrCorrupt, tensorWhere(t.Name), t.InfoOffset, "data [%d, %d) overlaps that of tensor %s [%d, %d)",
					t.FileOffset, t.FileOffset+t.Size, quote(q.Name), q.FileOffset, q.FileOffset+q.Size)
			}
		}
		prev = i
	}
	return nil
}

// atLeast prints a byte count that may have overflowed.
func atLeast(n int64, ok bool) string {
	if !ok {
		return "2^63"
	}
	return fmt.Sprint(n)
}
