package dtype_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// These tests need no llama.cpp.

// roundTripBound is the largest RMS error, relative to the RMS of a
// gaussian row, each type may show after Quantize and Dequantize.
var roundTripBound = map[dtype.Type]float64{
	dtype.F32: 0, dtype.F16: 0.001, dtype.BF16: 0.005,
	dtype.Q8_0: 0.01, dtype.Q8_1: 0.01, dtype.Q8_K: 0.01,
	dtype.Q6_K: 0.03, dtype.Q5_0: 0.06, dtype.Q5_1: 0.06, dtype.Q5_K: 0.05,
	dtype.Q4_0: 0.12, dtype.Q4_1: 0.12, dtype.Q4_K: 0.1, dtype.IQ4_NL: 0.12, dtype.IQ4_XS: 0.12,
	dtype.MXFP4: 0.2, dtype.NVFP4: 0.15, dtype.Q3_K: 0.25, dtype.Q2_K: 0.45,
	dtype.Q2_0: 0.8, dtype.Q1_0: 0.7,
}

func TestQuantizeThenDequantizeStaysClose(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const n = 16 * 256
	x := make([]float32, n)
	var ss float64
	for i := range x {
		x[i] = float32(r.NormFloat64())
		ss += float64(x[i]) * float64(x[i])
	}
	rms := math.Sqrt(ss / n)
	for _, ty := range dtype.All() {
		if !dtype.CanQuantize(ty) {
			continue
		}
		t.Run(ty.String(), func(t *testing.T) {
			bound, ok := roundTripBound[ty]
			if !ok {
				t.Fatalf("no round-trip bound for %v", ty)
			}
			size, _ := ty.RowBytes(n)
			q := make([]byte, size)
			if err := dtype.Quantize(ty, x, q); err != nil {
				t.Fatal(err)
			}
			y := make([]float32, n)
			if err := dtype.Dequantize(ty, q, y); err != nil {
				t.Fatal(err)
			}
			var es float64
			for i := range x {
				d := float64(y[i] - x[i])
				es += d * d
			}
			if rel := math.Sqrt(es/n) / rms; rel > bound {
				t.Errorf("relative RMS error %.4f exceeds %.4f", rel, bound)
			}
		})
	}
}

func TestEveryLiveTypeDequantizesExceptTheGridTypes(t *testing.T) {
	noRef := map[dtype.Type]bool{
		dtype.IQ1_S: true, dtype.IQ1_M: true, dtype.IQ2_XXS: true, dtype.IQ2_XS: true, dtype.IQ2_S: true,
		dtype.IQ3_XXS: true, dtype.IQ3_S: true, dtype.TQ1_0: true, dtype.TQ2_0: true,
	}
	for _, ty := range dtype.All() {
		if got := dtype.CanDequantize(ty); got == noRef[ty] {
			t.Errorf("CanDequantize(%v) = %v", ty, got)
		}
	}
}

func TestConversionErrorsSayWhat(t *testing.T) {
	cases := []struct {
		name string
		err  error
		is   error
		text string
	}{
		{"a grid type has no reference", dtype.Dequantize(dtype.IQ2_XXS, make([]byte, 66), make([]float32, 256)), dtype.ErrNoReference, "IQ2_XXS"},
		{"a grid type cannot be quantized", dtype.Quantize(dtype.IQ3_S, make([]float32, 256), make([]byte, 110)), dtype.ErrNoReference, "IQ3_S"},
		{"the integer types cannot be quantized", dtype.Quantize(dtype.I32, make([]float32, 4), make([]byte, 16)), dtype.ErrNoReference, "I32"},
		{"a retired code is unknown", dtype.Dequantize(dtype.Type(4), nil, nil), dtype.ErrUnknownType, "code 4"},
		{"a partial block is refused", dtype.Dequantize(dtype.Q4_0, make([]byte, 18), make([]float32, 31)), nil, "multiple of the block size 32"},
		{"a short source is refused", dtype.Dequantize(dtype.Q4_K, make([]byte, 143), make([]float32, 256)), nil, "take 144 bytes, got 143"},
		{"a long destination is refused", dtype.Quantize(dtype.Q8_0, make([]float32, 64), make([]byte, 100)), nil, "take 68 bytes, got 100"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.err == nil {
				t.Fatal("no error")
			}
			if c.is != nil && !errors.Is(c.err, c.is) {
				t.Errorf("%v is not %v", c.err, c.is)
			}
			if !bytes.Contains([]byte(c.err.Error()), []byte(c.text)) {
				t.Errorf("%q does not mention %q", c.err, c.text)
			}
		})
	}
	if err := dtype.Dequantize(dtype.Q4_0, nil, nil); err != nil {
		t.Errorf("an empty row: %v", err)
	}
}

