package kernels

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"testing"
)

// sample fills every named field of a parameter struct with a value of its
// own, so that a field written at the wrong offset shows.
func sample(t reflect.Type) reflect.Value {
	v := reflect.New(t).Elem()
	for i := range t.NumField() {
		f := v.Field(i)
		if t.Field(i).Name == "_" {
			continue
		}
		switch f.Kind() {
		case reflect.Uint32, reflect.Uint16:
			f.SetUint(uint64(0x0101*(i+1)) & (1<<(8*f.Type().Size()) - 1))
		case reflect.Int32:
			f.SetInt(-int64(i + 1))
		case reflect.Float32:
			f.SetFloat(float64(i) + 0.25)
		}
	}
	return v
}

func TestEncodeWritesEachFieldAtItsCOffsetAndPaddingAsZero(t *testing.T) {
	for _, s := range ParamStructs() {
		t.Run(s.Name, func(t *testing.T) {
			v := sample(s.Type)
			b := Encode(v.Interface())
			if len(b) != s.Size {
				t.Fatalf("%d bytes, want %d", len(b), s.Size)
			}
			for i, f := range s.Fields {
				at := b[f.Offset : f.Offset+f.Size]
				if f.Padding() {
					if !bytes.Equal(at, make([]byte, f.Size)) {
						t.Errorf("%s at %d: % x, want zeros", f.Name, f.Offset, at)
					}
					continue
				}
				fv := v.Field(i)
				var got any
				switch f.CType {
				case "uint32_t":
					got, fv = binary.LittleEndian.Uint32(at), reflect.ValueOf(uint32(fv.Uint()))
				case "uint16_t":
					got, fv = binary.LittleEndian.Uint16(at), reflect.ValueOf(uint16(fv.Uint()))
				case "int32_t":
					got, fv = int32(binary.LittleEndian.Uint32(at)), reflect.ValueOf(int32(fv.Int()))
				case "float":
					got, fv = math.Float32frombits(binary.LittleEndian.Uint32(at)), reflect.ValueOf(float32(fv.Float()))
				}
				if got != fv.Interface() {
					t.Errorf("%s at %d: %v, want %v", f.Name, f.Offset, got, fv.Interface())
				}
			}

			// A pointer encodes as the value, and Decode reads it back.
			p := reflect.New(s.Type)
			p.Elem().Set(v)
			if !bytes.Equal(Encode(p.Interface()), b) {
				t.Error("Encode(&v) differs from Encode(v)")
			}
			back := reflect.New(s.Type)
			if err := Decode(b, back.Interface()); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Elem().Interface(), v.Interface()) {
				t.Errorf("Decode(Encode(v)) = %+v, want %+v", back.Elem().Interface(), v.Interface())
			}
		})
	}
}

func TestEncodeOfTheSameValuesGivesTheSameBytes(t *testing.T) {
	a := Encode(AttentionParams{NHeads: 32, KVLen: 7, Scale: 0.125})
	b := Encode(&AttentionParams{NHeads: 32, KVLen: 7, Scale: 0.125})
	if !bytes.Equal(a, b) {
		t.Errorf("% x\n% x", a, b)
	}
	if got := binary.LittleEndian.Uint32(a[16:]); got != 7 {
		t.Errorf("kv_len at 16 = %d", got)
	}
}

func TestEncodeRefusesATypeThatIsNotAParameterStruct(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "struct { X uint32 }") {
			t.Errorf("recovered %v", r)
		}
	}()
	Encode(struct{ X uint32 }{1})
}

func TestDecodeRefusesAShortBufferAndANonPointer(t *testing.T) {
	if err := Decode(make([]byte, 8), &GEMVParams{}); err == nil {
		t.Error("8 bytes decoded into a 16-byte struct")
	}
	if err := Decode(make([]byte, 16), GEMVParams{}); err == nil {
		t.Error("decoded into a value")
	}
}

func TestPatchableFieldsAreUint32sAtAlignedOffsetsWithKnownRoles(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range ParamStructs() {
		for role, off := range s.Patchable() {
			f, _ := fieldAt(s, off)
			if f.CType != "uint32_t" || off%4 != 0 || !contains(PatchRoles, role) {
				t.Errorf("%s.%s: patched %q as %s at %d", s.Name, f.Name, role, f.CType, off)
			}
			seen[role] = true
		}
	}
	for _, r := range PatchRoles {
		if !seen[r] {
			t.Errorf("no struct has a field patched as %q", r)
		}
	}
	if got := (AttentionParams{}); structsByType[reflect.TypeOf(got)].Patchable()["kv_len"] != 16 {
		t.Errorf("AttentionParams kv_len offset %d", structsByType[reflect.TypeOf(got)].Patchable()["kv_len"])
	}
}

func fieldAt(s *Struct, off int) (Field, bool) {
	for _, f := range s.Fields {
		if f.Offset == off {
			return f, true
		}
	}
	return Field{}, false
}

// Structs that break the layout rules, and the error each must give.
type (
	implicitPad struct {
		A uint16 `c:"a"`
		B uint32 `c:"b"`
		_ uint32
		_ uint32
	}
	implicitTail struct {
		A uint32 `c:"a"`
		B uint32 `c:"b"`
		C uint32 `c:"c"`
		D uint16 `c:"d"`
	}
	untagged struct {
		A uint32
		_ [3]uint32
	}
	odd struct {
		A uint32 `c:"a"`
	}
	patchedFloat struct {
		A float32 `c:"a" patch:"position"`
		_ uint32
		_ uint32
		_ uint32
	}
	twoPositions struct {
		A uint32 `c:"a" patch:"position"`
		B uint32 `c:"b" patch:"position"`
		_ uint32
		_ uint32
	}
	unknownRole struct {
		A uint32 `c:"a" patch:"layer"`
		_ uint32
		_ uint32
		_ uint32
	}
	wide struct {
		A uint64 `c:"a"`
		_ uint64
	}
	sameName struct {
		A uint32 `c:"a"`
		B uint32 `c:"a"`
		_ uint32
		_ uint32
	}
)

func TestLayoutRefusesStructsThatBreakTheRules(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{implicitPad{}, "make the padding explicit"},
		{implicitTail{}, "make the tail padding explicit"},
		{untagged{}, "needs a c:\"name\" tag"},
		{odd{}, "not a positive multiple of 16"},
		{patchedFloat{}, "must be a uint32"},
		{twoPositions{}, "both patched"},
		{unknownRole{}, "unknown patch role"},
		{wide{}, "parameter fields are uint32"},
		{sameName{}, "two fields named a"},
	} {
		t.Run(reflect.TypeOf(tc.v).Name(), func(t *testing.T) {
			_, err := layoutOf(reflect.TypeOf(tc.v))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParamFieldsNameEveryField(t *testing.T) {
	b := Encode(NormParams{Dim: 4096, Eps: 1e-5})
	got := strings.Join(ParamFields("rmsnorm_f16", b), "; ")
	if !strings.Contains(got, "dim = 4096") || !strings.Contains(got, "eps = 1e-05") || strings.Contains(got, "_pad") {
		t.Errorf("ParamFields = %q", got)
	}
	if ParamFields("rmsnorm_f16", b[:4]) != nil || ParamFields("no_such_kernel", b) != nil {
		t.Error("wrong sizes and unknown kernels must give nil (the caller falls back to hex)")
	}
}
