package gguf_test

import (
	"bytes"
	"fmt"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/gguf"
)

func Example() {
	// Write a tiny model...
	b := gguf.NewBuilder()
	b.SetString("general.architecture", "llama")
	b.SetUint32("llama.block_count", 2)
	b.SetStrings("tokenizer.ggml.tokens", []string{"<unk>", "<s>", "</s>"})
	b.AddTensor("output_norm.weight", dtype.F32, []uint64{4}, make([]byte, 16))
	b.AddZeroTensor("token_embd.weight", dtype.Q8_0, []uint64{32, 3})
	var buf bytes.Buffer
	if _, err := b.WriteTo(&buf); err != nil {
		fmt.Println(err)
		return
	}

	// ...and read its header back.
	f, err := gguf.Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		fmt.Println(err)
		return
	}
	layers, _ := f.GetUint("llama.block_count")
	tokens, _ := f.Get("tokenizer.ggml.tokens")
	fmt.Println(f.Architecture(), layers, tokens)
	for _, t := range f.Tensors {
		fmt.Println(t.String())
	}
	_, err = f.GetFloat("llama.block_count")
	fmt.Println(err)
	// Output:
	// llama 2 [3]str{"<unk>", "<s>", "</s>"}
	// output_norm.weight F32 [4] @320+16
	// token_embd.weight Q8_0 [32 3] @352+102
	// gguf: key "llama.block_count" at offset 69: value 2 is u32, want a float
}
