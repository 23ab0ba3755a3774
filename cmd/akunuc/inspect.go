package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/compiler/modelinfo"
	"github.com/akunu-dev/akunu/compiler/planinfo"
	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/specs"
)

func init() {
	app.Register(cli.Command{
		Name:    "inspect",
		Summary: "describe a GGUF model or a compiled plan",
		Usage:   "MODEL.gguf|PLAN.plan [--json] [--summary]",
		Run:     runInspect,
	})
}

func runInspect(ctx *cli.Context, args []string) error {
	fs := ctx.Flags("inspect")
	asJSON := fs.Bool("json", false, "print one JSON object (fields: docs/inspect.md)")
	summary := fs.Bool("summary", false, "plans: list programs without their commands")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: want one model or plan file, got %d arguments", cli.ErrUsage, len(pos))
	}
	path := pos[0]
	isPlan, err := sniffPlan(path)
	if err != nil {
		return err
	}
	var report interface {
		text(w io.Writer) error
	}
	var value any
	if isPlan {
		p, err := plans.ReadFile(path)
		if err != nil {
			return err
		}
		r := planinfo.Describe(path, p)
		value, report = r, planText{r, !*summary}
	} else {
		f, err := gguf.Open(path)
		if err != nil {
			return err
		}
		reg, err := specs.Builtin()
		if err != nil {
			return err
		}
		r := modelinfo.Describe(path, f, reg)
		value, report = r, modelText{r}
	}
	if *asJSON {
		enc := json.NewEncoder(ctx.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(value)
	}
	return report.text(ctx.Stdout)
}

type planText struct {
	r        *planinfo.Report
	commands bool
}

func (p planText) text(w io.Writer) error { return p.r.WriteText(w, p.commands) }

type modelText struct{ r *modelinfo.Report }

func (m modelText) text(w io.Writer) error { return m.r.WriteText(w) }

// sniffPlan reports whether path starts with the plan magic (anything else
// is read as GGUF, whose reader says what is wrong with it).
func sniffPlan(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, len(plans.Magic))
	n, _ := io.ReadFull(f, head)
	return string(head[:n]) == plans.Magic, nil
}
