package plans

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// The body codec. Every struct of the plan is a record: a msgpack array of
// its fields in the order its fields() method lists them (schema.go). The
// position of a field is its identity on the wire; fields are only ever
// appended (FORMAT.md), so a reader takes the fields it knows, zeroes the
// ones an older writer did not have, and skips the ones a newer writer
// appended.
//
// We walk the schema ourselves and use msgpack's Encoder and Decoder only
// for the primitives. The library's reflection decoder trusts the length
// headers it reads: a 5-byte array32 header makes it allocate the whole
// slice up front, and a bin32 header does the same in DecodeBytes (ADR
// 0004 has the numbers). Here every count and length is checked against the
// bytes that remain, times the least each element takes, before anything
// is allocated.

// field is one entry of a record's schema.
type field struct {
	name  string // snake_case; also the name in renderings, diffs and FORMAT.md
	since uint32 // the format version that added it
	ptr   any    // pointer to the value, an enum, a record or a seq
}

// record is a struct with a wire schema.
type record interface {
	fields() []field
}

// enum is a one-byte closed set (BufferKind, PatchKind, ...), written as an
// unsigned integer and rendered by name.
type enum interface {
	get() uint8
	set(uint8)
	String() string
}

// seq is a slice of records.
type seq interface {
	length() int
	encodeItems(e *encoder)
	decodeItems(d *decoder, n int) error
	elem() record // a zero element, for the schema listing
	limit() int
}

type listOf[T any, P interface {
	*T
	record
}] struct {
	s   *[]T
	max int
}

// list makes a seq of *s, at most max long.
func list[T any, P interface {
	*T
	record
}](s *[]T, max int) seq {
	return listOf[T, P]{s, max}
}

func (l listOf[T, P]) length() int  { return len(*l.s) }
func (l listOf[T, P]) target() any  { return l.s }
func (l listOf[T, P]) limit() int   { return l.max }
func (l listOf[T, P]) elem() record { return P(new(T)) }

func (l listOf[T, P]) encodeItems(e *encoder) {
	for i := range *l.s {
		e.record(P(&(*l.s)[i]))
	}
}

func (l listOf[T, P]) decodeItems(d *decoder, n int) error {
	s := make([]T, n)
	for i := range s {
		if err := d.record(P(&s[i])); err != nil {
			return within(err, fmt.Sprintf("[%d]", i))
		}
	}
	*l.s = s
	return nil
}

// encoder writes a body. Writes go to a bytes.Buffer, which cannot fail
// short of running out of memory, so errors are not threaded through.
type encoder struct {
	buf bytes.Buffer
	m   *msgpack.Encoder
}

func newEncoder() *encoder {
	e := &encoder{}
	e.m = msgpack.NewEncoder(&e.buf)
	return e
}

func (e *encoder) record(r record) {
	fs := r.fields()
	_ = e.m.EncodeArrayLen(len(fs))
	for _, f := range fs {
		e.value(f.ptr)
	}
}

