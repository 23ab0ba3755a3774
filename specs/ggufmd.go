package specs

import "github.com/akunu-dev/akunu/compiler/gguf"

// GGUFMetadata adapts a GGUF header to the Metadata that Resolve reads.
// Array values are converted lazily: only their length and element kind are
// taken, unless the array is short (per-layer lists), so a 150,000-entry
// token list costs nothing.
func GGUFMetadata(f *gguf.File) Metadata { return ggufMD{f} }

type ggufMD struct{ f *gguf.File }

func (m ggufMD) HasTensor(name string) bool {
	_, ok := m.f.Tensor(name)
	return ok
}

func (m ggufMD) Lookup(key string) (Value, bool) {
	v, ok := m.f.Get(key)
	if !ok {
		return Value{}, false
	}
	return fromGGUF(v)
}

// shortArray is the longest array whose elements are converted.
const shortArray = 4096

func fromGGUF(v gguf.Value) (Value, bool) {
	if v.Type() == gguf.TypeArray {
		out := Value{Kind: KindArray, Len: v.Len(), Elem: ggufKind(v.ElemType())}
		if out.Len <= shortArray {
			elems, _ := v.Array()
			out.Elems = make([]Value, len(elems))
			for i, e := range elems {
				var ok bool
				if out.Elems[i], ok = fromGGUF(e); !ok {
					return Value{}, false
				}
			}
		}
		return out, true
	}
	if s, ok := v.Str(); ok {
		return StringValue(s), true
	}
	if b, ok := v.Bool(); ok {
		return BoolValue(b), true
	}
	switch v.Type() {
	case gguf.TypeFloat32, gguf.TypeFloat64:
		f, _ := v.Float()
		return FloatValue(f), true
	}
	if i, ok := v.Int(); ok {
		return IntValue(i), true
	}
	if u, ok := v.Uint(); ok {
		return IntValue(int64(u)), true
	}
	return Value{}, false
}

func ggufKind(t gguf.ValueType) Kind {
	switch t {
	case gguf.TypeString:
		return KindString
	case gguf.TypeBool:
		return KindBool
	case gguf.TypeFloat32, gguf.TypeFloat64:
		return KindFloat
	case gguf.TypeArray:
		return KindArray
	}
	return KindInt
}
