package tokenizer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/akunu-dev/akunu/compiler/gguf"
)

// GGUF keys of the tokenizer metadata.
const (
	keyModel         = "tokenizer.ggml.model"
	keyPre           = "tokenizer.ggml.pre"
	keyTokens        = "tokenizer.ggml.tokens"
	keyScores        = "tokenizer.ggml.scores"
	keyTokenType     = "tokenizer.ggml.token_type"
	keyMerges        = "tokenizer.ggml.merges"
	keyAddBOS        = "tokenizer.ggml.add_bos_token"
	keyAddEOS        = "tokenizer.ggml.add_eos_token"
	keyAddSEP        = "tokenizer.ggml.add_sep_token"
	keyAddPrefix     = "tokenizer.ggml.add_space_prefix"
	keyLowercase     = "tokenizer.ggml.normalizer.lowercase"
	keyStripAccents  = "tokenizer.ggml.normalizer.strip_accents"
	keyGeneralName   = "general.name"
	keyGeneralArch   = "general.architecture"
	tokenTypeNormal  = 1
	tokenTypeUnknown = 2
	tokenTypeControl = 3
	tokenTypeUser    = 4
	tokenTypeUnused  = 5
	tokenTypeByte    = 6
)

// FromGGUF reads a vocabulary from a GGUF file's metadata as llama.cpp's
// loader does: the per-model defaults, the settings tied to the
// pre-tokenizer, the file's overrides, and the fix-ups llama.cpp applies by
// token text (end-of-generation and fill-in-the-middle tokens marked as
// control, unused control tokens, the strip rules of a few models). Where
// llama.cpp's choice depends on hash-map order (two texts that could both be
// the EOT token), FromGGUF takes the first in llama.cpp's list of
// candidates.
func FromGGUF(f *gguf.File) (Vocab, error) {
	v := Vocab{
		BOS: NoToken, EOS: NoToken, EOT: NoToken, EOM: NoToken, UNK: NoToken, SEP: NoToken, PAD: NoToken, MASK: NoToken,
		FIMPre: NoToken, FIMSuf: NoToken, FIMMid: NoToken, FIMPad: NoToken, FIMRep: NoToken, FIMSep: NoToken,
		Lowercase: true,
	}
	model, err := f.GetString(keyModel)
	if err != nil {
		return Vocab{}, fmt.Errorf("tokenizer: %w", err)
	}
	v.Model = model
	if val, ok := f.Get(keyPre); ok {
		s, ok := val.Str()
		if !ok {
			return Vocab{}, fmt.Errorf("tokenizer: %s is %s, want a string", keyPre, val)
		}
		v.Pre = s
	}

	needMerges := false
	switch model {
	case ModelSPM:
		v.BOS, v.EOS, v.UNK = 1, 2, 0
		v.AddSpacePrefix, v.AddBOS = true, true
	case ModelWPM:
		v.BOS, v.UNK, v.SEP, v.PAD, v.MASK = 101, 100, 102, 0, 103
		v.AddBOS, v.AddSEP, v.CleanSpaces = true, true, true
	case ModelBPE, ModelWhitespace:
		v.BOS, v.EOS = 11, 11
		needMerges = v.Pre != "kimi-k2"
	case ModelGemma4:
		needMerges = true
		v.Pre = "gemma4"
	default:
		return Vocab{}, fmt.Errorf("tokenizer: %s %q: %w (supported: %s, %s, %s, %s, %s)", keyModel, model,
			ErrUnsupportedModel, ModelSPM, ModelBPE, ModelWPM, ModelGemma4, ModelWhitespace)
	}
	var pre *preTokenizer
	if model == ModelBPE || model == ModelWhitespace || model == ModelGemma4 {
		if pre, err = lookupPre(v.Pre); err != nil {
			return Vocab{}, err
		}
		v.CleanSpaces = !pre.keepSpaces
		v.IgnoreMerges = pre.ignoreMerges
		v.EscapeWhitespace = pre.escapeSpaces
		v.AddBOS = pre.addBOS
		v.AddSEP = v.AddSEP || pre.addSEP
		if pre.noBOS {
			v.BOS = NoToken
		}
		if pre.keepCase {
			v.Lowercase = false
		}
	}
	if err := getBool(f, keyAddPrefix, &v.AddSpacePrefix); err != nil {
		return Vocab{}, err
	}

	if v.Tokens, err = f.GetStrings(keyTokens); err != nil {
		return Vocab{}, fmt.Errorf("tokenizer: %w", err)
	}
	n := len(v.Tokens)
	if n == 0 {
		return Vocab{}, fmt.Errorf("tokenizer: %s is empty: %w", keyTokens, ErrInvalidVocab)
	}
	for i, s := range v.Tokens {
		if s == "" {
			v.Tokens[i] = "[EMPTY_" + strconv.Itoa(i) + "]" // llama.cpp's name for it
		}
	}
	if val, ok := f.Get(keyScores); ok {
		switch val.ElemType() {
		case gguf.TypeFloat32:
			v.Scores, _ = val.Float32s()
		case gguf.TypeInt32:
			is, _ := val.Int32s()
			v.Scores = make([]float32, len(is))
			for i, x := range is {
				v.Scores[i] = float32(x)
			}
		}
		if val.Type() != gguf.TypeArray || v.Scores == nil {
			return Vocab{}, fmt.Errorf("tokenizer: %s is %s, want an array of f32 or i32: %w", keyScores, val, ErrInvalidVocab)
		}
		if len(v.Scores) < n {
			return Vocab{}, fmt.Errorf("tokenizer: %d scores for %d tokens: %w", len(v.Scores), n, ErrInvalidVocab)
		}
		v.Scores = v.Scores[:n]
	}
	v.Attrs = make([]TokenAttr, n)
	if _, ok := f.Get(keyTokenType); ok {
		types, err := f.GetInt32s(keyTokenType)
		if err != nil {
			return Vocab{}, fmt.Errorf("tokenizer: %w", err)
		}
		if len(types) < n {
			return Vocab{}, fmt.Errorf("tokenizer: %d token types for %d tokens: %w", len(types), n, ErrInvalidVocab)
		}
		for i := range v.Attrs {
			v.Attrs[i] = attrOfType(types[i])
		}
	} else {
		for i := range v.Attrs {
			v.Attrs[i] = AttrNormal
		}
	}
	if needMerges {
		if v.Merges, err = f.GetStrings(keyMerges); err != nil {
			return Vocab{}, fmt.Errorf("tokenizer: %w", err)
		}
	} else if _, ok := f.Get(keyMerges); ok && model != ModelSPM && model != ModelWPM {
		if v.Merges, err = f.GetStrings(keyMerges); err != nil {
			return Vocab{}, fmt.Errorf("tokenizer: %w", err)
		}
	}

	// Special ids: a default outside the vocabulary is dropped. A file's id
	// outside it is refused, naming the key: llama.cpp warns and keeps the
	// default, but a special token silently other than the file says
	// changes what generation adds and where it stops. 0xFFFFFFFF (or -1
	// written signed) is "unset" and keeps the default, as in llama.cpp.
	for _, sp := range []struct {
		key string
		id  *int32
	}{
		{"tokenizer.ggml.bos_token_id", &v.BOS},
		{"tokenizer.ggml.eos_token_id", &v.EOS},
		{"tokenizer.ggml.eot_token_id", &v.EOT},
		{"tokenizer.ggml.eom_token_id", &v.EOM},
		{"tokenizer.ggml.unknown_token_id", &v.UNK},
		{"tokenizer.ggml.seperator_token_id", &v.SEP}, // sic
		{"tokenizer.ggml.padding_token_id", &v.PAD},
		{"tokenizer.ggml.mask_token_id", &v.MASK},
		{"tokenizer.ggml.fim_pre_token_id", &v.FIMPre},
		{"tokenizer.ggml.fim_suf_token_id", &v.FIMSuf},
		{"tokenizer.ggml.fim_mid_token_id", &v.FIMMid},
		{"tokenizer.ggml.fim_pad_token_id", &v.FIMPad},
		{"tokenizer.ggml.fim_rep_token_id", &v.FIMRep},
		{"tokenizer.ggml.fim_sep_token_id", &v.FIMSep},
		{"tokenizer.ggml.prefix_token_id", &v.FIMPre}, // older names
		{"tokenizer.ggml.suffix_token_id", &v.FIMSuf},
		{"tokenizer.ggml.middle_token_id", &v.FIMMid},
	} {
		if *sp.id >= int32(n) {
			*sp.id = NoToken
		}
		val, ok := f.Get(sp.key)
		if !ok {
			continue
		}
		id, ok := val.Uint()
		if !ok {
			if i, isInt := val.Int(); isInt && i < 0 {
				id, ok = uint64(uint32(int32(i))), true // written as a signed -1
			}
		}
		if !ok {
			return Vocab{}, fmt.Errorf("tokenizer: %s is %s, want an integer: %w", sp.key, val, ErrInvalidVocab)
		}
		switch {
		case id < uint64(n):
			*sp.id = int32(id)
		case id == 1<<32-1:
			// unset: the default stands, as in llama.cpp
		default:
			return Vocab{}, fmt.Errorf("tokenizer: %s = %s: outside the vocabulary of %d tokens (0xFFFFFFFF or -1 leave it unset): %w",
				sp.key, val, n, ErrInvalidVocab)
		}
	}

	for _, b := range []struct {
		key string
		dst *bool
	}{{keyAddBOS, &v.AddBOS}, {keyAddEOS, &v.AddEOS}, {keyAddSEP, &v.AddSEP}} {
		if err := getBool(f, b.key, b.dst); err != nil {
			return Vocab{}, err
		}
	}
	if pre != nil && pre.newlineTokens && !v.AddBOS {
		v.AddBOS = true // llama.cpp insists for Gemma 4
	}
	if err := getBool(f, keyLowercase, &v.Lowercase); err != nil {
		return Vocab{}, err
	}
	v.StripAccents = v.Lowercase
	if err := getBool(f, keyStripAccents, &v.StripAccents); err != nil {
		return Vocab{}, err
	}

	fixUp(&v, f)
	if v.AddBOS && v.BOS == NoToken {
		return Vocab{}, fmt.Errorf("tokenizer: the vocabulary asks for a BOS token but has none: %w", ErrInvalidVocab)
	}
	if v.AddEOS && v.EOS == NoToken {
		return Vocab{}, fmt.Errorf("tokenizer: the vocabulary asks for an EOS token but has none: %w", ErrInvalidVocab)
	}
	if err := v.Validate(); err != nil {
		return Vocab{}, err
	}
	return v, nil
}

