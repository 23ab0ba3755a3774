package main

import (
	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/internal/tokcli"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
)

func init() {
	app.Register(cli.Command{
		Name:    "tokenize",
		Summary: "print the token ids of a text with the plan's tokenizer (the model file is not needed)",
		Usage:   tokcli.TokenizeUsage("akunu", "PLAN"),
		Run: func(ctx *cli.Context, args []string) error {
			return tokcli.Tokenize(ctx, ctx.Flags("tokenize"), args, planTokenizer)
		},
	})
	app.Register(cli.Command{
		Name:    "detokenize",
		Summary: "print the text of token ids with the plan's tokenizer",
		Usage:   tokcli.DetokenizeUsage("PLAN"),
		Run: func(ctx *cli.Context, args []string) error {
			return tokcli.Detokenize(ctx, ctx.Flags("detokenize"), args, planTokenizer)
		},
	})
}

// planTokenizer builds the tokenizer a plan carries.
func planTokenizer(path string) (*tokenizer.Tokenizer, error) {
	p, err := plans.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return runtime.Tokenizer(&p.Model.Tokenizer)
}
