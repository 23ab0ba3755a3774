package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/runtime/grammar"
	"github.com/akunu-dev/akunu/runtime/grammar/jsonschema"
)

// constrainFlags keep a generation inside a language
// (docs/structured-output.md): a GBNF grammar file, a JSON schema file,
// or any JSON object. JSON mode is --json-object, OpenAI's name for it,
// because run's --json already means "print one JSON object".
type constrainFlags struct {
	grammar, schema *string
	object          *bool
}

func addConstrainFlags(fs *flag.FlagSet) constrainFlags {
	return constrainFlags{
		grammar: fs.String("grammar", "", "keep the output in the language of this GBNF grammar file (llama.cpp's dialect; start rule root)"),
		schema:  fs.String("json-schema", "", "keep the output to JSON that validates against this JSON schema file"),
		object:  fs.Bool("json-object", false, "keep the output to one JSON object (OpenAI's JSON mode)"),
	}
}

// check refuses more than one constraint.
func (f constrainFlags) check() error {
	var set []string
	if *f.grammar != "" {
		set = append(set, "--grammar")
	}
	if *f.schema != "" {
		set = append(set, "--json-schema")
	}
	if *f.object {
		set = append(set, "--json-object")
	}
	if len(set) > 1 {
		return cli.FlagError{Flag: set[1][2:], Msg: fmt.Sprintf("cannot be combined with %s (one constraint at a time)", set[0])}
	}
	return nil
}

// notWithSpec refuses, in akunu bench, timing speculation and a
// constraint at once: each compares one change against plain decode.
// (run and chat combine them: drafts are verified row by row, each
// masked by the grammar's state after the rows before it.)
func (f constrainFlags) notWithSpec(spec string) error {
	if spec != "" && f.on() {
		return cli.FlagError{Flag: "spec", Msg: fmt.Sprintf("%s: bench times --spec or %s against plain decode, one at a time", spec, f.flag())}
	}
	return nil
}

func (f constrainFlags) flag() string {
	switch {
	case *f.grammar != "":
		return "--grammar"
	case *f.schema != "":
		return "--json-schema"
	}
	return "--json-object"
}

// on reports whether a constraint was asked for.
func (f constrainFlags) on() bool { return *f.grammar != "" || *f.schema != "" || *f.object }

// parse reads the asked-for constraint as a grammar (nil when none). A
// file's errors are FILE:line:col: msg (FILE: /pointer: msg for a
// schema); a grammar file's warnings go to warn, one a line.
func (f constrainFlags) parse(warn io.Writer) (*grammar.Grammar, error) {
	var (
		g    *grammar.Grammar
		err  error
		file string
	)
	switch {
	case *f.grammar != "":
		file = *f.grammar
		src, rerr := os.ReadFile(file)
		if rerr != nil {
			return nil, fmt.Errorf("--grammar: %w", rerr)
		}
		g, err = grammar.Parse(string(src))
	case *f.schema != "":
		file = *f.schema
		src, rerr := os.ReadFile(file)
		if rerr != nil {
			return nil, fmt.Errorf("--json-schema: %w", rerr)
		}
		g, err = jsonschema.Grammar(src, jsonschema.Options{})
	case *f.object:
		file = "--json-object"
		g, err = grammar.Parse(jsonschema.JSONObject())
	default:
		return nil, nil
	}
	if err != nil {
		return nil, fileError(file, err)
	}
	for _, w := range g.Warnings {
		fmt.Fprintf(warn, "akunu: %s:%d:%d: warning: %s\n", file, w.Line, w.Col, w.Msg)
	}
	return g, nil
}

// fileError puts the file's name before a grammar's or a schema's error:
// FILE:line:col: msg, FILE: /pointer: msg.
func fileError(file string, err error) error {
	if msg := err.Error(); msg != "" && msg[0] >= '1' && msg[0] <= '9' {
		return fmt.Errorf("%s:%w", file, err)
	}
	return fmt.Errorf("%s: %w", file, err)
}

// index compiles the constraint for m's vocabulary (nil when none).
func (f constrainFlags) index(m *runtime.Model, warn io.Writer) (*grammar.Index, error) {
	g, err := f.parse(warn)
	if err != nil || g == nil {
		return nil, err
	}
	x, err := m.GrammarIndex(g)
	if err != nil {
		return nil, fileError(f.name(), err)
	}
	return x, nil
}

func (f constrainFlags) name() string {
	switch {
	case *f.grammar != "":
		return *f.grammar
	case *f.schema != "":
		return *f.schema
	}
	return "--json-object"
}

// benchConstrained is akunu bench under a constraint: decode tok/s with
// and without it, runs alternating, medians and ranges, and their ratio.
func benchConstrained(ctx *cli.Context, m *runtime.Model, cf constrainFlags, pp, tg, reps int, asJSON bool) error {
	if c := m.Ctx(); pp+tg+1 > c {
		return cli.FlagError{Flag: "p", Msg: fmt.Sprintf("%d plus -n %d: more than the plan's context of %d", pp, tg, c)}
	}
	x, err := cf.index(m, ctx.Stderr)
	if err != nil {
		return err
	}
	prog := newProgress(ctx.Stderr, reps)
	prog.phase(fmt.Sprintf("greedy tg%d free and under %s, %d pairs after a warm-up", tg, cf.name(), reps))
	r, err := m.BenchConstrained(pp, tg, reps, x, runtime.Sampling{}, func(rep int, free, con float64) {
		prog.rep(rep, fmt.Sprintf("free %.2f t/s, constrained %.2f t/s", free, con))
	})
	prog.done()
	if err != nil {
		return err
	}
	threads := *cfThreads(m)
	free, con := runtime.Median(r.Free), runtime.Median(r.Constrained)
	ratio := 0.0
	if free > 0 {
		ratio = con / free
	}
	if asJSON {
		enc := json.NewEncoder(ctx.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{
			"plan": m.Plan.Header.Model.File, "chip": m.Plan.Header.Target.Chip, "backend": m.Backend().Name(), "threads": threads,
			"constraint": cf.name(), "pp": pp, "tg": tg, "reps": reps,
			"free_tok_s_median": free, "constrained_tok_s_median": con, "ratio": ratio,
			"free_runs": r.Free, "constrained_runs": r.Constrained, "constrained_tokens": r.Tokens,
		})
	}
	fmt.Fprintf(ctx.Stdout, "%s, %s, %d threads: decode tg%d, median of %d runs [min–max]\n", m.Plan.Header.Model.File, m.Backend().Name(), threads, tg, reps)
	fmt.Fprintf(ctx.Stdout, "  free         %8.2f t/s [%.2f–%.2f]\n", free, slices.Min(r.Free), slices.Max(r.Free))
	fmt.Fprintf(ctx.Stdout, "  constrained  %8.2f t/s [%.2f–%.2f]  (%s; %d–%d tokens a run)\n", con, slices.Min(r.Constrained), slices.Max(r.Constrained), cf.name(), slices.Min(r.Tokens), slices.Max(r.Tokens))
	fmt.Fprintf(ctx.Stdout, "  constrained / free: %.3f×\n", ratio)
	return nil
}

// cfThreads is the thread count the backend settled on, where it has one.
func cfThreads(m *runtime.Model) *int {
	n := 0
	if t, ok := m.Backend().(interface{ Threads() int }); ok {
		n = t.Threads()
	}
	return &n
}
