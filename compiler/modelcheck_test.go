package compiler

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/compiler/synth"
)

// withMetadata rewrites src with the keys of set replaced (or added), every
// tensor as sparse zeros: a header the compiler reads exactly as the
// original but for those keys.
func withMetadata(t *testing.T, src, name string, set map[string]gguf.Value) string {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	b := gguf.NewBuilder()
	done := map[string]bool{}
	for _, kv := range f.KVs {
		if kv.Key == "general.alignment" {
			continue
		}
		if v, ok := set[kv.Key]; ok {
			b.Set(kv.Key, v)
			done[kv.Key] = true
			continue
		}
		b.Set(kv.Key, kv.Value)
	}
	for k, v := range set {
		if !done[k] {
			b.Set(k, v)
		}
	}
	for _, ti := range f.Tensors {
		b.AddZeroTensor(ti.Name, ti.Type, ti.Dims)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := b.WriteFile(path, true); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCompileRefusesWhatTheRuntimeWouldRefuse: each defect of a model's
// metadata that akunu would refuse at load (or run wrongly) is refused at
// compile time, one line naming the file and the key.
func TestCompileRefusesWhatTheRuntimeWouldRefuse(t *testing.T) {
	src := synthModel(t, t.TempDir(), synth.Options{Arch: "llama", Dim: 64, Layers: 1, Heads: 2, DType: dtype.F32, Seed: 1})
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := f.GetStrings("tokenizer.ggml.tokens")
	if err != nil || len(toks) < 20 {
		t.Fatalf("synthetic vocabulary: %d tokens, %v", len(toks), err)
	}
	n := uint32(len(toks))
	dup := append([]string(nil), toks...)
	dup[17] = dup[5]
	o := Options{Chip: chip(t, "cpu-avx2")}
	for _, tc := range []struct {
		name string
		set  map[string]gguf.Value
		ctx  int
		want string // "" compiles
	}{
		{"the untouched model compiles", nil, 0, ""},
		{"a token that repeats an earlier one names both",
			map[string]gguf.Value{"tokenizer.ggml.tokens": gguf.Strings(dup)}, 0,
			`tokenizer.ggml.tokens: token 17 "` + toks[5] + `" duplicates token 5`},
		{"a BOS id past the vocabulary names its key",
			map[string]gguf.Value{"tokenizer.ggml.bos_token_id": gguf.Uint32(n + 5)}, 0, "tokenizer.ggml.bos_token_id = "},
		{"a negative EOS id names its key",
			map[string]gguf.Value{"tokenizer.ggml.eos_token_id": gguf.Int32(-7)}, 0, "tokenizer.ggml.eos_token_id = -7"},
		{"a padding id past the vocabulary names its key",
			map[string]gguf.Value{"tokenizer.ggml.padding_token_id": gguf.Uint32(99999)}, 0, "tokenizer.ggml.padding_token_id = 99999"},
		{"an unknown-token id equal to the vocabulary size names its key",
			map[string]gguf.Value{"tokenizer.ggml.unknown_token_id": gguf.Uint32(n)}, 0, "tokenizer.ggml.unknown_token_id = "},
		{"an unset padding id (0xFFFFFFFF, as llama.cpp writes it) compiles",
			map[string]gguf.Value{"tokenizer.ggml.padding_token_id": gguf.Uint32(math.MaxUint32)}, 0, ""},
		{"a RoPE base of 0", map[string]gguf.Value{"llama.rope.freq_base": gguf.Float32(0)}, 0, "llama.rope.freq_base = 0: must be a positive finite number"},
		{"a NaN RoPE base", map[string]gguf.Value{"llama.rope.freq_base": gguf.Float32(float32(math.NaN()))}, 0, "llama.rope.freq_base = NaN"},
		{"a negative RoPE base", map[string]gguf.Value{"llama.rope.freq_base": gguf.Float32(-1e4)}, 0, "llama.rope.freq_base = -10000"},
		{"an infinite RoPE base", map[string]gguf.Value{"llama.rope.freq_base": gguf.Float32(float32(math.Inf(1)))}, 0, "llama.rope.freq_base = +Inf"},
		{"a training context of 0 asks for --ctx", map[string]gguf.Value{"llama.context_length": gguf.Uint32(0)}, 0, "llama.context_length = 0: the model's training context must be positive (pass --ctx N"},
		{"a training context of 0 with --ctx compiles", map[string]gguf.Value{"llama.context_length": gguf.Uint32(0)}, 256, ""},
		{"a chat template that does not parse names its line and column",
			map[string]gguf.Value{"tokenizer.chat_template": gguf.String("{% if %}hi")}, 0, "tokenizer.chat_template:1:7: "},
		{"a negative training context", map[string]gguf.Value{"llama.context_length": gguf.Int32(-5)}, 0, "llama.context_length = -5: "},
		{"an unknown pre-tokenizer names the key", map[string]gguf.Value{"tokenizer.ggml.pre": gguf.String("no-such-pre")}, 0, `tokenizer.ggml.pre "no-such-pre": unknown pre-tokenizer`},
		{"an EOT id past the vocabulary names its key",
			map[string]gguf.Value{"tokenizer.ggml.eot_token_id": gguf.Uint32(n + 1)}, 0, "tokenizer.ggml.eot_token_id = "},
		{"an unclosed block of the chat template",
			map[string]gguf.Value{"tokenizer.chat_template": gguf.String("{% for m in messages %}{{ m.content }}")}, 0, "tokenizer.chat_template:1:4: unclosed {% for %}"},
		{"an unknown tokenizer model names the key", map[string]gguf.Value{"tokenizer.ggml.model": gguf.String("t5x")}, 0, `tokenizer.ggml.model "t5x": unsupported tokenizer model`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := withMetadata(t, src, "m.gguf", tc.set)
			oo := o
			oo.Ctx = tc.ctx
			p, err := Compile(path, oo)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if tc.ctx != 0 && p.Model.HParams.Ctx != uint32(tc.ctx) {
					t.Errorf("context %d, want --ctx's %d", p.Model.HParams.Ctx, tc.ctx)
				}
				return
			}
			if err == nil {
				t.Fatalf("compiled; want an error mentioning %q", tc.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "m.gguf: ") || strings.Contains(msg, "\n") {
				t.Errorf("err = %q\nwant one line naming m.gguf and %q", msg, tc.want)
			}
			if errors.Is(err, ErrUnsupported) && strings.Contains(msg, "no rule") {
				t.Errorf("refused by a later pass, not the check: %v", err)
			}
		})
	}
}

// TestNoTemplateCompilesAModelWhoseTemplateDoesNotParse: --no-template is
// the way past a template the chat engine cannot parse; the plan then
// carries none, and the refusal says so.
func TestNoTemplateCompilesAModelWhoseTemplateDoesNotParse(t *testing.T) {
	src := synthModel(t, t.TempDir(), synth.Options{Arch: "llama", Dim: 64, Layers: 1, Heads: 2, DType: dtype.F32, Seed: 1})
	path := withMetadata(t, src, "m.gguf", map[string]gguf.Value{"tokenizer.chat_template": gguf.String("{% for m in messages %}")})
	o := Options{Chip: chip(t, "cpu-avx2")}
	if _, err := Compile(path, o); err == nil || !strings.Contains(err.Error(), "--no-template") {
		t.Fatalf("err = %v, want a refusal naming --no-template", err)
	}
	o.NoTemplate = true
	p, err := Compile(path, o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Model.Tokenizer.ChatTemplate != "" {
		t.Errorf("the plan carries a template: %q", p.Model.Tokenizer.ChatTemplate)
	}
}
