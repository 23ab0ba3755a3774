package main

import (
	"encoding/json"
	"fmt"

	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/compiler/modelinfo"
	"github.com/akunu-dev/akunu/specs"
)

func init() {
	register(command{
		name:    "inspect",
		summary: "describe a GGUF model: architecture, hyperparameters, tokenizer, tensors",
		usage:   "MODEL.gguf [--json]",
		run:     runInspect,
	})
}

func runInspect(ctx *cli, args []string) error {
	c := commands["inspect"]
	fs := newFlags(ctx, c)
	asJSON := fs.Bool("json", false, "print one JSON object (fields: docs/inspect.md)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: want one model file, got %d arguments", errUsage, len(pos))
	}
	f, err := gguf.Open(pos[0])
	if err != nil {
		return err
	}
	reg, err := specs.Builtin()
	if err != nil {
		return err
	}
	r := modelinfo.Describe(pos[0], f, reg)
	if *asJSON {
		enc := json.NewEncoder(ctx.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return r.WriteText(ctx.stdout)
}
