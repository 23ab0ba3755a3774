package synth

import (
	"fmt"
	"io"
	"strings"

	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/specs"
)

type ioWriter = io.Writer

// VocabFromGGUF copies the tokenizer of a GGUF file: every tokenizer.* key,
// verbatim. Weights are never read.
func VocabFromGGUF(path string) (*Vocab, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	v := &Vocab{copied: map[string]gguf.Value{}}
	for _, kv := range f.KVs {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			v.copied[kv.Key] = kv.Value
		}
	}
	if v.Tokens, err = f.GetStrings("tokenizer.ggml.tokens"); err != nil {
		return nil, fmt.Errorf("%s: no tokenizer to copy: %w", path, err)
	}
	return v, nil
}

// writeVocab stores the tokenizer under tokenizer.*.
func writeVocab(b *gguf.Builder, v *Vocab) {
	if v.copied != nil {
		for _, k := range sortedKeys(v.copied) {
			b.Set(k, v.copied[k])
		}
		return
	}
	b.SetString("tokenizer.ggml.model", v.Model)
	b.SetString("tokenizer.ggml.pre", v.Pre)
	b.SetStrings("tokenizer.ggml.tokens", v.Tokens)
	b.Set("tokenizer.ggml.token_type", gguf.Int32s(v.Types))
	if len(v.Merges) > 0 {
		b.SetStrings("tokenizer.ggml.merges", v.Merges)
	}
	b.SetUint32("tokenizer.ggml.bos_token_id", uint32(v.BOS))
	b.SetUint32("tokenizer.ggml.eos_token_id", uint32(v.EOS))
	b.SetBool("tokenizer.ggml.add_bos_token", v.AddBOS)
	if v.ChatTempl != "" {
		b.SetString("tokenizer.chat_template", v.ChatTempl)
	}
}

// toGGUF converts a spec value to the GGUF type llama.cpp expects of
// hyperparameter keys: counts as uint32, reals as float32, flags as bool,
// per-layer lists as arrays of those.
func toGGUF(v specs.Value) (gguf.Value, error) {
	switch v.Kind {
	case specs.KindInt:
		if v.Int < 0 || v.Int > 1<<32-1 {
			return gguf.Int32(int32(v.Int)), nil
		}
		return gguf.Uint32(uint32(v.Int)), nil
	case specs.KindFloat:
		return gguf.Float32(float32(v.Float)), nil
	case specs.KindBool:
		return gguf.Bool(v.Bool), nil
	case specs.KindString:
		return gguf.String(v.Str), nil
	case specs.KindArray:
		if len(v.Elems) != v.Len {
			return gguf.Value{}, fmt.Errorf("array of %d elements has no contents", v.Len)
		}
		switch v.Elem {
		case specs.KindInt:
			xs := make([]int32, v.Len)
			for i, e := range v.Elems {
				xs[i] = int32(e.Int)
			}
			return gguf.Int32s(xs), nil
		case specs.KindFloat:
			xs := make([]float32, v.Len)
			for i, e := range v.Elems {
				xs[i] = float32(e.Float)
			}
			return gguf.Float32s(xs), nil
		case specs.KindBool:
			xs := make([]bool, v.Len)
			for i, e := range v.Elems {
				xs[i] = e.Bool
			}
			return gguf.Bools(xs), nil
		case specs.KindString:
			xs := make([]string, v.Len)
			for i, e := range v.Elems {
				xs[i] = e.Str
			}
			return gguf.Strings(xs), nil
		}
	}
	return gguf.Value{}, fmt.Errorf("cannot store %s", v)
}

// has reports whether writeVocab writes the tokenizer key: every key of a
// copied tokenizer; the standard ones of the built-in one.
func (v *Vocab) has(key string) bool {
	if v.copied != nil {
		_, ok := v.copied[key]
		return ok
	}
	switch key {
	case "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
		"tokenizer.ggml.merges", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
		"tokenizer.ggml.add_bos_token", "tokenizer.chat_template":
		return true
	}
	return false
}
