// Package modelinfo describes a GGUF model for people and scripts: what
// `akunuc inspect MODEL.gguf` prints. It reads the header only (never the
// weight bytes), resolves the hyperparameters through the architecture
// specs, and summarizes the tokenizer and the tensor table.
//
// The JSON form is a stable interface (docs/inspect.md): fields are added,
// never renamed or removed.
package modelinfo
