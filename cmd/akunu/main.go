// Command akunu replays plans compiled by akunuc: it runs, chats with,
// benchmarks and verifies models on the runtime's backends (the CPU
// everywhere, Metal on macOS).
//
// The command is thin: each subcommand parses its flags, calls a library
// package and prints. Subcommands live one per file and register themselves
// in init, so files can be added without touching this one; the dispatcher
// itself is internal/cli, shared with the other command.
package main

import (
	"flag"
	"io"
	"os"

	clipkg "github.com/akunu-dev/akunu/internal/cli"
)

var app = clipkg.New("akunu", "akunu replays dispatch plans compiled by akunuc.")

// command is one subcommand of akunu.
type command struct {
	name    string
	summary string // one line for the overview
	usage   string // the synopsis after "akunu NAME"
	run     func(ctx *cli, args []string) error
}

// cli carries what a subcommand may touch of the process.
type cli = clipkg.Context

var commands = map[string]command{}

func register(c command) {
	commands[c.name] = c
	app.Register(clipkg.Command{Name: c.name, Summary: c.summary, Usage: c.usage, Run: c.run})
}

// errUsage marks a usage error: exit status 2 and the command's usage.
var errUsage = clipkg.ErrUsage

// exitError ends the process with a status and no further message;
// errorExit prints its error and ends with a status other than 1.
type (
	exitError = clipkg.Exit
	errorExit = clipkg.ErrorExit
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int { return runIO(args, os.Stdin, stdout, stderr) }

// runIO is run with the input given (chat reads its turns from it).
func runIO(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return app.Main(args, stdin, stdout, stderr)
}

// newFlags returns the flag set of command c.
func newFlags(ctx *cli, c command) *flag.FlagSet { return ctx.Flags(c.name) }

// parseFlags parses args, allowing flags after positional arguments, and
// returns the positional ones.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) { return clipkg.Parse(fs, args) }
