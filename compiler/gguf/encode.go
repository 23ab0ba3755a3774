package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// appendValue appends the encoding of v (without its type code, which the
// caller writes: a pair's type precedes its value, an array's element type
// precedes its count).
func appendValue(b []byte, v Value) []byte {
	switch v.typ {
	case TypeUint8, TypeInt8, TypeBool:
		return append(b, byte(v.bits))
	case TypeUint16, TypeInt16:
		return binary.LittleEndian.AppendUint16(b, uint16(v.bits))
	case TypeUint32, TypeInt32, TypeFloat32:
		return binary.LittleEndian.AppendUint32(b, uint32(v.bits))
	case TypeUint64, TypeInt64, TypeFloat64:
		return binary.LittleEndian.AppendUint64(b, v.bits)
	case TypeString:
		return appendString(b, v.str)
	}
	// An array: element type, count, elements.
	b = binary.LittleEndian.AppendUint32(b, uint32(v.elem))
	b = binary.LittleEndian.AppendUint64(b, uint64(v.Len()))
	switch a := v.arr.(type) {
	case []uint8:
		return append(b, a...)
	case []int8:
		for _, x := range a {
			b = append(b, byte(x))
		}
	case []bool:
		for _, x := range a {
			if x {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		}
	case []uint16:
		for _, x := range a {
			b = binary.LittleEndian.AppendUint16(b, x)
		}
	case []int16:
		for _, x := range a {
			b = binary.LittleEndian.AppendUint16(b, uint16(x))
		}
	case []uint32:
		for _, x := range a {
			b = binary.LittleEndian.AppendUint32(b, x)
		}
	case []int32:
		for _, x := range a {
			b = binary.LittleEndian.AppendUint32(b, uint32(x))
		}
	case []float32:
		for _, x := range a {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
	case []uint64:
		for _, x := range a {
			b = binary.LittleEndian.AppendUint64(b, x)
		}
	case []int64:
		for _, x := range a {
			b = binary.LittleEndian.AppendUint64(b, uint64(x))
		}
	case []float64:
		for _, x := range a {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
	case []string:
		for _, x := range a {
			b = appendString(b, x)
		}
	case []Value:
		for _, x := range a {
			b = appendValue(b, x)
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// checkValue holds a value to what Read accepts: arrays nested at most
// MaxDepth deep, strings and arrays within their bounds.
func checkValue(v Value, depth int) error {
	if !v.valid {
		return fmt.Errorf("invalid (zero) Value")
	}
	switch v.typ {
	case TypeString:
		if len(v.str) > MaxStringLen {
			return fmt.Errorf("string of %d bytes is longer than the %d allowed", len(v.str), MaxStringLen)
		}
	case TypeArray:
		if depth >= MaxDepth {
			return fmt.Errorf("arrays nested more than %d deep", MaxDepth)
		}
		if n := v.Len(); n > MaxArrayLen {
			return fmt.Errorf("array of %d elements is longer than the %d allowed", n, MaxArrayLen)
		}
		switch a := v.arr.(type) {
		case []string:
			for _, s := range a {
				if len(s) > MaxStringLen {
					return fmt.Errorf("string of %d bytes is longer than the %d allowed", len(s), MaxStringLen)
				}
			}
		case []Value:
			for _, e := range a {
				if err := checkValue(e, depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