// value writes one field. Integers take their shortest form and floats
// their declared width, so equal plans give equal bytes.
func (e *encoder) value(ptr any) {
	m := e.m
	switch v := ptr.(type) {
	case enum:
		_ = m.EncodeUint(uint64(v.get()))
	case record:
		e.record(v)
	case seq:
		_ = m.EncodeArrayLen(v.length())
		v.encodeItems(e)
	case *bool:
		_ = m.EncodeBool(*v)
	case *uint8:
		_ = m.EncodeUint(uint64(*v))
	case *uint32:
		_ = m.EncodeUint(uint64(*v))
	case *uint64:
		_ = m.EncodeUint(*v)
	case *int32:
		_ = m.EncodeInt(int64(*v))
	case *float32:
		_ = m.EncodeFloat32(*v)
	case *float64:
		_ = m.EncodeFloat64(*v)
	case *string:
		_ = m.EncodeString(*v)
	case *[]byte:
		_ = m.EncodeBytesLen(len(*v))
		e.buf.Write(*v)
	case *[32]byte:
		_ = m.EncodeBytesLen(32)
		e.buf.Write(v[:])
	case *[3]uint32:
		_ = m.EncodeArrayLen(3)
		for _, x := range v {
			_ = m.EncodeUint(uint64(x))
		}
	case *[]string:
		_ = m.EncodeArrayLen(len(*v))
		for _, x := range *v {
			_ = m.EncodeString(x)
		}
	case *[]bool:
		_ = m.EncodeArrayLen(len(*v))
		for _, x := range *v {
			_ = m.EncodeBool(x)
		}
	case *[]uint32:
		_ = m.EncodeArrayLen(len(*v))
		for _, x := range *v {
			_ = m.EncodeUint(uint64(x))
		}
	case *[]uint64:
		_ = m.EncodeArrayLen(len(*v))
		for _, x := range *v {
			_ = m.EncodeUint(x)
		}
	case *[]int32:
		_ = m.EncodeArrayLen(len(*v))
		for _, x := range *v {
			_ = m.EncodeInt(int64(x))
		}
	case *[]float32:
		_ = m.EncodeArrayLen(len(*v))
		for _, x := range *v {
			_ = m.EncodeFloat32(x)
		}
	case *map[string]string:
		keys := make([]string, 0, len(*v))
		for k := range *v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		_ = m.EncodeMapLen(len(keys))
		for _, k := range keys {
			_ = m.EncodeString(k)
			_ = m.EncodeString((*v)[k])
		}
	default:
		// A schema names a type this file cannot write: a programming
		// error that the round-trip test of Example catches.
		panic(fmt.Sprintf("plans: no wire encoding for %T", ptr))
	}
}

// decoder reads a body that passed the checksum; it still treats it as
// hostile (a plan is a file a user was handed).
type decoder struct {
	body    []byte
	r       *bytes.Reader
	m       *msgpack.Decoder
	size    int
	version uint32 // the file's format version: which fields must be present
}

func newDecoder(body []byte, version uint32) *decoder {
	r := bytes.NewReader(body)
	// bytes.Reader is an io.ByteScanner, so the msgpack decoder reads it
	// directly, without a buffer of its own: r.Len() is what remains.
	return &decoder{body: body, r: r, m: msgpack.NewDecoder(r), size: len(body), version: version}
}

func (d *decoder) remaining() int { return d.r.Len() }

// bodyError is a decoding failure at a byte offset of the body, with the
// field path collected while the recursion unwinds.
type bodyError struct {
	off  int
	path []string // innermost first
	msg  string
}

func (e *bodyError) Error() string {
	var p strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		s := e.path[i]
		if p.Len() > 0 && !strings.HasPrefix(s, "[") {
			p.WriteByte('.')
		}
		p.WriteString(s)
	}
	if p.Len() == 0 {
		return fmt.Sprintf("body byte %d: %s", e.off, e.msg)
	}
	return fmt.Sprintf("body byte %d, %s: %s", e.off, p.String(), e.msg)
}

func within(err error, name string) error {
	var be *bodyError
	if errors.As(err, &be) {
		be.path = append(be.path, name)
		return be
	}
	return err
}

func (d *decoder) fail(format string, args ...any) error {
	return &bodyError{off: d.size - d.r.Len(), msg: fmt.Sprintf(format, args...)}
}

// lib turns a msgpack library error into a bodyError.
func (d *decoder) lib(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return d.fail("truncated")
	}
	return d.fail("%v", err)
}

func (d *decoder) peek() (byte, error) {
	c, err := d.m.PeekCode()
	if err != nil {
		return 0, d.lib(err)
	}
	return c, nil
}

func isArray(c byte) bool {
	return msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32
}

func isMap(c byte) bool { return msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32 }

func isStr(c byte) bool {
	return msgpcode.IsFixedString(c) || c == msgpcode.Str8 || c == msgpcode.Str16 || c == msgpcode.Str32
}

func isBin(c byte) bool { return c == msgpcode.Bin8 || c == msgpcode.Bin16 || c == msgpcode.Bin32 }

// arrayLen reads an array header whose elements each take at least
// minElem bytes, and refuses a count the remaining bytes cannot hold or that
// exceeds max.
func (d *decoder) arrayLen(minElem, max int) (int, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	if !isArray(c) {
		return 0, d.fail("want an array, found msgpack code 0x%02x", c)
	}
	n, err := d.m.DecodeArrayLen()
	if err != nil {
		return 0, d.lib(err)
	}
	return n, d.checkCount(n, minElem, max, "array")
}

