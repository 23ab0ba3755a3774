package main

import (
	"fmt"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/plans"
)

func init() {
	app.Register(cli.VersionCommand("akunuc",
		"compiler "+compiler.Version+" (recorded in every plan's header)",
		fmt.Sprintf("plans: writes format %d; reads formats 1 to %d (inspect, diff)", plans.FormatVersion, plans.FormatVersion)))
}
