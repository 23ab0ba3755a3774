package tokenizer

import (
	"errors"
	"fmt"
	"strings"
)

// Tokenizer models: the values of tokenizer.ggml.model this package reads.
const (
	ModelSPM        = "llama"      // SentencePiece: score-driven merges, byte fallback; akunu:not-arch (a tokenizer.ggml.model value)
	ModelBPE        = "gpt2"       // byte-level BPE with a pre-tokenizer
	ModelWPM        = "bert"       // WordPiece; akunu:not-arch (a tokenizer.ggml.model value)
	ModelGemma4     = "gemma4"     // BPE over raw UTF-8 with ▁ for spaces
	ModelWhitespace = "whitespace" // BPE over whitespace-separated words
)

// TokenAttr is a set of token attributes. The bits are llama.cpp's
// llama_token_attr values, so that the two can be compared directly.
type TokenAttr uint32

const (
	AttrUndefined   TokenAttr = 0
	AttrUnknown     TokenAttr = 1 << 0
	AttrUnused      TokenAttr = 1 << 1
	AttrNormal      TokenAttr = 1 << 2
	AttrControl     TokenAttr = 1 << 3
	AttrUserDefined TokenAttr = 1 << 4
	AttrByte        TokenAttr = 1 << 5
	AttrNormalized  TokenAttr = 1 << 6
	AttrLStrip      TokenAttr = 1 << 7 // strip whitespace before the token's text when parsing it
	AttrRStrip      TokenAttr = 1 << 8 // strip whitespace after it
	AttrSingleWord  TokenAttr = 1 << 9
)

// NoToken marks an absent special token.
const NoToken int32 = -1

// Vocab is everything a tokenizer needs, as plain data: a plan carries it
// field by field and the runtime builds a Tokenizer from it with New,
// without reading GGUF metadata. FromGGUF fills it from a model file the
// way llama.cpp's loader does, defaults and fix-ups included, so that New
// never has to guess.
type Vocab struct {
	// Model is tokenizer.ggml.model: ModelSPM, ModelBPE, ModelWPM,
	// ModelGemma4 or ModelWhitespace.
	Model string
	// Pre is tokenizer.ggml.pre, naming the pre-tokenizer of a BPE model
	// (see PreTokenizers); "" means "default". Other models ignore it.
	Pre string

	Tokens []string    // token texts, indexed by id; none empty, none repeated
	Scores []float32   // SentencePiece merge priorities (nil: all zero)
	Attrs  []TokenAttr // one per token
	// Merges are the BPE merge rules, "left right", highest priority first.
	Merges []string

	// Special token ids, NoToken when absent.
	BOS, EOS, EOT, EOM, UNK, SEP, PAD, MASK        int32
	FIMPre, FIMSuf, FIMMid, FIMPad, FIMRep, FIMSep int32
	// EOG lists every token that ends generation, ascending.
	EOG []int32

	// AddBOS and AddEOS: Tokenize with addSpecial adds BOS first, EOS last.
	// (WordPiece always adds BOS and SEP.) AddSEP is recorded for
	// embedding models; Tokenize does not use it.
	AddBOS, AddEOS, AddSEP bool
	// AddSpacePrefix: SentencePiece puts a space before the text, and
	// detokenizing removes it again from the first token.
	AddSpacePrefix bool
	// IgnoreMerges: a pre-tokenized word that is a token as a whole becomes
	// that token without merging (Llama 3 and others).
	IgnoreMerges bool
	// EscapeWhitespace: BPE text has its spaces turned into ▁ (U+2581)
	// before tokenizing (Gemma 4 and kin), and ▁ back into spaces after.
	EscapeWhitespace bool
	// CleanSpaces: detokenizing removes the space before ?!., and in
	// contractions (Hugging Face's clean_up_tokenization_spaces).
	CleanSpaces bool
	// Lowercase and StripAccents: WordPiece's (and the whitespace
	// model's) normalizer.
	Lowercase, StripAccents bool
}

