package main

import (
	"fmt"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
)

func init() {
	register(command{
		name:    "diff",
		summary: "what differs between two plans: kernels, threadgroups, fusions, buffers, tuning (exit 0 equal, 1 different, 2 error)",
		usage:   "A.plan B.plan",
		run:     runDiff,
	})
}

func runDiff(ctx *cli, args []string) error {
	fs := newFlags(ctx, commands["diff"])
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return fmt.Errorf("%w: want two plans, got %d arguments", errUsage, len(pos))
	}
	a, err := plans.ReadFile(pos[0])
	if err != nil {
		return errorExit{Err: err, Code: 2}
	}
	b, err := plans.ReadFile(pos[1])
	if err != nil {
		return errorExit{Err: err, Code: 2}
	}
	ds := plans.DiffWith(a, b, plans.RenderOptions{Params: kernels.ParamFields})
	if len(ds) == 0 {
		fmt.Fprintf(ctx.Stdout, "%s and %s are equal\n", pos[0], pos[1])
		return nil
	}
	fmt.Fprintf(ctx.Stdout, "--- %s\n+++ %s\n", pos[0], pos[1])
	if err := plans.WriteDiff(ctx.Stdout, ds); err != nil {
		return errorExit{Err: err, Code: 2}
	}
	fmt.Fprintf(ctx.Stdout, "%d differences\n", len(ds))
	return exitError{Code: 1}
}
