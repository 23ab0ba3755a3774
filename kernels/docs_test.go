package kernels

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

const (
	docsPath     = "../docs/kernels.md"
	catalogBegin = "<!-- catalog:begin: generated from the catalog; UPDATE_GOLDEN=1 go test ./kernels rewrites it -->\n"
	catalogEnd   = "<!-- catalog:end -->"
	structsBegin = "<!-- structs:begin: generated from params.go; UPDATE_GOLDEN=1 go test ./kernels rewrites it -->\n"
	structsEnd   = "<!-- structs:end -->"
)

// catalogMarkdown renders every kernel group (an op and a variant: the
// kernels that share a contract) with its bindings, parameters, constants
// and geometry.
func catalogMarkdown() string {
	type key struct {
		op Op
		v  Variant
	}
	var order []key
	groups := map[key][]*Kernel{}
	for _, k := range All() {
		g := key{k.Op, k.Variant}
		if groups[g] == nil {
			order = append(order, g)
		}
		groups[g] = append(groups[g], k)
	}
	var b strings.Builder
	for _, g := range order {
		ks := groups[g]
		k := ks[0]
		fmt.Fprintf(&b, "### `%s`\n\n%s.\n\n", pattern(ks), k.Summary)
		names := make([]string, len(ks))
		for i, k := range ks {
			names[i] = "`" + k.Name + "`"
		}
		fmt.Fprintf(&b, "Kernels: %s.\n\n", strings.Join(names, ", "))
		b.WriteString("| slot | binding | access | role | bound when | what |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, bd := range k.Bindings {
			what := bd.Doc
			if bd.Role == RoleParam {
				what = "[`" + bd.Doc + "`](#" + strings.ToLower(bd.Doc) + ")"
			}
			fmt.Fprintf(&b, "| %d | `%s` | %v | %v | %s | %s |\n", bd.Slot, bd.Name, bd.Access, bd.Role, orDash(bd.When), what)
		}
		if len(k.Constants) > 0 {
			b.WriteString("\nConstants: ")
			for i, c := range k.Constants {
				if i > 0 {
					b.WriteString("; ")
				}
				fmt.Fprintf(&b, "%d `%s` (%v): %s", c.Index, c.Name, c.Type, c.Doc)
			}
			b.WriteString(".\n")
		}
		if len(k.Patchable) > 0 {
			var ps []string
			for _, f := range k.Params.Fields {
				if f.Patch != "" {
					ps = append(ps, fmt.Sprintf("%s (`%s` at %d)", f.Patch, f.Name, f.Offset))
				}
			}
			fmt.Fprintf(&b, "\nPatched: %s.\n", strings.Join(ps, ", "))
		}
		fmt.Fprintf(&b, "\nGeometry: %s.\n\n", k.GeometryDoc)
	}
	return b.String()
}

// pattern spells the names of a group: gemv_<dtype>[_l][_f32].
func pattern(ks []*Kernel) string {
	k := ks[0]
	if len(ks) == 1 {
		return k.Name
	}
	s := k.Spec
	s.Act = dtype.F16
	n, _ := s.Name()
	if k.Op.Typed() {
		n = strings.Replace(n, "_"+strings.ToLower(k.DType.String()), "_<dtype>", 1)
	} else {
		n = strings.TrimSuffix(n, "_f16") + "_<act>"
	}
	if k.Op.Typed() && ks[len(ks)-1].Act == dtype.F32 {
		n += "[_f32]"
	}
	return n
}

// structsMarkdown renders each parameter struct as a table.
func structsMarkdown() string {
	var b strings.Builder
	for _, s := range ParamStructs() {
		fmt.Fprintf(&b, "### %s\n\n%d bytes.\n\n| offset | type | field | patched |\n| --- | --- | --- | --- |\n", s.Name, s.Size)
		for _, f := range s.Fields {
			fmt.Fprintf(&b, "| %d | `%s` | `%s` | %s |\n", f.Offset, f.CType, f.Name, orDash(f.Patch))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// The guide shows the catalog the code has, not an older copy.
func TestTheGuideShowsTheCatalogAndStructsTheCodeHas(t *testing.T) {
	data, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	stale := false
	for _, sec := range []struct{ begin, end, want string }{
		{catalogBegin, catalogEnd, catalogMarkdown()},
		{structsBegin, structsEnd, structsMarkdown()},
	} {
		i, j := strings.Index(doc, sec.begin), strings.Index(doc, sec.end)
		if i < 0 || j < i {
			t.Fatalf("%s: no %q ... %q section", docsPath, strings.TrimSpace(sec.begin), sec.end)
		}
		if doc[i+len(sec.begin):j] != sec.want {
			stale = true
			doc = doc[:i+len(sec.begin)] + sec.want + doc[j:]
		}
	}
	if !stale {
		return
	}
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(docsPath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s shows an old catalog (UPDATE_GOLDEN=1 go test ./kernels rewrites it)", docsPath)
}
