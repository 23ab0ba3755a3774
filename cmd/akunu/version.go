package main

import (
	"fmt"

	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/plans"
)

func init() {
	app.Register(cli.VersionCommand("akunu",
		fmt.Sprintf("plans: reads formats 1 to %d (a newer plan is refused, naming the runtime it needs)", plans.FormatVersion)))
}