// Errors.
var (
	// ErrUnknownPreTokenizer: tokenizer.ggml.pre names a pre-tokenizer this
	// package does not know.
	ErrUnknownPreTokenizer = errors.New("unknown pre-tokenizer")
	// ErrUnsupportedModel: a tokenizer model this package does not
	// implement (t5, rwkv, plamo2, ...).
	ErrUnsupportedModel = errors.New("unsupported tokenizer model")
	// ErrInvalidVocab: the vocabulary contradicts itself (lengths, ids,
	// duplicate tokens).
	ErrInvalidVocab = errors.New("invalid vocabulary")
)

// Validate checks that v is self-consistent and that its model and
// pre-tokenizer are known.
func (v *Vocab) Validate() error {
	switch v.Model {
	case ModelSPM, ModelWPM:
	case ModelBPE, ModelGemma4, ModelWhitespace:
		if _, err := lookupPre(v.Pre); err != nil {
			return err
		}
	default:
		return fmt.Errorf("tokenizer: %w %q (supported: %s)", ErrUnsupportedModel, v.Model,
			strings.Join([]string{ModelSPM, ModelBPE, ModelWPM, ModelGemma4, ModelWhitespace}, ", "))
	}
	n := len(v.Tokens)
	if n == 0 {
		return fmt.Errorf("tokenizer: %w: no tokens", ErrInvalidVocab)
	}
	if int64(n) > 1<<31-1 {
		return fmt.Errorf("tokenizer: %w: %d tokens", ErrInvalidVocab, n)
	}
	if v.Scores != nil && len(v.Scores) != n {
		return fmt.Errorf("tokenizer: %w: %d scores for %d tokens", ErrInvalidVocab, len(v.Scores), n)
	}
	if len(v.Attrs) != n {
		return fmt.Errorf("tokenizer: %w: %d attributes for %d tokens", ErrInvalidVocab, len(v.Attrs), n)
	}
	for i, s := range v.Tokens {
		if s == "" {
			return fmt.Errorf("tokenizer: %w: token %d is empty", ErrInvalidVocab, i)
		}
	}
	for _, sp := range v.specials() {
		if *sp.id != NoToken && (*sp.id < 0 || int(*sp.id) >= n) {
			return fmt.Errorf("tokenizer: %w: %s id %d outside the vocabulary of %d", ErrInvalidVocab, sp.name, *sp.id, n)
		}
	}
	for _, id := range v.EOG {
		if id < 0 || int(id) >= n {
			return fmt.Errorf("tokenizer: %w: EOG id %d outside the vocabulary of %d", ErrInvalidVocab, id, n)
		}
	}
	if v.Model == ModelWPM && (v.BOS == NoToken || v.SEP == NoToken) {
		return fmt.Errorf("tokenizer: %w: WordPiece needs BOS (CLS) and SEP", ErrInvalidVocab)
	}
	if v.AddBOS && v.BOS == NoToken {
		return fmt.Errorf("tokenizer: %w: AddBOS without a BOS token", ErrInvalidVocab)
	}
	if v.AddEOS && v.EOS == NoToken {
		return fmt.Errorf("tokenizer: %w: AddEOS without an EOS token", ErrInvalidVocab)
	}
	return nil
}

type namedID struct {
	name string
	id   *int32
}

func (v *Vocab) specials() []namedID {
	return []namedID{
		{"BOS", &v.BOS}, {"EOS", &v.EOS}, {"EOT", &v.EOT}, {"EOM", &v.EOM},
		{"UNK", &v.UNK}, {"SEP", &v.SEP}, {"PAD", &v.PAD}, {"MASK", &v.MASK},
		{"FIM prefix", &v.FIMPre}, {"FIM suffix", &v.FIMSuf}, {"FIM middle", &v.FIMMid},
		{"FIM pad", &v.FIMPad}, {"FIM repo", &v.FIMRep}, {"FIM file separator", &v.FIMSep},
	}
}
