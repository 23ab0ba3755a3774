package plans

import (
	"fmt"
	"io"
	"math"

	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// required is the number of leading fields a record written in format
// version v must have: every field that version knew.
func required(fs []field, v uint32) int {
	n := 0
	for _, f := range fs {
		if f.since <= v {
			n++
		}
	}
	return n
}

// minRecordBytes is the least a record takes on the wire in format v: an
// array header and a byte per field. It bounds how many records a list
// header may claim.
func minRecordBytes(r record, v uint32) int { return 1 + required(r.fields(), v) }

func (d *decoder) record(r record) error {
	fs := r.fields()
	need := required(fs, d.version)
	n, err := d.arrayLen(1, math.MaxInt32)
	if err != nil {
		return err
	}
	if n < need {
		return d.fail("%d fields, format %d has %d", n, d.version, need)
	}
	for i := 0; i < n; i++ {
		if i >= len(fs) {
			// A newer writer's field that this reader does not know: the
			// writer decided old runtimes may ignore it (FORMAT.md).
			if err := d.skip(0); err != nil {
				return within(err, fmt.Sprintf("field %d", i))
			}
			continue
		}
		if err := d.value(fs[i].ptr); err != nil {
			return within(err, fs[i].name)
		}
	}
	return nil
}

func (d *decoder) value(ptr any) error {
	switch v := ptr.(type) {
	case enum:
		x, err := d.uint(math.MaxUint8)
		v.set(uint8(x))
		return err
	case record:
		return d.record(v)
	case seq:
		n, err := d.arrayLen(minRecordBytes(v.elem(), d.version), v.limit())
		if err != nil || n == 0 {
			return err
		}
		return v.decodeItems(d, n)
	case *bool:
		x, err := d.bool()
		*v = x
		return err
	case *uint8:
		x, err := d.uint(math.MaxUint8)
		*v = uint8(x)
		return err
	case *uint32:
		x, err := d.uint(math.MaxUint32)
		*v = uint32(x)
		return err
	case *uint64:
		x, err := d.uint(math.MaxUint64)
		*v = x
		return err
	case *int32:
		x, err := d.int32()
		*v = x
		return err
	case *float32:
		return d.float32(v)
	case *float64:
		if err := d.code(msgpcode.Double, "a float64"); err != nil {
			return err
		}
		x, err := d.m.DecodeFloat64()
		*v = x
		return d.libErr(err)
	case *string:
		x, err := d.str()
		*v = x
		return err
	case *[]byte:
		x, err := d.raw(false, MaxPlanBytes)
		*v = x
		return err
	case *[32]byte:
		n, err := d.rawLen(false, 32)
		if err != nil {
			return err
		}
		if n != 32 {
			return d.fail("want 32 bytes, found %d", n)
		}
		_, err = io.ReadFull(d.r, v[:])
		return d.libErr(err)
	case *[3]uint32:
		n, err := d.arrayLen(1, 3)
		if err != nil {
			return err
		}
		if n != 3 {
			return d.fail("want 3 elements, found %d", n)
		}
		for i := range v {
			x, err := d.uint(math.MaxUint32)
			if err != nil {
				return err
			}
			v[i] = uint32(x)
		}
		return nil
	case *[]string:
		return decodeSlice(d, v, 1, d.str)
	case *[]bool:
		return decodeSlice(d, v, 1, d.bool)
	case *[]uint32:
		return decodeSlice(d, v, 1, func() (uint32, error) {
			x, err := d.uint(math.MaxUint32)
			return uint32(x), err
		})
	case *[]uint64:
		return decodeSlice(d, v, 1, func() (uint64, error) { return d.uint(math.MaxUint64) })
	case *[]int32:
		return decodeSlice(d, v, 1, d.int32)
	case *[]float32:
		return decodeSlice(d, v, 5, func() (float32, error) {
			var x float32
			err := d.float32(&x)
			return x, err
		})
	case *map[string]string:
		return d.stringMap(v)
	}
	panic(fmt.Sprintf("plans: no wire decoding for %T", ptr))
}

func (d *decoder) libErr(err error) error {
	if err != nil {
		return d.lib(err)
	}
	return nil
}

func (d *decoder) float32(v *float32) error {
	if err := d.code(msgpcode.Float, "a float32"); err != nil {
		return err
	}
	x, err := d.m.DecodeFloat32()
	*v = x
	return d.libErr(err)
}

// decodeSlice reads an array of scalars, each at least minElem bytes. An
// empty array decodes to nil: nil and empty are the same on the wire.
func decodeSlice[T any](d *decoder, dst *[]T, minElem int, elem func() (T, error)) error {
	n, err := d.arrayLen(minElem, MaxPlanBytes)
	if err != nil || n == 0 {
		return err
	}
	s := make([]T, n)
	for i := range s {
		if s[i], err = elem(); err != nil {
			return within(err, fmt.Sprintf("[%d]", i))
		}
	}
	*dst = s
	return nil
}

// stringMap reads a map of strings whose keys must ascend strictly, as the
// encoder writes them: a map in any other order would not re-encode to the
// same bytes.
func (d *decoder) stringMap(dst *map[string]string) error {
	c, err := d.peek()
	if err != nil {
		return err
	}
	if !isMap(c) {
		return d.fail("want a map, found msgpack code 0x%02x", c)
	}
	n, err := d.m.DecodeMapLen()
	if err != nil {
		return d.lib(err)
	}
	if err := d.checkCount(n, 2, MaxPlanBytes, "map"); err != nil || n == 0 {
		return err
	}
	m := make(map[string]string, n)
	prev := ""
	for i := 0; i < n; i++ {
		k, err := d.str()
		if err != nil {
			return err
		}
		if i > 0 && k <= prev {
			return d.fail("map key %q after %q: keys must ascend", k, prev)
		}
		prev = k
		if m[k], err = d.str(); err != nil {
			return within(err, k)
		}
	}
	*dst = m
	return nil
}

// skip passes over one value of any type, nested at most maxDepth deep: the
// library's own Skip recurses without a bound, so a run of one-byte array
// headers would exhaust the stack.
func (d *decoder) skip(depth int) error {
	if depth > maxDepth {
		return d.fail("values nested more than %d deep", maxDepth)
	}
	c, err := d.peek()
	if err != nil {
		return err
	}
	switch {
	case isArray(c):
		n, err := d.arrayLen(1, math.MaxInt32)
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if err := d.skip(depth + 1); err != nil {
				return err
			}
		}
		return nil
	case isMap(c):
		n, err := d.m.DecodeMapLen()
		if err != nil {
			return d.lib(err)
		}
		if err := d.checkCount(n, 2, math.MaxInt32, "map"); err != nil {
			return err
		}
		for i := 0; i < 2*n; i++ {
			if err := d.skip(depth + 1); err != nil {
				return err
			}
		}
		return nil
	case isStr(c) || isBin(c):
		n, err := d.rawLen(isStr(c), MaxPlanBytes)
		if err != nil {
			return err
		}
		_, err = d.r.Seek(int64(n), io.SeekCurrent)
		return d.libErr(err)
	case c >= msgpcode.FixExt1 && c <= msgpcode.FixExt16, c >= msgpcode.Ext8 && c <= msgpcode.Ext32:
		return d.fail("msgpack extension types are not used in plans (code 0x%02x)", c)
	}
	return d.libErr(d.m.Skip())
}
