package archs_test

import (
	"io/fs"
	"sort"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/archs"
	"github.com/akunu-dev/akunu/runtime/chat"
	"github.com/akunu-dev/akunu/specs"
)

func TestEverySpecLoadsAndValidates(t *testing.T) {
	r, err := specs.LoadFS(archs.FS, "archs/")
	if err != nil {
		t.Fatalf("the built-in specs do not load:\n%v", err)
	}
	files, err := fs.Glob(archs.FS, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(f, ".yaml")
		t.Run(name, func(t *testing.T) {
			a, ok := r.Spec(name)
			if !ok {
				t.Fatalf("%s loaded no spec", f)
			}
			if a.Doc == "" {
				t.Error("no doc: say which models the spec compiles")
			}
			if a.Abstract {
				return
			}
			if len(a.Architectures) == 0 {
				t.Error("matches no architecture")
			}
			for _, g := range a.Architectures {
				got, err := r.ForArchitecture(g)
				if err != nil || got != a {
					t.Errorf("ForArchitecture(%q) = %v, %v", g, got, err)
				}
			}
			if len(a.Digest()) != 64 {
				t.Errorf("digest %q", a.Digest())
			}
		})
	}
}

// The architectures llama.cpp runs with the graphs these specs transcribe.
func TestTheNineFamiliesAreCovered(t *testing.T) {
	r, err := specs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bert", "gemma", "gemma2", "gemma3", "llama", "phi3", "qwen2", "qwen3", "qwen3moe"}
	got := r.Architectures()
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("architectures %v, want %v", got, want)
	}
	if names := r.Names(); strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("names %v, want %v (base is abstract)", names, want)
	}
}

// TestChatTemplatesNameBuiltins holds every spec's chat_template to the
// formats runtime/chat has, and the families that have a single format to
// naming it.
func TestChatTemplatesNameBuiltins(t *testing.T) {
	reg, err := specs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"qwen2": "chatml", "qwen3": "chatml", "gemma": "gemma", "gemma2": "gemma", "gemma3": "gemma"}
	for _, name := range reg.Names() {
		a, _ := reg.Spec(name)
		if a.ChatTemplate != "" {
			if _, ok := chat.Builtin(a.ChatTemplate); !ok {
				t.Errorf("%s: chat_template %q is no built-in (have %v)", a.File, a.ChatTemplate, chat.BuiltinNames())
			}
		}
		if w, ok := want[name]; ok && a.ChatTemplate != w {
			t.Errorf("%s: chat_template %q, want %q", a.File, a.ChatTemplate, w)
		}
	}
}
