package gguf

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// BenchmarkReadLargeVocab reads the header of a model with a Llama-3-sized
// vocabulary (128k tokens, 280k merges) and 300 tensors: the work the
// compiler does per file.
func BenchmarkReadLargeVocab(b *testing.B) {
	bld := NewBuilder()
	const nTok, nMerge = 128_256, 280_147
	toks := make([]string, nTok)
	types := make([]int32, nTok)
	for i := range toks {
		toks[i] = fmt.Sprintf("tok%d", i)
		types[i] = 1
	}
	merges := make([]string, nMerge)
	for i := range merges {
		merges[i] = fmt.Sprintf("m%d n%d", i, i)
	}
	bld.SetString("general.architecture", "llama")
	bld.SetStrings("tokenizer.ggml.tokens", toks)
	bld.Set("tokenizer.ggml.token_type", Int32s(types))
	bld.SetStrings("tokenizer.ggml.merges", merges)
	for i := range 300 {
		bld.AddZeroTensor(fmt.Sprintf("blk.%d.w", i), dtype.Q4_K, []uint64{256, 4})
	}
	var buf bytes.Buffer
	if _, err := bld.WriteTo(&buf); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := read(data); err != nil {
			b.Fatal(err)
		}
	}
}

// benchModel is the file the sum benchmarks map: $AKUNU_BENCH_GGUF (a
// large model, to measure what a load costs) or stories260K.
func benchModel(b *testing.B) *Mapping {
	path := os.Getenv("AKUNU_BENCH_GGUF")
	if path == "" {
		path = storiesPath(b)
	}
	m, err := Map(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m
}

// BenchmarkSampledSums is the weight check of every load (ADR 0013); its
// bytes/s counts the whole model, so ns/op is the figure to read.
func BenchmarkSampledSums(b *testing.B) {
	m := benchModel(b)
	b.SetBytes(m.FileSize)
	for b.Loop() {
		if _, err := m.SampledSums(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFullSums is verify-model's and the compiler's read of every
// byte, on every core.
func BenchmarkFullSums(b *testing.B) {
	m := benchModel(b)
	b.SetBytes(m.FileSize)
	for b.Loop() {
		if _, err := m.FullSums(0); err != nil {
			b.Fatal(err)
		}
	}
}
