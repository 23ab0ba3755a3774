package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// BuildVersion says which build this binary is, from what the Go toolchain
// recorded in it: the module's version ("(devel)" for a build from a
// checkout), the VCS revision and its time, "+dirty" when the tree had
// uncommitted changes, and the Go version. A field the build did not
// record (go test, -buildvcs=false) is left out.
func BuildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown build, " + runtime.Version()
	}
	parts := []string{}
	mod := bi.Main.Version
	if mod == "" {
		mod = "(devel)"
	}
	if bi.Main.Path != "" {
		mod = bi.Main.Path + " " + mod
	}
	parts = append(parts, mod)
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		parts = append(parts, "revision "+rev+dirty)
	}
	if at != "" {
		parts = append(parts, at)
	}
	parts = append(parts, runtime.Version())
	return strings.Join(parts, ", ")
}

// versionAlias is what Main runs --version and -version as: the "version"
// command, when the app has one.
func (a *App) versionAlias(args []string) []string {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		if _, ok := a.cmds["version"]; ok {
			return append([]string{"version"}, args[1:]...)
		}
	}
	return args
}

// VersionCommand is a "version" command printing the app's name, its
// BuildVersion, and lines of its own (the plan formats it reads and
// writes).
func VersionCommand(app string, lines ...string) Command {
	return Command{
		Name:    "version",
		Summary: "print the build (module version, VCS revision, Go version) and the plan formats it reads and writes (also --version)",
		Usage:   "",
		Run: func(ctx *Context, args []string) error {
			fs := ctx.Flags("version")
			pos, err := Parse(fs, args)
			if err != nil {
				return err
			}
			if len(pos) != 0 {
				return fmt.Errorf("%w: version takes no arguments", ErrUsage)
			}
			fmt.Fprintf(ctx.Stdout, "%s: %s\n", app, BuildVersion())
			for _, l := range lines {
				fmt.Fprintln(ctx.Stdout, l)
			}
			return nil
		},
	}
}
