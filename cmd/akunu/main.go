// Command akunu replays plans compiled by akunuc: it runs and benchmarks
// models on the runtime's backends (the CPU now; Metal and CUDA later).
//
// The command is thin: each subcommand parses its flags, calls the runtime
// package and prints. Subcommands live one per file and register themselves
// in init so that files can be added without touching this one.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one subcommand of akunu.
type command struct {
	name    string
	summary string // one line for the overview
	usage   string // the synopsis after "akunu NAME"
	run     func(ctx *cli, args []string) error
}

// cli carries what a subcommand may touch of the process.
type cli struct {
	stdout, stderr io.Writer
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("akunu: duplicate command " + c.name)
	}
	commands[c.name] = c
}

// errUsage marks a usage error: exit status 2 and the command's usage.
var errUsage = errors.New("usage")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				fmt.Fprintf(stdout, "usage: akunu %s %s\n\n%s\n", c.name, c.usage, c.summary)
				return 0
			}
		}
		overview(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "akunu: unknown command %q (run 'akunu help')\n", args[0])
		return 2
	}
	err := c.run(&cli{stdout: stdout, stderr: stderr}, args[1:])
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "akunu %s: %v\nusage: akunu %s %s\n", c.name, err, c.name, c.usage)
		return 2
	default:
		var ex exitError
		if errors.As(err, &ex) {
			return ex.code
		}
		code := 1
		var ee errorExit
		if errors.As(err, &ee) {
			code = ee.code
		}
		fmt.Fprintf(stderr, "akunu %s: %v\n", c.name, err)
		return code
	}
}

// exitError ends the process with a given status and no further message
// (the command has already printed what it had to say).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// errorExit is an error printed as usual but ending the process with a
// status other than 1 (diff exits 2 on errors, 1 meaning "different").
type errorExit struct {
	err  error
	code int
}

func (e errorExit) Error() string { return e.err.Error() }
func (e errorExit) Unwrap() error { return e.err }

func overview(w io.Writer) {
	fmt.Fprintln(w, "akunu replays dispatch plans compiled by akunuc.")
	fmt.Fprintln(w, "\nusage: akunu COMMAND [flags] [args]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'akunu COMMAND -h' for the flags of a command.")
}

// newFlags returns a flag set that reports errors as usage errors and prints
// its help to the command's stdout.
func newFlags(ctx *cli, c command) *flag.FlagSet {
	fs := flag.NewFlagSet("akunu "+c.name, flag.ContinueOnError)
	fs.SetOutput(ctx.stderr)
	fs.Usage = func() {
		fmt.Fprintf(ctx.stderr, "usage: akunu %s %s\n\n%s\n\nflags:\n", c.name, c.usage, c.summary)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, allowing flags after positional arguments
// (akunu inspect model.gguf --json), and returns the positional ones.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
