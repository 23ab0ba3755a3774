package gguf

import (
	"fmt"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// KV is one metadata key-value pair.
type KV struct {
	Key    string
	Value  Value
	Offset int64 // where the pair starts in the file (its key's length field)
}

// TensorInfo is one entry of the tensor table, checked: its type is known,
// its shape is whole blocks, and its bytes lie inside the file, aligned, and
// overlap no other tensor's.
type TensorInfo struct {
	Name       string
	Dims       []uint64   // GGML order: Dims[0] (ne[0]) varies fastest; at most MaxDims
	Type       dtype.Type // element type
	Offset     uint64     // start of the data, relative to the data section, as stored
	FileOffset int64      // start of the data in the file: DataOffset + Offset
	Size       int64      // bytes of data
	InfoOffset int64      // where this entry starts in the tensor table
}

// Elements is the number of elements (1 for a tensor with no dimensions,
// as in GGML).
func (t *TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= int64(d) // checked against overflow when read or added
	}
	return n
}

// String is a short display form: `blk.0.attn_q.weight F32 [64 64] @1234+16384`.
func (t *TensorInfo) String() string {
	return fmt.Sprintf("%s %v %v @%d+%d", t.Name, t.Type, t.Dims, t.FileOffset, t.Size)
}

// File is a parsed GGUF header: the metadata, the tensor table, and where
// the tensor data lies. It holds no tensor bytes.
type File struct {
	Version   uint32
	Alignment int64 // of the data section and of every tensor in it
	KVs       []KV  // in file order
	Tensors   []TensorInfo

	HeaderSize int64 // bytes from the magic through the end of the tensor table
	DataOffset int64 // start of the data section (HeaderSize rounded up to Alignment when there are tensors)
	FileSize   int64

	// HeaderHash is the SHA-256 of the first HeaderSize bytes of the file:
	// magic, version, counts, metadata and tensor table, exactly as stored.
	// A plan records it to refuse being replayed over another file.
	HeaderHash [32]byte

	keys    map[string]int // key -> index in KVs
	tensors map[string]int // name -> index in Tensors
}

// Get returns the value of a metadata key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.keys[key]
	if !ok {
		return Value{}, false
	}
	return f.KVs[i].Value, true
}

// KV returns a metadata pair with its offset in the file.
func (f *File) KV(key string) (*KV, bool) {
	i, ok := f.keys[key]
	if !ok {
		return nil, false
	}
	return &f.KVs[i], true
}

// Tensor returns the tensor table entry of a name.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensors[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// Architecture is general.architecture ("llama", "qwen3", ...), or "" if
// it is absent or not a string.
func (f *File) Architecture() string {
	v, _ := f.Get("general.architecture")
	s, _ := v.Str()
	return s
}

// The typed getters below fail with ErrMissingKey or ErrWrongType, in an
// error that names the key and where it lies.

// GetString returns a string value.
func (f *File) GetString(key string) (string, error) {
	return get(f, key, "a string", Value.Str)
}

// GetUint returns a non-negative integer of any width.
func (f *File) GetUint(key string) (uint64, error) {
	return get(f, key, "a non-negative integer", Value.Uint)
}

// GetInt returns an integer of any width that fits an int64.
func (f *File) GetInt(key string) (int64, error) {
	return get(f, key, "an integer", Value.Int)
}

// GetFloat returns an f32 or f64.
func (f *File) GetFloat(key string) (float64, error) {
	return get(f, key, "a float", Value.Float)
}

// GetBool returns a bool.
func (f *File) GetBool(key string) (bool, error) {
	return get(f, key, "a bool", Value.Bool)
}

// GetStrings returns a string array.
func (f *File) GetStrings(key string) ([]string, error) {
	return get(f, key, "an array of strings", Value.Strings)
}

// GetFloat32s returns an f32 array.
func (f *File) GetFloat32s(key string) ([]float32, error) {
	return get(f, key, "an array of f32", Value.Float32s)
}

// GetInt32s returns an integer array whose elements fit an int32.
func (f *File) GetInt32s(key string) ([]int32, error) {
	return get(f, key, "an array of integers that fit an i32", Value.Int32s)
}

func get[T any](f *File, key, want string, as func(Value) (T, bool)) (T, error) {
	var zero T
	kv, ok := f.KV(key)
	if !ok {
		return zero, fmt.Errorf("gguf: %s: %w", keyWhere(key), ErrMissingKey)
	}
	x, ok := as(kv.Value)
	if !ok {
		return zero, errAt(ErrWrongType, keyWhere(key), kv.Offset, "value %s is %s, want %s", kv.Value, describe(kv.Value), want)
	}
	return x, nil
}

// describe names a value's type: "u32", "an array of f32".
func describe(v Value) string {
	if v.typ == TypeArray {
		return "an array of " + v.elem.String()
	}
	return v.typ.String()
}
