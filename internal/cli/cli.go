// Package cli is the dispatcher the two commands share: subcommands that
// register themselves, flags that may follow positional arguments, usage
// errors with exit status 2, and the help overview. It knows nothing of
// models or plans.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
)

// Command is one subcommand.
type Command struct {
	Name    string
	Summary string // one line for the overview
	Usage   string // the synopsis after "PROG NAME"
	Run     func(ctx *Context, args []string) error
}

// Context carries what a subcommand may touch of the process.
type Context struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	app            *App
}

// App is a program made of subcommands.
type App struct {
	Name  string // "akunuc"
	Blurb string // the overview's first line
	cmds  map[string]Command
}

// New returns an App with no commands.
func New(name, blurb string) *App { return &App{Name: name, Blurb: blurb, cmds: map[string]Command{}} }

// Register adds a command; a second command of the same name panics (it is
// a programming error, found by any test that starts the program).
func (a *App) Register(c Command) {
	if _, dup := a.cmds[c.Name]; dup {
		panic(a.Name + ": duplicate command " + c.Name)
	}
	a.cmds[c.Name] = c
}

// ErrUsage marks a usage error: exit status 2 and the command's usage.
var ErrUsage = errors.New("usage")

// Exit ends the process with Code and no further message (the command has
// already said what it had to).
type Exit struct{ Code int }

func (e Exit) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// ErrorExit is an error printed as usual but ending the process with a
// status other than 1 (diff exits 2 on errors, 1 meaning "different").
type ErrorExit struct {
	Err  error
	Code int
}

func (e ErrorExit) Error() string { return e.Err.Error() }
func (e ErrorExit) Unwrap() error { return e.Err }

// Main runs the command args name and returns the exit status.
func (a *App) Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 {
			if c, ok := a.cmds[args[1]]; ok {
				fmt.Fprintf(stdout, "usage: %s %s %s\n\n%s\n", a.Name, c.Name, c.Usage, c.Summary)
				return 0
			}
		}
		a.overview(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := a.cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown command %q (run '%s help')\n", a.Name, args[0], a.Name)
		return 2
	}
	err := c.Run(&Context{Stdin: stdin, Stdout: stdout, Stderr: stderr, app: a}, args[1:])
	var ex Exit
	var ee ErrorExit
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(stderr, "%s %s: %v\nusage: %s %s %s\n", a.Name, c.Name, err, a.Name, c.Name, c.Usage)
		return 2
	case errors.As(err, &ex):
		return ex.Code
	case errors.As(err, &ee):
		fmt.Fprintf(stderr, "%s %s: %v\n", a.Name, c.Name, err)
		return ee.Code
	default:
		fmt.Fprintf(stderr, "%s %s: %v\n", a.Name, c.Name, err)
		return 1
	}
}

func (a *App) overview(w io.Writer) {
	fmt.Fprintln(w, a.Blurb)
	fmt.Fprintf(w, "\nusage: %s COMMAND [flags] [args]\n\ncommands:\n", a.Name)
	names := make([]string, 0, len(a.cmds))
	for n := range a.cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, a.cmds[n].Summary)
	}
	fmt.Fprintf(w, "\nRun '%s COMMAND -h' for the flags of a command.\n", a.Name)
}

// Flags returns a flag set for the named command that reports errors as
// usage errors and prints its help to stderr.
func (ctx *Context) Flags(name string) *flag.FlagSet {
	c := ctx.app.cmds[name]
	prog := ctx.app.Name
	fs := flag.NewFlagSet(prog+" "+name, flag.ContinueOnError)
	fs.SetOutput(ctx.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(ctx.Stderr, "usage: %s %s %s\n\n%s\n\nflags:\n", prog, c.Name, c.Usage, c.Summary)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses args, allowing flags after positional arguments
// (akunuc inspect model.gguf --json), and returns the positional ones.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", ErrUsage, err)
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