func getBool(f *gguf.File, key string, dst *bool) error {
	val, ok := f.Get(key)
	if !ok {
		return nil
	}
	b, ok := val.Bool()
	if !ok {
		return fmt.Errorf("tokenizer: %s is %s, want a bool: %w", key, val, ErrInvalidVocab)
	}
	*dst = b
	return nil
}

func attrOfType(t int32) TokenAttr {
	switch t {
	case tokenTypeNormal:
		return AttrNormal
	case tokenTypeUnknown:
		return AttrUnknown
	case tokenTypeControl:
		return AttrControl
	case tokenTypeUser:
		return AttrUserDefined
	case tokenTypeUnused:
		return AttrUnused
	case tokenTypeByte:
		return AttrByte
	}
	return AttrUndefined
}

// Texts by which llama.cpp recognises special tokens that the file does not
// name, in its order.
var (
	eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
		"<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}
	eomTexts    = []string{"<|eom_id|>"}
	fimPreTexts = []string{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"}
	fimSufTexts = []string{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"}
	fimMidTexts = []string{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"}
	fimPadTexts = []string{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}
	fimRepTexts = []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}
	fimSepTexts = []string{"<|file_sep|>"}
	eogTexts    = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
		"<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
		"<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~["}
	alwaysRendered = []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}
)

