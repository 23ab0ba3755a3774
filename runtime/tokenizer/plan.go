package tokenizer

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/plans"
)

// FromPlan builds a plan's tokenizer: the reverse of the compiler's adapter
// (compiler/header.go planTokenizer). The runtime calls it at load, and the
// compiler calls it on the plan it is about to write, so that a vocabulary
// the runtime would refuse is refused at compile time by the same code.
//
// The plan keeps what the GGUF metadata said (model, pre-tokenizer,
// tokens, scores, token types, merges, special ids, flags); the settings
// llama.cpp ties to the pre-tokenizer (ignore merges, clean spaces, ...)
// and its fix-ups by token text are rules of this package, not data. So
// the adapter writes the plan's fields back as tokenizer metadata of an
// in-memory GGUF header and lets FromGGUF apply those rules, exactly as it
// did for the compiler: one implementation of the rules, no second copy
// here. It reads no model file.
func FromPlan(t *plans.Tokenizer) (*Tokenizer, error) {
	b := gguf.NewBuilder()
	b.SetString("general.architecture", "plan")
	b.SetString(keyModel, t.Model)
	if t.Pre != "" {
		b.SetString(keyPre, t.Pre)
	}
	b.SetStrings(keyTokens, t.Tokens)
	if len(t.Scores) > 0 {
		b.Set(keyScores, gguf.Float32s(t.Scores))
	}
	if len(t.Types) > 0 {
		b.Set(keyTokenType, gguf.Int32s(t.Types))
	}
	if len(t.Merges) > 0 {
		b.SetStrings(keyMerges, t.Merges)
	}
	for _, sp := range []struct {
		key string
		id  int32
	}{
		{"tokenizer.ggml.bos_token_id", t.BOS}, {"tokenizer.ggml.eos_token_id", t.EOS},
		{"tokenizer.ggml.eot_token_id", t.EOT}, {"tokenizer.ggml.unknown_token_id", t.UNK},
		{"tokenizer.ggml.padding_token_id", t.PAD},
	} {
		if sp.id >= 0 {
			b.SetUint32(sp.key, uint32(sp.id))
		}
	}
	b.SetBool(keyAddBOS, t.AddBOS)
	b.SetBool(keyAddEOS, t.AddEOS)
	b.SetBool(keyAddPrefix, t.AddSpacePrefix)
	var buf bytes.Buffer
	if _, err := b.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	f, err := gguf.Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	v, err := FromGGUF(f)
	if err != nil {
		return nil, err
	}
	// The plan's further end-of-generation ids stand even where the rules
	// by text would not find them.
	for _, id := range t.EOG {
		if id >= 0 && int(id) < len(v.Tokens) && !slices.Contains(v.EOG, id) {
			v.EOG = append(v.EOG, id)
		}
	}
	return New(v)
}
