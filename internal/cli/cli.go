// Package cli is the dispatcher the two commands share: subcommands that
// register themselves, flags that may follow positional arguments, usage
// errors with exit status 2, and the help overview. It knows nothing of
// models or plans.
package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"
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
	args = a.versionAlias(args)
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
	var fe FlagError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &fe):
		// A flag's value: the line names it, the synopsis would only
		// bury it.
		fmt.Fprintf(stderr, "%s %s: %v\n", a.Name, c.Name, err)
		return 2
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(stderr, "%s %s: %s\nusage: %s %s %s\n", a.Name, c.Name, strings.TrimPrefix(err.Error(), ErrUsage.Error()+": "), a.Name, c.Name, c.Usage)
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

// FlagError is a flag given a value it cannot take, or a flag the command
// does not have: one line naming the flag, exit status 2, no help.
type FlagError struct {
	Flag string // the name, without dashes
	Msg  string // what follows the flag: "1.5: must be in (0, 1]"
}

func (e FlagError) Error() string { return Dashed(e.Flag) + " " + e.Msg }

// Is makes a FlagError a usage error.
func (e FlagError) Is(target error) bool { return target == ErrUsage }

// Dashed is how a flag is written in messages: -n, --top-p.
func Dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// helpOut is a flag set's output: the flag package writes its error and
// the whole help there on any parse error; Parse shows it only when help
// was asked for, so a bad flag is one line.
type helpOut struct {
	buf  bytes.Buffer
	help io.Writer
}

func (h *helpOut) Write(p []byte) (int, error) { return h.buf.Write(p) }

// Flags returns a flag set for the named command whose parse errors are
// one-line usage errors and whose -h prints its help to stdout.
func (ctx *Context) Flags(name string) *flag.FlagSet {
	c := ctx.app.cmds[name]
	prog := ctx.app.Name
	fs := flag.NewFlagSet(prog+" "+name, flag.ContinueOnError)
	fs.SetOutput(&helpOut{help: ctx.Stdout})
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s %s %s\n\n%s\n\nflags:\n", prog, c.Name, c.Usage, c.Summary)
		fs.PrintDefaults()
	}
	return fs
}

var (
	invalidRE = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-(\S+): (.*)$`)
	unknownRE = regexp.MustCompile(`^flag provided but not defined: -(\S+)$`)
	needsRE   = regexp.MustCompile(`^flag needs an argument: -(\S+)$`)
)

// flagError rewrites the flag package's parse errors in our form.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if m := invalidRE.FindStringSubmatch(msg); m != nil {
		want := "a valid value"
		if f := fs.Lookup(m[2]); f != nil {
			if g, ok := f.Value.(flag.Getter); ok {
				switch g.Get().(type) {
				case int, int64, uint, uint64:
					want = "an integer"
				case float64:
					want = "a number"
				case time.Duration:
					want = "a duration like 30s or 5m"
				case bool:
					want = "true or false"
				}
			}
		}
		why := strings.TrimSuffix(m[3], "parse error")
		if why != "" {
			why = " (" + why + ")"
		}
		return FlagError{Flag: m[2], Msg: fmt.Sprintf("%q: want %s%s", m[1], want, why)}
	}
	if m := unknownRE.FindStringSubmatch(msg); m != nil {
		return FlagError{Flag: m[1], Msg: fmt.Sprintf("is not a flag of this command (%s -h lists them)", fs.Name())}
	}
	if m := needsRE.FindStringSubmatch(msg); m != nil {
		return FlagError{Flag: m[1], Msg: "needs a value"}
	}
	return fmt.Errorf("%w: %v", ErrUsage, err)
}

// Parse parses args, allowing flags after positional arguments
// (akunuc inspect model.gguf --json), and returns the positional ones.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		h, _ := fs.Output().(*helpOut)
		if h != nil {
			h.buf.Reset()
		}
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				if h != nil {
					h.help.Write(h.buf.Bytes())
				}
				return nil, err
			}
			return nil, flagError(fs, err)
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
