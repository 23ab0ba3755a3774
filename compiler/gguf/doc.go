// Package gguf reads and writes GGUF files, the container llama.cpp uses for
// model weights and metadata (docs/gguf.md says the format in prose).
//
// It owns the byte layout and nothing else: the metadata key-value pairs, the
// tensor table, alignment, and access to the tensor bytes. It does not know
// what a key means (beyond general.alignment) or which architectures exist;
// that is the specs' business.
//
// Three ways in:
//
//   - Read and Open parse the header only (metadata and tensor table). This is
//     what the compiler uses; it never maps or loads weight bytes.
//   - Map maps the whole file read-only and hands out zero-copy slices of
//     tensor data; this is what the runtime uses.
//   - Builder writes files that llama.cpp loads, streaming tensor bytes and,
//     for shape-only models, leaving all-zero tensors as holes in the file.
//
// Every file is treated as hostile. Each count, length and offset is checked
// against the bytes that remain before anything is allocated, arithmetic is
// overflow-checked, and every error names the key or tensor and the byte
// offset it concerns, wrapping one of the sentinel errors (ErrTruncated,
// ErrCorrupt, ...) so callers can test it with errors.Is.
package gguf