func (d *decoder) checkCount(n, minElem, max int, what string) error {
	if n > max {
		return d.fail("%s of %d elements, more than the limit of %d", what, n, max)
	}
	if int64(n)*int64(minElem) > int64(d.remaining()) {
		return d.fail("%s of %d elements needs at least %d bytes, %d remain", what, n, int64(n)*int64(minElem), d.remaining())
	}
	return nil
}

// rawLen reads a str (str true) or bin header and checks the length.
func (d *decoder) rawLen(str bool, max int) (int, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	if str && !isStr(c) || !str && !isBin(c) {
		want := "bin"
		if str {
			want = "str"
		}
		return 0, d.fail("want %s, found msgpack code 0x%02x", want, c)
	}
	n, err := d.m.DecodeBytesLen()
	if err != nil {
		return 0, d.lib(err)
	}
	if n > max {
		return 0, d.fail("%d bytes, more than the limit of %d", n, max)
	}
	if n > d.remaining() {
		return 0, d.fail("%d bytes, %d remain", n, d.remaining())
	}
	return n, nil
}

// span reads a str or bin header and returns its bytes, aliasing the body.
func (d *decoder) span(str bool, max int) ([]byte, error) {
	n, err := d.rawLen(str, max)
	if err != nil {
		return nil, err
	}
	off := d.size - d.r.Len()
	if _, err := d.r.Seek(int64(n), io.SeekCurrent); err != nil {
		return nil, d.lib(err)
	}
	return d.body[off : off+n], nil
}

// raw reads a bin (or, with str, a str) into a new slice; empty is nil.
func (d *decoder) raw(str bool, max int) ([]byte, error) {
	b, err := d.span(str, max)
	if err != nil || len(b) == 0 {
		return nil, err
	}
	return bytes.Clone(b), nil
}

// str reads a string with one allocation, straight from the body.
func (d *decoder) str() (string, error) {
	b, err := d.span(true, MaxPlanBytes)
	return string(b), err
}

// uint reads a non-negative integer of at most max. Any msgpack integer
// encoding is accepted (another writer may use int8 for 5), a negative
// value is not.
func (d *decoder) uint(max uint64) (uint64, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	var v uint64
	switch {
	case c <= msgpcode.PosFixedNumHigh || c >= msgpcode.Uint8 && c <= msgpcode.Uint64:
		if v, err = d.m.DecodeUint64(); err != nil {
			return 0, d.lib(err)
		}
	case c >= msgpcode.NegFixedNumLow || c >= msgpcode.Int8 && c <= msgpcode.Int64:
		x, err := d.m.DecodeInt64()
		if err != nil {
			return 0, d.lib(err)
		}
		if x < 0 {
			return 0, d.fail("%d: want an unsigned integer", x)
		}
		v = uint64(x)
	default:
		return 0, d.fail("want an unsigned integer, found msgpack code 0x%02x", c)
	}
	if v > max {
		return 0, d.fail("%d overflows a %d-bit field", v, bitsOf(max))
	}
	return v, nil
}

func bitsOf(max uint64) int {
	n := 0
	for ; max != 0; max >>= 1 {
		n++
	}
	return n
}

func (d *decoder) int32() (int32, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	if !msgpcode.IsFixedNum(c) && (c < msgpcode.Uint8 || c > msgpcode.Int64) {
		return 0, d.fail("want an integer, found msgpack code 0x%02x", c)
	}
	v, err := d.m.DecodeInt64()
	if err != nil {
		return 0, d.lib(err)
	}
	if c == msgpcode.Uint64 && v < 0 || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, d.fail("%d overflows an int32 field", v)
	}
	return int32(v), nil
}

func (d *decoder) code(want byte, what string) error {
	c, err := d.peek()
	if err != nil {
		return err
	}
	if c != want {
		return d.fail("want %s, found msgpack code 0x%02x", what, c)
	}
	return nil
}

func (d *decoder) bool() (bool, error) {
	c, err := d.peek()
	if err != nil {
		return false, err
	}
	if c != msgpcode.True && c != msgpcode.False {
		return false, d.fail("want a bool, found msgpack code 0x%02x", c)
	}
	v, err := d.m.DecodeBool()
	if err != nil {
		return false, d.lib(err)
	}
	return v, nil
}
