package plans

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

func render(t *testing.T, p *Plan) string {
	t.Helper()
	var b bytes.Buffer
	if err := p.Render(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestRenderGolden(t *testing.T) {
	golden(t, "example.golden", []byte(render(t, Example())))
}

func TestRenderIsStable(t *testing.T) {
	p := Example()
	p.Header.Target.Tuning.Extra = map[string]string{}
	for i := range 30 {
		p.Header.Target.Tuning.Extra[fmt.Sprintf("k%02d", i)] = "v"
	}
	first := render(t, p)
	for range 10 {
		if render(t, p) != first {
			t.Fatal("two renderings of one plan differ")
		}
	}
	if render(t, mustDecode(t, Encode(p))) != first {
		t.Fatal("a decoded plan renders differently")
	}
}

func TestRenderParamsHook(t *testing.T) {
	var b bytes.Buffer
	err := Example().RenderWith(&b, RenderOptions{Params: func(kernel string, params []byte) []string {
		if kernel != "rmsnorm_f32" {
			return nil
		}
		return []string{fmt.Sprintf("n = %d", binary.LittleEndian.Uint32(params))}
	}})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "  param 3.0: n = 64\n") {
		t.Error("the hook's fields are not rendered")
	}
	if !strings.Contains(out, "  params 3: 40000000 01000000\n") {
		t.Error("kernels the hook does not know lost their hex")
	}
}

// TestRenderSurvivesBrokenPlans: Render is a debugging tool and must work
// on the plans Validate refuses.
func TestRenderSurvivesBrokenPlans(t *testing.T) {
	p := Example()
	p.Programs[0].Commands[0].Pipeline = 999
	p.Programs[0].Commands[0].Bindings[0].Buffer = 999
	p.Buffers[10].Sources = []uint32{12345}
	p.Programs[0].Commands[0].Patches[0].Kind = 77
	out := render(t, p)
	for _, want := range []string{"kernel: #999", "bind 0: #999+0", "concat_rows(#12345)", "patch(77)"} {
		if !strings.Contains(out, want) {
			t.Errorf("rendering lacks %q", want)
		}
	}
}

func TestFormatValues(t *testing.T) {
	long := make([]string, 40)
	for i := range long {
		long[i] = "t"
	}
	tests := []struct {
		in   any
		want string
	}{
		{ptr("llama"), "llama"},
		{ptr(""), `""`},
		{ptr(" padded"), `" padded"`},
		{ptr("a\tb"), `"a\tb"`},
		{ptr("line\nline"), "<9 bytes, sha256 d39a27a2…>"},
		{ptr("\xff"), `"\xff"`},
		{&[]string{"a", "b"}, "[a b]"},
		{&long, "<40 items, sha256 64deb976…>"},
		{ptr(float32(1e-5)), "1e-05"},
		{ptr(68.25), "68.25"},
		{&[]byte{1, 2}, "[0102]"},
	}
	for _, tt := range tests {
		if got := formatValue(tt.in); got != tt.want {
			t.Errorf("formatValue(%#v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestRenderOfAnUnencodedPlanShowsTheVersionsEncodeWrites(t *testing.T) {
	p := Example()
	p.Header.Format, p.Header.MinRuntime = 0, 0
	if first := strings.SplitN(render(t, p), "\n", 2)[0]; first != fmt.Sprintf("akunu plan format %d, min runtime 2", FormatVersion) {
		t.Errorf("first line %q", first)
	}
}
