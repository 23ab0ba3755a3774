package toolcall

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// FuzzStream: any output in any format, split anywhere, parses as it does
// whole, without panicking; without calls it is all content, byte for
// byte; without an error every call's arguments are a JSON object.
func FuzzStream(f *testing.F) {
	for _, r := range recordings {
		f.Add(uint8(r.f), r.text, uint64(len(r.text)))
	}
	f.Add(uint8(Hermes), "<tool_call><tool_call>{\"name\":\"a\",\"arguments\":{\"b\":[[[[", uint64(3))
	f.Add(uint8(Llama3), " {\"name\":\"a\",\"parameters\":{}};{\"parameters\":{\"x\":1e5},\"name\":\"b\"}", uint64(9))
	f.Add(uint8(Mistral), "[TOOL_CALLS][{\"name\":\"\\ud83d\",\"arguments\":{},\"id\":123},]", uint64(1))
	f.Fuzz(func(t *testing.T, format uint8, text string, seed uint64) {
		fm := Format(format % 4)
		whole := parseSeeded(fm, []string{text})
		rng := rand.New(rand.NewPCG(seed, 1))
		var parts []string
		for rest := text; rest != ""; {
			n := 1 + rng.IntN(min(len(rest), 16))
			parts = append(parts, rest[:n])
			rest = rest[n:]
		}
		got := parseSeeded(fm, parts)
		if got.content != whole.content || got.err != whole.err || !sameCalls(got.calls, whole.calls) {
			t.Fatalf("format %v, split %q: %q %+v %q; whole: %q %+v %q", fm, parts, got.content, got.calls, got.err, whole.content, whole.calls, whole.err)
		}
		if len(whole.calls) == 0 && whole.err == "" && whole.content != text {
			t.Fatalf("format %v: no calls, but content %q is not the text %q", fm, whole.content, text)
		}
		if whole.err == "" {
			for i, c := range whole.calls {
				var obj map[string]any
				if json.Unmarshal([]byte(c.Arguments), &obj) != nil || c.Name == "" {
					t.Fatalf("format %v, %q: call %d %q has arguments %q, not a JSON object", fm, text, i, c.Name, c.Arguments)
				}
			}
		}
	})
}
