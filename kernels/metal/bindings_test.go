package metal

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
)

// appleKernels are the kernels an Apple plan can name: every kernel with
// F16 activations (the _f32 twins are for CPU plans).
func appleKernels() []*kernels.Kernel {
	var out []*kernels.Kernel
	for _, k := range kernels.All() {
		if k.Act == dtype.F16 {
			out = append(out, k)
		}
	}
	return out
}

func parse(t *testing.T) (map[string]*Kernel, map[string][]FunctionConstant) {
	t.Helper()
	ks, fcs, err := Parse()
	if err != nil {
		t.Fatal(err)
	}
	return ks, fcs
}

func TestEveryMSLKernelIsInTheCatalog(t *testing.T) {
	ks, _ := parse(t)
	for n := range ks {
		k, ok := kernels.Lookup(n)
		if !ok {
			t.Errorf("%s (%s) is not a catalog kernel", n, ks[n].File)
		} else if k.Act != dtype.F16 {
			t.Errorf("%s (%s) has %v activations: Apple plans use F16", n, ks[n].File, k.Act)
		}
	}
}

var ident = regexp.MustCompile(`\w+`)

// The buffer indices, the parameter names and the parameter struct are the
// catalog's: a kernel that reads slot 2 as the bias while the compiler binds
// the output there would pass every other check.
func TestMSLBuffersAreTheCatalogsBindings(t *testing.T) {
	ks, _ := parse(t)
	for _, k := range appleKernels() {
		m := ks[k.Name]
		if m == nil {
			continue // TestEveryAppleKernelHasAnMSLFunction
		}
		t.Run(k.Name, func(t *testing.T) {
			var got, want []int
			for i := range m.Buffers {
				got = append(got, i)
			}
			for _, b := range k.Bindings {
				want = append(want, b.Slot)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: buffer indices %v, the catalog's slots %v", m.File, got, want)
			}
			for _, b := range k.Bindings {
				p := m.Buffers[b.Slot]
				if p.Name != b.Name && b.Slot != k.ParamSlot {
					t.Errorf("%s: buffer(%d) is %q, the catalog's slot %d is %q", m.File, b.Slot, p.Name, b.Slot, b.Name)
				}
				words := ident.FindAllString(p.Type, -1)
				switch {
				case b.Slot == k.ParamSlot:
					if !strings.HasPrefix(p.Type, "constant ") || !slices.Contains(words, k.Params.Name) || !strings.HasSuffix(p.Type, "&") {
						t.Errorf("%s: buffer(%d) is %q, want constant %s&", m.File, b.Slot, p.Type, k.Params.Name)
					}
				case !strings.HasPrefix(p.Type, "device "):
					t.Errorf("%s: buffer(%d) %s is %q, not a device pointer", m.File, b.Slot, b.Name, p.Type)
				case b.Access == kernels.Read && !slices.Contains(words, "const"):
					t.Errorf("%s: buffer(%d) %s is read-only in the catalog but %q", m.File, b.Slot, b.Name, p.Type)
				case b.Access != kernels.Read && slices.Contains(words, "const"):
					t.Errorf("%s: buffer(%d) %s is written in the catalog but %q", m.File, b.Slot, b.Name, p.Type)
				}
			}
		})
	}
}

// Function constants: each catalog constant is declared in the kernel's file
// at its index with its name and type, and the kernel's body uses it; within
// a file (one Metal library) an index means one constant.
func TestFunctionConstantsAreTheCatalogs(t *testing.T) {
	ks, fcs := parse(t)
	for f, list := range fcs {
		byIndex := map[int]FunctionConstant{}
		for _, c := range list {
			if o, dup := byIndex[c.Index]; dup {
				t.Errorf("%s: function_constant(%d) is both %s and %s", f, c.Index, o.Name, c.Name)
			}
			byIndex[c.Index] = c
		}
	}
	for _, k := range appleKernels() {
		m := ks[k.Name]
		if m == nil {
			continue
		}
		for _, c := range k.Constants {
			var decl *FunctionConstant
			for i := range fcs[m.File] {
				if fcs[m.File][i].Index == c.Index {
					decl = &fcs[m.File][i]
				}
			}
			switch {
			case decl == nil:
				t.Errorf("%s: %s: no function_constant(%d) (%s)", m.File, k.Name, c.Index, c.Name)
			case decl.Name != c.Name || decl.Type != c.Type.String():
				t.Errorf("%s: %s: function_constant(%d) is %s %s, the catalog's %s %s", m.File, k.Name, c.Index, decl.Type, decl.Name, c.Type, c.Name)
			case len(regexp.MustCompile(`\b`+c.Name+`\b`).FindAllString(stripped(t, m.File), 2)) < 2:
				t.Errorf("%s: %s: nothing in the file reads the constant %s", m.File, k.Name, c.Name)
			}
		}
	}
}

func TestTheMetalBackendRegistersItsKernels(t *testing.T) {
	names, err := Names()
	if err != nil {
		t.Fatal(err)
	}
	got := kernels.Implemented("metal")
	slices.Sort(got)
	if !slices.Equal(got, names) {
		t.Errorf("registered %v, the sources define %v", got, names)
	}
}

func TestSourcesAreSelfContained(t *testing.T) {
	for _, f := range Files() {
		s, err := Source(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(s, `#include "`) {
			t.Errorf("%s: a local include is left after expansion", f)
		}
		if !strings.Contains(s, "AKUNU_SHADER_TYPES_H") {
			t.Errorf("%s: ShaderTypes.h is not inlined", f)
		}
	}
}

// stripped is a file's source, its includes inlined (the bodies read the
// constants), without comments.
func stripped(t *testing.T, f string) string {
	s, err := Source(f)
	if err != nil {
		t.Fatal(err)
	}
	return commentRE.ReplaceAllString(s, "")
}
