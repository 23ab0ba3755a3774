package dtype_test

import (
	"math/rand/v2"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// Throughput of the reference conversions, in input elements per second
// (b.SetBytes counts float32 bytes). Synthesizing a large model quantizes
// billions of weights, so these matter.
func BenchmarkQuantize(b *testing.B) {
	const n = 64 * 256
	r := rand.New(rand.NewPCG(9, 10))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, ty := range []dtype.Type{dtype.F16, dtype.BF16, dtype.Q8_0, dtype.Q4_0, dtype.Q4_K, dtype.Q5_K, dtype.Q6_K, dtype.Q3_K, dtype.Q2_K, dtype.IQ4_XS} {
		b.Run(ty.String(), func(b *testing.B) {
			size, _ := ty.RowBytes(n)
			q := make([]byte, size)
			b.SetBytes(4 * n)
			for b.Loop() {
				if err := dtype.Quantize(ty, x, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDequantize(b *testing.B) {
	const n = 64 * 256
	r := rand.New(rand.NewPCG(11, 12))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	y := make([]float32, n)
	for _, ty := range []dtype.Type{dtype.F16, dtype.Q8_0, dtype.Q4_0, dtype.Q4_K, dtype.Q6_K, dtype.Q3_K} {
		b.Run(ty.String(), func(b *testing.B) {
			size, _ := ty.RowBytes(n)
			q := make([]byte, size)
			if err := dtype.Quantize(ty, x, q); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(4 * n)
			for b.Loop() {
				if err := dtype.Dequantize(ty, q, y); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
