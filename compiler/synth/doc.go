// Package synth writes synthetic GGUF models: any architecture a spec in
// archs/ describes, any shape, any weight dtype with a reference quantizer,
// random weights (deterministic for a seed) or zero weights in a sparse file,
// or a copier: a llama-like model of hand-set weights whose greedy text
// copies its context (copier.go), the copy task of speculative decoding.
//
// Tests get a model of every architecture and dtype from it, benchmarks a
// model of a real shape. It knows no architecture: the metadata keys and
// the tensor table come from the spec (specs.Arch.MetadataFor, Tensors);
// the copier knows only the llama-like tensors' roles (attn_q is the
// queries, …) and refuses a spec with others.
// It must not read weights of real models; a tokenizer may be copied from a
// GGUF file (tokenizer.* keys only).
package synth
