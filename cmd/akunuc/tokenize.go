package main

import (
	"fmt"

	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/internal/tokcli"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
)

func init() {
	register(command{
		name:    "tokenize",
		summary: "print the token ids of a text, as llama.cpp's tokenizer gives them",
		usage:   tokcli.TokenizeUsage("akunuc", "MODEL.gguf"),
		run: func(ctx *cli, args []string) error {
			return tokcli.Tokenize(ctx, newFlags(ctx, commands["tokenize"]), args, ggufTokenizer)
		},
	})
}

// ggufTokenizer builds the tokenizer of a GGUF file from its header.
func ggufTokenizer(path string) (*tokenizer.Tokenizer, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	v, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tk, err := tokenizer.New(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tk, nil
}
