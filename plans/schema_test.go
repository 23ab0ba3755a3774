package plans

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// wireType names a field's wire type for the schema listing.
func wireType(ptr any) string {
	switch v := ptr.(type) {
	case enum:
		return "uint (" + reflect.TypeOf(v).Elem().Name() + ")"
	case record:
		return reflect.TypeOf(v).Elem().Name()
	case seq:
		return "array of " + reflect.TypeOf(v.elem()).Elem().Name()
	case *map[string]string:
		return "map str→str (keys ascending)"
	case *[]byte, *[32]byte:
		return "bin" + map[bool]string{true: " (32 bytes)"}[reflect.TypeOf(v) == reflect.TypeOf(&[32]byte{})]
	case *[3]uint32:
		return "array of 3 uint"
	}
	t := reflect.TypeOf(ptr).Elem()
	if t.Kind() == reflect.Slice {
		return "array of " + scalarName(t.Elem())
	}
	return scalarName(t)
}

func scalarName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "str"
	case reflect.Float32:
		return "float32"
	case reflect.Float64:
		return "float64"
	case reflect.Bool:
		return "bool"
	case reflect.Int32:
		return "int"
	}
	return "uint (" + t.Kind().String() + ")"
}

// schemaListing is testdata/schema.golden: every record's fields in wire
// order.
func schemaListing() string {
	var b strings.Builder
	for _, r := range schemaRecords() {
		fmt.Fprintf(&b, "%s\n", reflect.TypeOf(r).Elem().Name())
		for i, f := range r.fields() {
			fmt.Fprintf(&b, "  %2d %-24s %s, since %d\n", i, f.name, wireType(f.ptr), f.since)
		}
	}
	return b.String()
}

// parseListing splits a listing into each record's field lines.
func parseListing(s string) (order []string, fields map[string][]string) {
	fields = map[string][]string{}
	cur := ""
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if !strings.HasPrefix(l, " ") {
			cur = l
			order = append(order, cur)
			continue
		}
		fields[cur] = append(fields[cur], l)
	}
	return order, fields
}

// TestSchemaIsAppendOnly holds the wire schema to FORMAT.md's evolution
// policy: against the committed listing, a record may only gain fields at
// its end. Even UPDATE_GOLDEN will not rewrite a listing whose existing
// lines changed; a deliberate break of the format means deleting the
// listing by hand (and raising FormatVersion, and a compat file).
func TestSchemaIsAppendOnly(t *testing.T) {
	got := schemaListing()
	path := filepath.Join("testdata", "schema.golden")
	old, err := os.ReadFile(path)
	if err == nil {
		_, was := parseListing(string(old))
		_, now := parseListing(got)
		for rec, lines := range was {
			cur, ok := now[rec]
			if !ok {
				t.Errorf("record %s was removed from the schema", rec)
				continue
			}
			for i, l := range lines {
				if i >= len(cur) || cur[i] != l {
					have := "(none)"
					if i < len(cur) {
						have = cur[i]
					}
					t.Errorf("record %s, field %d changed; fields may only be appended (FORMAT.md):\n  was: %s\n  now: %s",
						rec, i, strings.TrimSpace(l), strings.TrimSpace(have))
					break
				}
			}
		}
		if t.Failed() {
			return
		}
	}
	golden(t, "schema.golden", []byte(got))
}

var snake = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

func TestSchemaFields(t *testing.T) {
	for _, r := range schemaRecords() {
		name := reflect.TypeOf(r).Elem().Name()
		seen := map[string]bool{}
		prev := uint32(1)
		for i, f := range r.fields() {
			if !snake.MatchString(f.name) {
				t.Errorf("%s field %d: %q is not snake_case", name, i, f.name)
			}
			if seen[f.name] {
				t.Errorf("%s field %d: %q twice", name, i, f.name)
			}
			seen[f.name] = true
			if f.since < prev || f.since > FormatVersion {
				t.Errorf("%s field %d %s: since %d; versions must not decrease along a record and not pass %d",
					name, i, f.name, f.since, FormatVersion)
			}
			prev = f.since
			if reflect.ValueOf(f.ptr).Kind() != reflect.Pointer && reflect.TypeOf(f.ptr).Kind() != reflect.Struct {
				t.Errorf("%s field %s: not a pointer", name, f.name)
			}
		}
	}
}

// TestSchemaCoversEveryField: a struct field that the schema forgets
// would silently not be saved. Each exported field of each record must be
// in its fields() (Header's versions live in the preamble).
func TestSchemaCoversEveryField(t *testing.T) {
	inPreamble := map[string]bool{"Header.Format": true, "Header.MinRuntime": true}
	for _, r := range schemaRecords() {
		v := reflect.ValueOf(r).Elem()
		listed := map[uintptr]bool{}
		for _, f := range r.fields() {
			listed[fieldAddr(f.ptr)] = true
		}
		for i := range v.NumField() {
			sf := v.Type().Field(i)
			if !sf.IsExported() || inPreamble[v.Type().Name()+"."+sf.Name] {
				continue
			}
			if !listed[v.Field(i).Addr().Pointer()] {
				t.Errorf("%s.%s is not in the wire schema", v.Type().Name(), sf.Name)
			}
		}
	}
}

// fieldAddr is the address a schema entry points at.
func fieldAddr(ptr any) uintptr {
	if l, ok := ptr.(interface{ target() any }); ok {
		ptr = l.target()
	}
	return reflect.ValueOf(ptr).Pointer()
}
