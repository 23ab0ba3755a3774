package main

import (
	"flag"
	"fmt"
	"io"
	"os"

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

// notWithSpec refuses speculative decoding under a constraint: drafts
// are verified several positions at a time, and a grammar's mask is the
// mask of one position, advanced token by token.
func (f constrainFlags) notWithSpec(spec string) error {
	if spec != "" && f.on() {
		return cli.FlagError{Flag: "spec", Msg: fmt.Sprintf("%s: cannot be combined with %s (a grammar masks one position at a time)", spec, f.flag())}
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
// schema); the grammar's warnings go to warn, one a line.
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
