package llamacpp

import (
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// ggmlTypeCount bounds the type codes passed to ggml: its accessors index a
// table of GGML_TYPE_COUNT entries without checking.
const ggmlTypeCount = 43

// typeTraits mirrors ggml.h's struct ggml_type_traits (56 bytes on a 64-bit
// target: to_float at offset 40, from_float_ref at 48). ggml returns a
// pointer into its static table.
type typeTraits struct {
	TypeName           *byte
	BlckSize           int64
	BlckSizeInterleave int64
	TypeSize           uintptr
	IsQuantized        bool
	_                  [7]byte
	ToFloat            uintptr // void (*)(const void *, float *, int64_t)
	FromFloatRef       uintptr // void (*)(const float *, void *, int64_t)
}

type ggmlFuncs struct {
	typeSize         func(t int32) uintptr
	blckSize         func(t int32) int64
	typeName         func(t int32) string
	getTypeTraits    func(t int32) *typeTraits
	quantizeInit     func(t int32)
	fp16ToFP32       func(h uint16) float32
	fp32ToFP16       func(f float32) uint16
	fp32ToFP16Row    uintptr
	fp32ToBF16RowRef uintptr
	loadAllFromPath  func(dir string)
	base             uintptr // libggml-base's handle, for per-type symbols
	ggml             uintptr // libggml's handle (the backend registry)
}

func (g *ggmlFuncs) bind(base, ggml uintptr) error {
	var b binder
	g.base, g.ggml = base, ggml
	b.fn(base, "ggml_type_size", &g.typeSize)
	b.fn(base, "ggml_blck_size", &g.blckSize)
	b.fn(base, "ggml_type_name", &g.typeName)
	b.fn(base, "ggml_get_type_traits", &g.getTypeTraits)
	b.fn(base, "ggml_quantize_init", &g.quantizeInit)
	b.fn(base, "ggml_fp16_to_fp32", &g.fp16ToFP32)
	b.fn(base, "ggml_fp32_to_fp16", &g.fp32ToFP16)
	g.fp32ToFP16Row = b.sym(base, "ggml_fp32_to_fp16_row")
	g.fp32ToBF16RowRef = b.sym(base, "ggml_fp32_to_bf16_row_ref")
	b.fn(ggml, "ggml_backend_load_all_from_path", &g.loadAllFromPath)
	return b.err
}

func checkCode(t dtype.Type) error {
	if uint32(t) >= ggmlTypeCount {
		return fmt.Errorf("llamacpp: type code %d is beyond ggml's table (%d types)", uint32(t), ggmlTypeCount)
	}
	return nil
}

// TypeSize is ggml_type_size: bytes per block (0 for a retired code).
func (l *Lib) TypeSize(t dtype.Type) int {
	if checkCode(t) != nil {
		return 0
	}
	return int(l.ggml.typeSize(int32(t)))
}

// BlockSize is ggml_blck_size: elements per block (0 for a retired code).
func (l *Lib) BlockSize(t dtype.Type) int {
	if checkCode(t) != nil {
		return 0
	}
	return int(l.ggml.blckSize(int32(t)))
}

// TypeName is ggml_type_name ("q4_K"; ggml's placeholder for a retired code).
func (l *Lib) TypeName(t dtype.Type) string {
	if checkCode(t) != nil {
		return ""
	}
	return l.ggml.typeName(int32(t))
}

// FP16ToFP32 is ggml_fp16_to_fp32 on one value.
func (l *Lib) FP16ToFP32(h uint16) float32 { return l.ggml.fp16ToFP32(h) }

// FP32ToFP16 is ggml_fp32_to_fp16 on one value.
func (l *Lib) FP32ToFP16(f float32) uint16 { return l.ggml.fp32ToFP16(f) }

// traits returns ggml's traits entry for t.
func (l *Lib) traits(t dtype.Type) (*typeTraits, error) {
	if err := checkCode(t); err != nil {
		return nil, err
	}
	p := l.ggml.getTypeTraits(int32(t))
	if p == nil {
		return nil, fmt.Errorf("llamacpp: ggml has no traits for %v", t)
	}
	return p, nil
}

// rowShape checks that n elements of t make whole blocks and returns the
// row's byte size as ggml computes it.
func (l *Lib) rowShape(t dtype.Type, n int) (int, error) {
	bs, ts := l.BlockSize(t), l.TypeSize(t)
	if bs <= 0 || ts <= 0 {
		return 0, fmt.Errorf("llamacpp: %v is not a live ggml type", t)
	}
	if n < 0 || n%bs != 0 {
		return 0, fmt.Errorf("llamacpp: %v: %d elements is not a whole number of %d-element blocks", t, n, bs)
	}
	return n / bs * ts, nil
}

// typeFn returns the function in t's traits, or else the exported symbol
// pattern names for t's ggml name (Q8_K's traits list neither function, but
// libggml-base exports both).
func (l *Lib) typeFn(t dtype.Type, fromTraits uintptr, pattern string) uintptr {
	if fromTraits != 0 {
		return fromTraits
	}
	sym, err := purego.Dlsym(l.ggml.base, fmt.Sprintf(pattern, l.TypeName(t)))
	if err != nil {
		return 0
	}
	return sym
}

// Dequantize converts n elements of type t in src to float32 with ggml's
// to_float for t (or its exported dequantize_row_<type>). Types without one
// (F32, F64, the integer types, Q8_1) are an error.
func (l *Lib) Dequantize(t dtype.Type, src []byte, n int) ([]float32, error) {
	size, err := l.rowShape(t, n)
	if err != nil {
		return nil, err
	}
	if len(src) != size {
		return nil, fmt.Errorf("llamacpp: %v: %d elements take %d bytes, got %d", t, n, size, len(src))
	}
	tr, err := l.traits(t)
	if err != nil {
		return nil, err
	}
	fn := l.typeFn(t, tr.ToFloat, "dequantize_row_%s")
	if fn == 0 {
		return nil, fmt.Errorf("llamacpp: ggml has no to_float for %v", t)
	}
	dst := make([]float32, n)
	if n > 0 {
		purego.SyscallN(fn, uintptr(unsafe.Pointer(&src[0])), uintptr(unsafe.Pointer(&dst[0])), uintptr(n))
	}
	return dst, nil
}

// QuantizeRef converts src to type t with ggml's reference quantizer (the
// quantize_row_<type>_ref functions; ggml_fp32_to_fp16_row for F16 and
// ggml_fp32_to_bf16_row_ref for BF16).
func (l *Lib) QuantizeRef(t dtype.Type, src []float32) ([]byte, error) {
	size, err := l.rowShape(t, len(src))
	if err != nil {
		return nil, err
	}
	var fn uintptr
	switch t {
	case dtype.F16:
		fn = l.ggml.fp32ToFP16Row
	case dtype.BF16:
		fn = l.ggml.fp32ToBF16RowRef
	default:
		tr, err := l.traits(t)
		if err != nil {
			return nil, err
		}
		fn = l.typeFn(t, tr.FromFloatRef, "quantize_row_%s_ref")
	}
	if fn == 0 {
		return nil, fmt.Errorf("llamacpp: ggml has no reference quantizer for %v", t)
	}
	// The IQ2/IQ3/IQ1 quantizers search grids built on first use; the call
	// is a no-op for every other type.
	l.ggml.quantizeInit(int32(t))
	dst := make([]byte, size)
	if len(src) > 0 {
		purego.SyscallN(fn, uintptr(unsafe.Pointer(&src[0])), uintptr(unsafe.Pointer(&dst[0])), uintptr(len(src)))
	}
	return dst, nil
}
