// Package dtype is the registry of GGML tensor element types: their codes as
// they appear in GGUF files, block sizes, block byte sizes and names, and the
// reference conversions between them and float32.
//
// It owns the format facts (docs/formats.md says them in prose) and nothing
// else: it knows no files, no kernels and no backends. Whether a type can be
// executed on a target is the kernel catalog's question, not this package's.
package dtype
