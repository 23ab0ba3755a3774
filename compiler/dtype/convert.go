package dtype

import (
	"errors"
	"fmt"
)

// ErrNoReference is wrapped by Dequantize and Quantize for a type this
// package has no reference conversion for (the grid-based IQ1/IQ2/IQ3 types
// and the ternary TQ types).
var ErrNoReference = errors.New("no reference conversion")

// A dequantizer converts whole blocks: len(src) is a multiple of the block's
// bytes and len(dst) the matching element count, both checked by the caller.
type dequantizer func(src []byte, dst []float32)

// A quantizer is the inverse, with the same contract.
type quantizer func(src []float32, dst []byte)

var dequantizers = [len(registry)]dequantizer{
	F32: dequantF32, F16: dequantF16, BF16: dequantBF16, F64: dequantF64,
	I8: dequantI8, I16: dequantI16, I32: dequantI32, I64: dequantI64,
	Q4_0: dequantQ4_0, Q4_1: dequantQ4_1, Q5_0: dequantQ5_0, Q5_1: dequantQ5_1,
	Q8_0: dequantQ8_0, Q8_1: dequantQ8_1, Q1_0: dequantQ1_0, Q2_0: dequantQ2_0,
	Q2_K: dequantQ2_K, Q3_K: dequantQ3_K, Q4_K: dequantQ4_K, Q5_K: dequantQ5_K,
	Q6_K: dequantQ6_K, Q8_K: dequantQ8_K,
	IQ4_NL: dequantIQ4_NL, IQ4_XS: dequantIQ4_XS, MXFP4: dequantMXFP4, NVFP4: dequantNVFP4,
}

var quantizers = [len(registry)]quantizer{
	F32: quantF32, F16: quantF16, BF16: quantBF16,
	Q4_0: quantQ4_0, Q4_1: quantQ4_1, Q5_0: quantQ5_0, Q5_1: quantQ5_1,
	Q8_0: quantQ8_0, Q8_1: quantQ8_1, Q1_0: quantQ1_0, Q2_0: quantQ2_0,
	Q2_K: quantQ2_K, Q3_K: quantQ3_K, Q4_K: quantQ4_K, Q5_K: quantQ5_K,
	Q6_K: quantQ6_K, Q8_K: quantQ8_K,
	IQ4_NL: quantIQ4_NL, IQ4_XS: quantIQ4_XS, MXFP4: quantMXFP4, NVFP4: quantNVFP4,
}

func dequantizerOf(t Type) dequantizer {
	if int(t) < len(dequantizers) {
		return dequantizers[t]
	}
	return nil
}

func quantizerOf(t Type) quantizer {
	if int(t) < len(quantizers) {
		return quantizers[t]
	}
	return nil
}

// CanDequantize reports whether Dequantize has a reference for t.
func CanDequantize(t Type) bool { return dequantizerOf(t) != nil }

// CanQuantize reports whether Quantize has a reference for t.
func CanQuantize(t Type) bool { return quantizerOf(t) != nil }

// checkRow checks that n elements of t are whole blocks stored in size bytes.
func checkRow(t Type, n, size int) error {
	in, ok := t.Lookup()
	if !ok {
		return fmt.Errorf("%w: code %d", ErrUnknownType, uint32(t))
	}
	if n%in.BlockSize != 0 {
		return fmt.Errorf("%v: %d elements is not a multiple of the block size %d", t, n, in.BlockSize)
	}
	if want := n / in.BlockSize * in.BlockBytes; size != want {
		return fmt.Errorf("%v: %d elements take %d bytes, got %d", t, n, want, size)
	}
	return nil
}

// Dequantize converts the elements of type t stored in src to float32,
// len(dst) of them; src must hold exactly their bytes. The results are
// bit-identical to ggml's to_float for t (integer types convert to the
// nearest float32, as Go's conversions do).
func Dequantize(t Type, src []byte, dst []float32) error {
	if err := checkRow(t, len(dst), len(src)); err != nil {
		return err
	}
	f := dequantizerOf(t)
	if f == nil {
		return fmt.Errorf("dequantize %v: %w", t, ErrNoReference)
	}
	f(src, dst)
	return nil
}

// Quantize converts src to type t into dst, which must be exactly the size
// of len(src) elements of t. The bytes are identical to ggml's reference
// quantizer (quantize_row_<type>_ref) for t.
func Quantize(t Type, src []float32, dst []byte) error {
	if err := checkRow(t, len(src), len(dst)); err != nil {
		return err
	}
	f := quantizerOf(t)
	if f == nil {
		return fmt.Errorf("quantize %v: %w", t, ErrNoReference)
	}
	f(src, dst)
	return nil
}