func TestHalfHelpersRoundTripEveryFiniteHalf(t *testing.T) {
	for h := range 1 << 16 {
		f := dtype.Float16frombits(uint16(h))
		if f != f {
			if got := dtype.Float16bits(f); got&0x7fff != 0x7e00 {
				t.Fatalf("NaN %#04x narrows to %#04x", h, got)
			}
			continue
		}
		if got := dtype.Float16bits(f); got != uint16(h) {
			t.Fatalf("%#04x -> %g -> %#04x", h, f, got)
		}
		if got := dtype.BFloat16bits(dtype.BFloat16frombits(uint16(h))); got != uint16(h) && dtype.BFloat16frombits(uint16(h)) == dtype.BFloat16frombits(uint16(h)) {
			t.Fatalf("bf16 %#04x -> %#04x", h, got)
		}
	}
	for _, c := range []struct {
		f    float32
		want uint16
	}{
		{65504, 0x7bff}, {65519.99, 0x7bff}, {65520, 0x7c00}, {1 + 1.0/2048, 0x3c00}, {1 + 3.0/2048, 0x3c02},
		{float32(math.Ldexp(1, -25)), 0}, {float32(math.Ldexp(1.5, -25)), 1}, {float32(math.Ldexp(1, -24)), 1},
		{-0.0, 0}, {float32(math.Copysign(0, -1)), 0x8000},
	} {
		if got := dtype.Float16bits(c.f); got != c.want {
			t.Errorf("Float16bits(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}

// TestNoFusedMultiplyAdd compiles this package for arm64 and for amd64 v3
// and looks for fused multiply-add instructions. The reference C rounds
// every product; one fused instruction would make our bytes differ from
// ggml's on those targets, which the x86 CI machine would never notice.
func TestNoFusedMultiplyAdd(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the package twice")
	}
	// go test puts its own GOROOT/bin first on PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool: %v", err)
	}
	fused := regexp.MustCompile(`\t(FMADD|FMSUB|FNMADD|FNMSUB|VFMADD|VFMSUB|VFNMADD|VFNMSUB)\w*\s.*`)
	for _, env := range [][]string{{"GOARCH=arm64"}, {"GOARCH=amd64", "GOAMD64=v3"}} {
		cmd := exec.Command(goTool, "build", "-gcflags=-S", "-o", os.DevNull, ".")
		cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux"), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", env, err, out)
		}
		for _, m := range fused.FindAll(out, 5) {
			t.Errorf("%v: fused instruction: %s", env, bytes.TrimSpace(m))
		}
	}
}

func ExampleQuantize() {
	x := make([]float32, 32)
	for i := range x {
		x[i] = float32(i) / 8
	}
	q := make([]byte, 18) // one Q4_0 block
	if err := dtype.Quantize(dtype.Q4_0, x, q); err != nil {
		panic(err)
	}
	y := make([]float32, 32)
	if err := dtype.Dequantize(dtype.Q4_0, q, y); err != nil {
		panic(err)
	}
	fmt.Println(y[4], y[8], y[31])
	// Output: 0.484375 0.96875 3.875
}
