package dtype

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
)

// Type is a GGML type code as stored in a GGUF tensor info.
type Type uint32

// The GGML type codes. Gaps (4, 5, 31–33, 36–38) are codes GGML retired;
// they are not valid in a file.
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I32     Type = 26
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	BF16    Type = 30
	TQ1_0   Type = 34
	TQ2_0   Type = 35
	MXFP4   Type = 39
	NVFP4   Type = 40
	Q1_0    Type = 41
	Q2_0    Type = 42
)

// Info describes the storage of one type: elements are grouped in blocks of
// BlockSize, each stored in BlockBytes bytes.
type Info struct {
	Name       string // GGML's lower-case name, e.g. "q4_K"
	BlockSize  int    // elements per block
	BlockBytes int    // bytes per block
	Quantized  bool
}

// registry is indexed by type code; a zero BlockSize marks a retired code.
var registry = [...]Info{
	F32:     {"f32", 1, 4, false},
	F16:     {"f16", 1, 2, false},
	Q4_0:    {"q4_0", 32, 18, true},
	Q4_1:    {"q4_1", 32, 20, true},
	Q5_0:    {"q5_0", 32, 22, true},
	Q5_1:    {"q5_1", 32, 24, true},
	Q8_0:    {"q8_0", 32, 34, true},
	Q8_1:    {"q8_1", 32, 36, true},
	Q2_K:    {"q2_K", 256, 84, true},
	Q3_K:    {"q3_K", 256, 110, true},
	Q4_K:    {"q4_K", 256, 144, true},
	Q5_K:    {"q5_K", 256, 176, true},
	Q6_K:    {"q6_K", 256, 210, true},
	Q8_K:    {"q8_K", 256, 292, true},
	IQ2_XXS: {"iq2_xxs", 256, 66, true},
	IQ2_XS:  {"iq2_xs", 256, 74, true},
	IQ3_XXS: {"iq3_xxs", 256, 98, true},
	IQ1_S:   {"iq1_s", 256, 50, true},
	IQ4_NL:  {"iq4_nl", 32, 18, true},
	IQ3_S:   {"iq3_s", 256, 110, true},
	IQ2_S:   {"iq2_s", 256, 82, true},
	IQ4_XS:  {"iq4_xs", 256, 136, true},
	I8:      {"i8", 1, 1, false},
	I16:     {"i16", 1, 2, false},
	I32:     {"i32", 1, 4, false},
	I64:     {"i64", 1, 8, false},
	F64:     {"f64", 1, 8, false},
	IQ1_M:   {"iq1_m", 256, 56, true},
	BF16:    {"bf16", 1, 2, false},
	TQ1_0:   {"tq1_0", 256, 54, true},
	TQ2_0:   {"tq2_0", 256, 66, true},
	MXFP4:   {"mxfp4", 32, 17, true},
	NVFP4:   {"nvfp4", 64, 36, true},
	Q1_0:    {"q1_0", 128, 18, true},
	Q2_0:    {"q2_0", 64, 18, true},
}

// ErrUnknownType is returned for a code that is not a live GGML type.
var ErrUnknownType = errors.New("unknown GGML type")

// Lookup returns the storage facts of t, or false for a retired or unknown code.
func (t Type) Lookup() (Info, bool) {
	if int(t) >= len(registry) || registry[t].BlockSize == 0 {
		return Info{}, false
	}
	return registry[t], true
}

// Valid reports whether t is a live GGML type code.
func (t Type) Valid() bool { _, ok := t.Lookup(); return ok }

// String returns GGML's upper-case spelling (Q4_K, F16, IQ4_XS), or
// "type(N)" for an unknown code.
func (t Type) String() string {
	if in, ok := t.Lookup(); ok {
		return strings.ToUpper(in.Name)
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of elements per block (1 for plain types), 0 if unknown.
func (t Type) BlockSize() int { in, _ := t.Lookup(); return in.BlockSize }

// BlockBytes is the number of bytes per block, 0 if unknown.
func (t Type) BlockBytes() int { in, _ := t.Lookup(); return in.BlockBytes }

// Quantized reports whether t stores elements in quantized blocks.
func (t Type) Quantized() bool { in, _ := t.Lookup(); return in.Quantized }

// RowBytes is the byte size of n elements of type t. It fails when t is
// unknown, n is negative or not a whole number of blocks, or the size
// overflows an int64.
func (t Type) RowBytes(n int64) (int64, error) {
	in, ok := t.Lookup()
	if !ok {
		return 0, fmt.Errorf("%w: code %d", ErrUnknownType, uint32(t))
	}
	if n < 0 {
		return 0, fmt.Errorf("%v: negative element count %d", t, n)
	}
	if n%int64(in.BlockSize) != 0 {
		return 0, fmt.Errorf("%v: %d elements is not a multiple of the block size %d", t, n, in.BlockSize)
	}
	hi, lo := bits.Mul64(uint64(n/int64(in.BlockSize)), uint64(in.BlockBytes))
	if hi != 0 || lo > 1<<62 {
		return 0, fmt.Errorf("%v: %d elements overflow the byte size", t, n)
	}
	return int64(lo), nil
}

// All returns every live type code in ascending order.
func All() []Type {
	var out []Type
	for i := range registry {
		if registry[i].BlockSize != 0 {
			out = append(out, Type(i))
		}
	}
	return out
}

// Parse accepts a type name in any case ("q4_k", "Q4_K", "f16").
func Parse(s string) (Type, error) {
	for _, t := range All() {
		if strings.EqualFold(registry[t].Name, s) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("%w: %q", ErrUnknownType, s)
}
