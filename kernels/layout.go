package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Struct is the C layout of one parameter struct, as ShaderTypes.h declares
// it and as Encode writes it.
type Struct struct {
	Name   string       `json:"name"` // the Go and C type name: GEMVParams
	Size   int          `json:"size"` // bytes, a multiple of 16
	Fields []Field      `json:"fields"`
	Type   reflect.Type `json:"-"`
}

// Field is one field of a parameter struct.
type Field struct {
	Name   string `json:"name"`            // the C name (kv_len); padding is _pad0, _pad1, ...
	GoName string `json:"-"`               // the Go name (KVLen); "" for padding
	CType  string `json:"type"`            // uint32_t, int32_t, float or uint16_t
	Offset int    `json:"offset"`          // bytes from the start of the struct
	Size   int    `json:"size"`            // bytes
	Patch  string `json:"patch,omitempty"` // the patch role, "" when the field is fixed at compile time
}

// Padding reports whether f is explicit padding.
func (f Field) Padding() bool { return f.GoName == "" }

// Field returns the field with C name name.
func (s *Struct) Field(name string) (Field, bool) {
	for _, f := range s.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// Patchable maps each patch role of s to the byte offset of its field.
func (s *Struct) Patchable() map[string]int {
	m := map[string]int{}
	for _, f := range s.Fields {
		if f.Patch != "" {
			m[f.Patch] = f.Offset
		}
	}
	return m
}

// PatchRoles are the roles a field may be patched in, the plan's patch kinds.
var PatchRoles = []string{"token", "position", "kv_len", "out_slot", "batch"}

// cTypes maps the Go kinds a parameter field may have to their C types.
var cTypes = map[reflect.Kind]string{
	reflect.Uint32:  "uint32_t",
	reflect.Int32:   "int32_t",
	reflect.Float32: "float",
	reflect.Uint16:  "uint16_t",
}

// layoutOf computes and checks the C layout of a parameter struct type. A C
// compiler lays out fields of these types at their natural alignment, which
// is also Go's, so the two agree exactly when Go inserts no padding of its
// own: every field starts where the previous one ends. Explicit padding
// keeps it so; the test in ctypes_test.go holds it to a real C compiler.
func layoutOf(t reflect.Type) (*Struct, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("kernels: parameter type %v is not a struct", t)
	}
	s := &Struct{Name: t.Name(), Size: int(t.Size()), Type: t}
	seenC := map[string]bool{}
	seenRole := map[string]string{}
	next, pad := 0, 0
	for i := range t.NumField() {
		sf := t.Field(i)
		ct, ok := cTypes[sf.Type.Kind()]
		if !ok || sf.Type.PkgPath() != "" {
			return nil, fmt.Errorf("kernels: %s.%s: type %v; parameter fields are uint32, int32, float32 or uint16", t.Name(), sf.Name, sf.Type)
		}
		if int(sf.Offset) != next {
			return nil, fmt.Errorf("kernels: %s.%s: at offset %d, after %d bytes of fields: make the padding explicit", t.Name(), sf.Name, sf.Offset, next)
		}
		f := Field{GoName: sf.Name, CType: ct, Offset: int(sf.Offset), Size: int(sf.Type.Size())}
		if sf.Name == "_" {
			f.GoName, f.Name = "", fmt.Sprintf("_pad%d", pad)
			pad++
			if sf.Tag != "" {
				return nil, fmt.Errorf("kernels: %s: padding at offset %d has tags", t.Name(), sf.Offset)
			}
		} else {
			f.Name = sf.Tag.Get("c")
			if f.Name == "" || strings.HasPrefix(f.Name, "_") || !isCIdent(f.Name) {
				return nil, fmt.Errorf("kernels: %s.%s: needs a c:\"name\" tag with a C identifier not starting with _", t.Name(), sf.Name)
			}
			f.Patch = sf.Tag.Get("patch")
		}
		if seenC[f.Name] {
			return nil, fmt.Errorf("kernels: %s: two fields named %s", t.Name(), f.Name)
		}
		seenC[f.Name] = true
		if f.Patch != "" {
			if !contains(PatchRoles, f.Patch) {
				return nil, fmt.Errorf("kernels: %s.%s: unknown patch role %q (one of %s)", t.Name(), sf.Name, f.Patch, strings.Join(PatchRoles, ", "))
			}
			if sf.Type.Kind() != reflect.Uint32 || f.Offset%4 != 0 {
				return nil, fmt.Errorf("kernels: %s.%s: a patched field must be a uint32 at a 4-byte-aligned offset", t.Name(), sf.Name)
			}
			if other, dup := seenRole[f.Patch]; dup {
				return nil, fmt.Errorf("kernels: %s: fields %s and %s both patched as %q", t.Name(), other, f.Name, f.Patch)
			}
			seenRole[f.Patch] = f.Name
		}
		s.Fields = append(s.Fields, f)
		next = f.Offset + f.Size
	}
	if next != s.Size {
		return nil, fmt.Errorf("kernels: %s: %d bytes of fields in a %d-byte struct: make the tail padding explicit", t.Name(), next, s.Size)
	}
	if s.Size == 0 || s.Size%16 != 0 {
		return nil, fmt.Errorf("kernels: %s: size %d is not a positive multiple of 16", t.Name(), s.Size)
	}
	return s, nil
}

func isCIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// The layouts, computed once; a struct that breaks the rules stops the
// program at start-up, so a bad struct cannot reach a plan.
var structs, structsByType = loadStructs()

func loadStructs() ([]*Struct, map[reflect.Type]*Struct) {
	var list []*Struct
	m := map[reflect.Type]*Struct{}
	for _, p := range paramStructs {
		s, err := layoutOf(reflect.TypeOf(p))
		if err != nil {
			panic(err)
		}
		list = append(list, s)
		m[s.Type] = s
	}
	return list, m
}

// ParamStructs returns the layouts of every parameter struct, in the order
// ShaderTypes.h declares them. The result is shared: do not modify it.
func ParamStructs() []*Struct { return structs }

// StructOf returns the layout of the parameter struct params (a value or a
// pointer to one), or false if it is not a parameter struct.
func StructOf(params any) (*Struct, bool) {
	t := reflect.TypeOf(params)
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s, ok := structsByType[t]
	return s, ok
}

// Encode returns the bytes of a parameter struct (a value or a pointer to
// one) as a kernel reads them: the C layout, little-endian (every target the
// plans run on is), padding zero. The same values give the same bytes.
// It panics if params is not one of the parameter structs: that is a bug in
// the caller, not a condition of the input.
func Encode(params any) []byte {
	s, ok := StructOf(params)
	if !ok {
		panic(fmt.Sprintf("kernels.Encode: %T is not a parameter struct", params))
	}
	b, err := binary.Append(make([]byte, 0, s.Size), binary.LittleEndian, params)
	if err != nil || len(b) != s.Size {
		panic(fmt.Sprintf("kernels.Encode: %T: %d bytes, want %d (%v)", params, len(b), s.Size, err))
	}
	return b
}

// Decode reads the bytes of a parameter struct into params, a pointer to
// one: what a CPU kernel or a plan rendering does with a command's
// parameter bytes.
func Decode(b []byte, params any) error {
	s, ok := StructOf(params)
	if !ok || reflect.TypeOf(params).Kind() != reflect.Pointer {
		return fmt.Errorf("kernels.Decode: %T is not a pointer to a parameter struct", params)
	}
	if len(b) != s.Size {
		return fmt.Errorf("kernels.Decode: %s is %d bytes, got %d", s.Name, s.Size, len(b))
	}
	_, err := binary.Decode(b, binary.LittleEndian, params)
	return err
}

// ParamFields renders the parameter bytes of a command of the named kernel
// as "name = value" lines, one per field (padding left out), for plan
// renderings and diffs (plans.RenderOptions.Params). It returns nil for an
// unknown kernel or bytes of the wrong size, so the caller falls back to hex.
func ParamFields(kernel string, b []byte) []string {
	k, ok := Lookup(kernel)
	if !ok || k.Params == nil || len(b) != k.Params.Size {
		return nil
	}
	out := make([]string, 0, len(k.Params.Fields))
	for _, f := range k.Params.Fields {
		if f.Padding() || f.Offset+f.Size > len(b) {
			continue
		}
		raw := b[f.Offset : f.Offset+f.Size]
		var v string
		switch f.CType {
		case "float":
			v = strconv.FormatFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(raw))), 'g', -1, 32)
		case "int32_t":
			v = strconv.FormatInt(int64(int32(binary.LittleEndian.Uint32(raw))), 10)
		case "uint16_t":
			v = strconv.FormatUint(uint64(binary.LittleEndian.Uint16(raw)), 10)
		default:
			v = strconv.FormatUint(uint64(binary.LittleEndian.Uint32(raw)), 10)
		}
		out = append(out, f.Name+" = "+v)
	}
	return out
}