// fixUp applies llama.cpp's corrections by token text.
func fixUp(v *Vocab, f *gguf.File) {
	ids := make(map[string]int32, len(v.Tokens))
	for i, s := range v.Tokens {
		ids[s] = int32(i)
	}
	find := func(texts []string) int32 {
		for _, s := range texts {
			if id, ok := ids[s]; ok {
				return id
			}
		}
		return NoToken
	}
	for _, d := range []struct {
		id    *int32
		texts []string
	}{
		{&v.EOT, eotTexts}, {&v.EOM, eomTexts},
		{&v.FIMPre, fimPreTexts}, {&v.FIMSuf, fimSufTexts}, {&v.FIMMid, fimMidTexts},
		{&v.FIMPad, fimPadTexts}, {&v.FIMRep, fimRepTexts}, {&v.FIMSep, fimSepTexts},
	} {
		if *d.id == NoToken {
			if *d.id = find(d.texts); *d.id != NoToken {
				v.Attrs[*d.id] |= AttrControl
			}
		}
	}
	for i, s := range v.Tokens {
		if v.Attrs[i]&AttrControl != 0 && strings.Contains(s, "unused") {
			v.Attrs[i] |= AttrUnused
		}
	}

	eog := map[int32]bool{}
	for _, id := range []int32{v.FIMPad, v.FIMRep, v.FIMSep} {
		if id != NoToken {
			eog[id] = true
		}
	}
	for _, s := range eogTexts {
		if id, ok := ids[s]; ok {
			eog[id] = true
			v.Attrs[id] |= AttrControl
		}
	}
	for _, s := range alwaysRendered {
		if id, ok := ids[s]; ok {
			v.Attrs[id] = AttrUserDefined
		}
	}
	for _, id := range []int32{v.EOS, v.EOT, v.EOM} {
		if id != NoToken {
			eog[id] = true
		}
	}
	has := func(s string) (int32, bool) {
		id, ok := ids[s]
		return id, ok && eog[id]
	}
	// o200k_harmony and solar-open: <|end|> ends a message, not generation.
	_, ret := has("<|return|>")
	_, call := has("<|call|>")
	_, calls := has("<|calls|>")
	_, flush := has("<|flush|>")
	if end, ok := has("<|end|>"); ok && ((ret && (call || calls)) || ((call || calls) && flush)) {
		delete(eog, end)
		v.Attrs[end] = AttrUserDefined
	}
	// Gemma 4 and PaddleOCR: </s> is a plain token there.
	if _, ok := has("<|tool_response>"); ok {
		if s, ok := has("</s>"); ok {
			delete(eog, s)
			v.Attrs[s] = AttrNormal
		}
	}
	v.EOG = v.EOG[:0]
	for id := range eog {
		v.EOG = append(v.EOG, id)
	}
	slices.Sort(v.EOG)

	// Per-model strip rules, by name.
	str := func(key string) string {
		val, _ := f.Get(key)
		s, _ := val.Str()
		return s
	}
	name := strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, str(keyGeneralName))
	pre, arch := str(keyPre), str(keyGeneralArch)
	containsAny := func(s string, subs ...string) bool {
		for _, sub := range subs {
			if strings.Contains(s, sub) {
				return true
			}
		}
		return false
	}
	setAttr := func(text string, a TokenAttr, on bool) {
		if id, ok := ids[text]; ok {
			if on {
				v.Attrs[id] |= a
			} else {
				v.Attrs[id] &^= a
			}
		}
	}
	switch {
	case containsAny(pre, "jina-v2-de", "jina-v2-es", "jina-v2-code") || containsAny(arch, "nomic-bert-moe", "jina-bert-v3"):
		setAttr("<mask>", AttrLStrip, true)
	case containsAny(name, "phi-3", "phi3"): // akunu:not-arch: general.name, as llama.cpp matches it
		for i, a := range v.Attrs {
			if a&(AttrControl|AttrUserDefined|AttrUnknown) != 0 {
				v.Attrs[i] |= AttrRStrip
			}
		}
		setAttr("</s>", AttrRStrip, true)
		for _, s := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			setAttr(s, AttrRStrip, false)
		}
	case containsAny(name, "modern-bert"):
		setAttr("[MASK]", AttrLStrip, true)
	}
}
