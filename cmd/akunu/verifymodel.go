package main

import (
	"fmt"

	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/runtime"
)

func init() {
	app.Register(cli.Command{
		Name:    "verify-model",
		Summary: "read every byte of a plan's model file and check it against the sums the compiler recorded; name the tensors that differ",
		Usage:   "PLAN [--model PATH]",
		Run:     runVerifyModel,
	})
}

// runVerifyModel is the paranoid check of ADR 0013: every load checks
// sampled blocks of every tensor; this reads all of them.
func runVerifyModel(ctx *cli.Context, args []string) error {
	plan, model, err := planAndModel(ctx, "verify-model", args)
	if err != nil {
		return err
	}
	r, err := runtime.VerifyModel(plan, model)
	if err != nil {
		return err
	}
	secs := r.Elapsed.Seconds()
	fmt.Fprintf(ctx.Stdout, "akunu: %s is the model %s was compiled from: every byte of its %d tensors (%.1f MB) matches, read in %.1f ms (%.2f GB/s)\n",
		r.Model, r.Plan, r.Tensors, float64(r.Bytes)/1e6, 1000*secs, float64(r.Bytes)/1e9/max(secs, 1e-9))
	return nil
}

// planAndModel parses the arguments of a command that checks one plan
// against its model: PLAN [--model PATH].
func planAndModel(ctx *cli.Context, name string, args []string) (plan, model string, err error) {
	fs := ctx.Flags(name)
	m := fs.String("model", "", "the GGUF file (default: next to the plan, at the path recorded at compile time, or in the working directory)")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return "", "", err
	}
	if len(pos) != 1 {
		return "", "", fmt.Errorf("%w: want one PLAN", cli.ErrUsage)
	}
	return pos[0], *m, nil
}
