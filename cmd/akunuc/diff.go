package main

import (
	"fmt"

	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
)

func init() {
	app.Register(cli.Command{
		Name:    "diff",
		Summary: "what differs between two plans: kernels, threadgroups, fusions, buffers, tuning (exit 0 equal, 1 different, 2 error)",
		Usage:   "A.plan B.plan",
		Run:     runDiff,
	})
}

func runDiff(ctx *cli.Context, args []string) error {
	fs := ctx.Flags("diff")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return fmt.Errorf("%w: want two plans, got %d arguments", cli.ErrUsage, len(pos))
	}
	a, err := plans.ReadFile(pos[0])
	if err != nil {
		return cli.ErrorExit{Err: err, Code: 2}
	}
	b, err := plans.ReadFile(pos[1])
	if err != nil {
		return cli.ErrorExit{Err: err, Code: 2}
	}
	ds := plans.DiffWith(a, b, plans.RenderOptions{Params: kernels.ParamFields})
	if len(ds) == 0 {
		fmt.Fprintf(ctx.Stdout, "%s and %s are equal\n", pos[0], pos[1])
		return nil
	}
	fmt.Fprintf(ctx.Stdout, "--- %s\n+++ %s\n", pos[0], pos[1])
	if err := plans.WriteDiff(ctx.Stdout, ds); err != nil {
		return cli.ErrorExit{Err: err, Code: 2}
	}
	fmt.Fprintf(ctx.Stdout, "%d differences\n", len(ds))
	return cli.Exit{Code: 1}
}
