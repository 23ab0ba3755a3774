package plans

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// BufferKind says where a buffer's bytes come from. The zero value is not a
// kind, so a Buffer left unset fails validation instead of becoming scratch.
type BufferKind uint8

const (
	// BufWeight is a slice of the model file: Tensor, Offset and Size.
	BufWeight BufferKind = 1 + iota
	// BufDerived is computed from weight buffers at load (Recipe, Sources):
	// fused QKV or gate|up by row concatenation, or a backend's repack.
	BufDerived
	// BufConstant is Data, embedded in the plan (RoPE frequency tables).
	BufConstant
	// BufScratch holds activations (ping-pong buffers, attention scores),
	// sized by the compiler for the chain and the prefill chunk.
	BufScratch
	// BufKV is one half (K or V) of one layer's cache, head-major
	// [n_kv_heads, max_ctx, head_dim], Shape listing it innermost first.
	BufKV
	// BufIO is what the runtime reads or writes between replays: token ids,
	// positions, logits, sampling parameters and outputs (Role says which).
	BufIO
	// BufParams packs the static parameter bytes of many commands, for a
	// compiler that binds parameters from a buffer instead of inline.
	BufParams

	bufKindEnd
)

var bufKindNames = [...]string{"", "weight", "derived", "constant", "scratch", "kv", "io", "params"}

func (k BufferKind) String() string {
	if k > 0 && k < bufKindEnd {
		return bufKindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// KVHalf says which half of a layer's cache a BufKV buffer holds.
type KVHalf uint8

const (
	KVKey KVHalf = 1 + iota
	KVValue

	kvHalfEnd
)

func (h KVHalf) String() string {
	switch h {
	case 0:
		return "-"
	case KVKey:
		return "K"
	case KVValue:
		return "V"
	}
	return "half(" + strconv.Itoa(int(h)) + ")"
}

// Recipes of derived buffers. RecipeConcatRows stacks its sources' rows in
// order (the sources share dtype and row length, so the sizes add up);
// a repack is named "repack:<layout>" and belongs to the backend that asked.
const (
	RecipeConcatRows   = "concat_rows"
	RecipeRepackPrefix = "repack:"
)

// Buffer is one allocation the runtime makes (or maps). Fields that do not
// apply to its Kind stay zero; Validate holds every kind to that.
type Buffer struct {
	Name string // unique; "blk.3.attn_q.weight", "kv.L3.k", "act.a"
	Kind BufferKind
	Size uint64 // bytes
	// DType is the GGML type name ("f32", "f16", "q4_0", "q4_K") where one
	// applies: weights, derived, KV, and typed scratch.
	DType string
	// Shape lists the dimensions innermost first, as GGUF's ne does.
	Shape []uint64

	// Weight: the tensor's name in the GGUF file and its absolute byte
	// offset there; the length is Size.
	Tensor string
	Offset uint64

	// Derived: how to build it, and from which weight buffers.
	Recipe  string
	Sources []uint32

	// Constant: the bytes (len(Data) == Size).
	Data []byte

	// KV: the layer and the half.
	Layer uint32
	Half  KVHalf

	// IO: what the runtime uses it for ("tokens", "positions", "logits",
	// "sample.params", "sample.out").
	Role string
}

// ConstType is the type of a pipeline's function-constant value.
type ConstType uint8

const (
	ConstBool ConstType = 1 + iota
	ConstI32
	ConstU32
	ConstF32

	constTypeEnd
)

var constTypeNames = [...]string{"", "bool", "i32", "u32", "f32"}

func (t ConstType) String() string {
	if t > 0 && t < constTypeEnd {
		return constTypeNames[t]
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// Constant is one function-constant value of a pipeline (Metal's
// [[function_constant(Index)]]; a template or #define elsewhere). Value holds
// the raw 32 bits: 0 or 1 for bool, two's complement for i32, IEEE bits
// for f32. Raw bits keep encoding, comparison and cache keys exact.
type Constant struct {
	Index uint32
	Type  ConstType
	Value uint32
}

// Bool, I32, U32 and F32 build constants.
func Bool(index uint32, v bool) Constant {
	var b uint32
	if v {
		b = 1
	}
	return Constant{index, ConstBool, b}
}
func I32(index uint32, v int32) Constant   { return Constant{index, ConstI32, uint32(v)} }
func U32(index uint32, v uint32) Constant  { return Constant{index, ConstU32, v} }
func F32(index uint32, v float32) Constant { return Constant{index, ConstF32, math.Float32bits(v)} }

// String renders the value by its type: "7:u32=4096", "2:bool=true".
func (c Constant) String() string {
	var v string
	switch c.Type {
	case ConstBool:
		v = strconv.FormatBool(c.Value != 0)
		if c.Value > 1 {
			v = "0x" + strconv.FormatUint(uint64(c.Value), 16)
		}
	case ConstI32:
		v = strconv.Itoa(int(int32(c.Value)))
	case ConstF32:
		v = strconv.FormatFloat(float64(math.Float32frombits(c.Value)), 'g', -1, 32)
	default:
		v = strconv.FormatUint(uint64(c.Value), 10)
	}
	return fmt.Sprintf("%d:%s=%s", c.Index, c.Type, v)
}

// Pipeline is a kernel specialized by its function constants: what a backend
// compiles once per plan (a Metal PSO, a CUDA function).
type Pipeline struct {
	Kernel    string     // catalog name: "gemv_q4_0_l"
	Constants []Constant // ascending Index, each at most once
	// Key is CacheKey(Kernel, Constants), stored so a pipeline cache can be
	// keyed without re-deriving it; Validate checks that it matches.
	Key string
}

// CacheKey is the deterministic identity of a pipeline:
// "kernel|index:type=value|..." in ascending constant index, e.g.
// "gemv_q4_0_l|0:u32=4096|1:bool=true". Two pipelines with the same key are
// the same compiled object.
func CacheKey(kernel string, consts []Constant) string {
	var b strings.Builder
	b.WriteString(kernel)
	for _, c := range consts {
		b.WriteByte('|')
		b.WriteString(c.String())
	}
	return b.String()
}

// BufferIndex returns the index of the buffer named name.
func (p *Plan) BufferIndex(name string) (uint32, bool) {
	for i := range p.Buffers {
		if p.Buffers[i].Name == name {
			return uint32(i), true
		}
	}
	return 0, false
}

// AddBuffer appends b and returns its index.
func (p *Plan) AddBuffer(b Buffer) uint32 {
	p.Buffers = append(p.Buffers, b)
	return uint32(len(p.Buffers) - 1)
}

// AddPipeline returns the index of the pipeline of kernel with consts,
// appending it if the plan has none with the same key: a compiler calls it
// per command and gets each variant once, in first-use order, which keeps
// plans deterministic. The constants are copied and sorted by index.
func (p *Plan) AddPipeline(kernel string, consts ...Constant) uint32 {
	if len(consts) == 0 {
		consts = nil
	} else {
		consts = slices.Clone(consts)
		slices.SortStableFunc(consts, func(a, b Constant) int { return cmp.Compare(a.Index, b.Index) })
	}
	key := CacheKey(kernel, consts)
	for i := range p.Pipelines {
		if p.Pipelines[i].Key == key {
			return uint32(i)
		}
	}
	p.Pipelines = append(p.Pipelines, Pipeline{Kernel: kernel, Constants: consts, Key: key})
	return uint32(len(p.Pipelines) - 1)
}
