package main

import (
	"fmt"

	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/internal/tokcli"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
)

func init() {
	app.Register(cli.Command{
		Name:    "tokenize",
		Summary: "print the token ids of a text, as llama.cpp's tokenizer gives them",
		Usage:   tokcli.TokenizeUsage("akunuc", "MODEL.gguf"),
		Run: func(ctx *cli.Context, args []string) error {
			return tokcli.Tokenize(ctx, ctx.Flags("tokenize"), args, ggufTokenizer)
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
