// Package tokenizer turns text into token ids and back, exactly as
// llama.cpp does for the same vocabulary: SentencePiece ("llama"),
// byte-level BPE with every pre-tokenizer llama.cpp knows ("gpt2", and the
// "gemma4" and "whitespace" variants), and WordPiece ("bert").
//
// A Vocab is the tokenizer as plain data, which a plan carries; FromGGUF
// reads one from a model's metadata the way llama.cpp's loader does, and New
// builds a Tokenizer from it. FromPlan builds one from a plan's fields: the
// runtime at load, and the compiler before it writes a plan, so that both
// refuse the same vocabularies. Tokenize follows llama_tokenize (special
// tokens added and parsed on request), Detokenize llama_detokenize, and a
// Decoder streams the same text one token at a time without ever emitting
// half a character.
//
// The pre-tokenizers' split patterns need lookahead, which Go's regexp
// lacks: the most common ones are matched by hand, as llama.cpp also does,
// and the rest by a small backtracking engine (regex.go) with ECMAScript's
// matching rules. docs/adr/0005-tokenizer.md records the decisions.
//
// The package owns tokenization only. It does not read files other than
// through compiler/gguf, knows nothing of chat templates, and must not
// depend on internal/llamacpp outside its tests, which use llama.cpp as the
// oracle.
package tokenizer
