package main

import (
	"github.com/akunu-dev/akunu/internal/tokcli"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
)

func init() {
	register(command{
		name:    "tokenize",
		summary: "print the token ids of a text with the plan's tokenizer (the model file is not needed)",
		usage:   tokcli.TokenizeUsage("akunu", "PLAN"),
		run: func(ctx *cli, args []string) error {
			return tokcli.Tokenize(ctx, newFlags(ctx, commands["tokenize"]), args, planTokenizer)
		},
	})
	register(command{
		name:    "detokenize",
		summary: "print the text of token ids with the plan's tokenizer",
		usage:   "PLAN [--no-special] IDS...  (ids space or comma separated; none: read them from stdin)",
		run: func(ctx *cli, args []string) error {
			return tokcli.Detokenize(ctx, newFlags(ctx, commands["detokenize"]), args, planTokenizer)
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
