// Command akunuc is the akunu model compiler: it reads GGUF files, matches
// them to architecture specs and chip profiles, and writes dispatch plans.
//
// The command is thin: each subcommand parses its flags, calls a library
// package and prints. Subcommands live one per file and register themselves
// in init, so files can be added without touching this one; the dispatcher
// itself is internal/cli, shared with the other command.
package main

import (
	"io"
	"os"

	"github.com/akunu-dev/akunu/internal/cli"
)

// app holds the subcommands; each file registers its own in init.
var app = cli.New("akunuc", "akunuc compiles GGUF models into dispatch plans for Apple and NVIDIA GPUs and CPUs.")

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int { return runIO(args, os.Stdin, stdout, stderr) }

// runIO is run with the input given (tokenize reads its text from it).
func runIO(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return app.Main(args, stdin, stdout, stderr)
}
