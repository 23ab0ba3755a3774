// Command akunu replays compiled plans: it runs, benchmarks and chats with
// models compiled by akunuc. Replay arrives with the runtime; until then it
// answers --help and reports what it is.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stdout, "akunu replays plans compiled by akunuc.\n\nusage: akunu COMMAND [flags] PLAN\n\nNo commands are available yet: the runtime is not built.")
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	fmt.Fprintf(stderr, "akunu: unknown command %q (run 'akunu help')\n", args[0])
	return 2
}
