package dtype

import (
	"encoding/binary"
	"math"
)

// Plain (block size 1) types. Multi-byte values are little-endian, as GGUF
// stores them (docs/formats.md#plain-types).

func dequantF32(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

func quantF32(src []float32, dst []byte) {
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
}

func dequantF16(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = Float16frombits(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

func quantF16(src []float32, dst []byte) {
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], Float16bits(v))
	}
}

func dequantBF16(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = BFloat16frombits(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

func quantBF16(src []float32, dst []byte) {
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], BFloat16bits(v))
	}
}

// F64 and the integer types have no to_float in ggml; they round to the
// nearest float32, which is what a cast in C gives too.

func dequantF64(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:])))
	}
}

func dequantI8(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = float32(int8(src[i]))
	}
}

func dequantI16(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = float32(int16(binary.LittleEndian.Uint16(src[2*i:])))
	}
}

func dequantI32(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = float32(int32(binary.LittleEndian.Uint32(src[4*i:])))
	}
}

func dequantI64(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = float32(int64(binary.LittleEndian.Uint64(src[8*i:])))
	}
}
