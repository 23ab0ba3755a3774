package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func testApp() *App {
	a := New("prog", "prog does things.")
	a.Register(Command{Name: "echo", Summary: "print the arguments", Usage: "[--upper] WORDS...",
		Run: func(ctx *Context, args []string) error {
			fs := ctx.Flags("echo")
			upper := fs.Bool("upper", false, "shout")
			times := fs.Int("times", 1, "repeat")
			fs.Duration("wait", 0, "pause")
			pos, err := Parse(fs, args)
			if err != nil {
				return err
			}
			if len(pos) == 0 {
				return fmt.Errorf("%w: nothing to echo", ErrUsage)
			}
			if *times < 1 {
				return FlagError{Flag: "times", Msg: fmt.Sprint(*times, ": must be at least 1")}
			}
			s := strings.Repeat(strings.Join(pos, " "), *times)
			if *upper {
				s = strings.ToUpper(s)
			}
			fmt.Fprintln(ctx.Stdout, s)
			return nil
		}})
	a.Register(Command{Name: "fail", Run: func(*Context, []string) error {
		return ErrorExit{Err: errors.New("broken"), Code: 3}
	}})
	a.Register(Command{Name: "quiet", Run: func(*Context, []string) error { return Exit{Code: 1} }})
	return a
}

func TestExitStatusesAndMessages(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"flags may follow positional arguments", []string{"echo", "hi", "--upper"}, 0, "HI\n", ""},
		{"a usage error exits 2 with the usage", []string{"echo"}, 2, "", "usage: prog echo [--upper] WORDS..."},
		{"an unknown flag is a usage error", []string{"echo", "--loud", "x"}, 2, "", "prog echo: --loud is not a flag of this command (prog echo -h lists them)\n"},
		{"a value of the wrong type names the flag and the type", []string{"echo", "x", "--times", "two"}, 2, "", "prog echo: --times \"two\": want an integer\n"},
		{"an integer out of range says so", []string{"echo", "x", "--times", "99999999999999999999"}, 2, "", "want an integer (value out of range)\n"},
		{"a bad duration names the form", []string{"echo", "x", "--wait", "5"}, 2, "", "prog echo: --wait \"5\": want a duration like 30s or 5m"},
		{"a boolean flag with another value", []string{"echo", "x", "--upper=loud"}, 2, "", "prog echo: --upper \"loud\": want true or false\n"},
		{"a flag without its value", []string{"echo", "x", "--times"}, 2, "", "prog echo: --times needs a value\n"},
		{"a refused value is one line", []string{"echo", "x", "--times", "0"}, 2, "", "prog echo: --times 0: must be at least 1\n"},
		{"-h prints the help to stdout and exits 0", []string{"echo", "-h"}, 0, "usage: prog echo [--upper] WORDS...\n\nprint the arguments\n\nflags:\n", ""},
		{"an unknown command exits 2", []string{"ecko"}, 2, "", `unknown command "ecko"`},
		{"no command prints the overview and exits 2", nil, 2, "commands:", ""},
		{"help exits 0", []string{"help"}, 0, "echo       print the arguments", ""},
		{"an error with a status keeps it", []string{"fail"}, 3, "", "prog fail: broken"},
		{"an exit says nothing", []string{"quiet"}, 1, "", ""},
		{"-- ends the flags", []string{"echo", "--", "--upper"}, 0, "--upper\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := testApp().Main(tc.args, nil, &out, &errOut)
			if code != tc.code || !strings.Contains(out.String(), tc.out) || !strings.Contains(errOut.String(), tc.err) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, out.String(), errOut.String(), tc.code, tc.out, tc.err)
			}
			if code == 2 && strings.HasPrefix(tc.err, "prog echo: -") && strings.Count(errOut.String(), "\n") != 1 {
				t.Errorf("stderr %q, want one line", errOut.String())
			}
			if code == 0 && errOut.Len() != 0 {
				t.Errorf("stderr %q, want nothing", errOut.String())
			}
			if tc.name == "an exit says nothing" && errOut.Len() != 0 {
				t.Errorf("stderr %q, want nothing", errOut.String())
			}
		})
	}
}

func TestTwoCommandsOfOneNamePanic(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	a := New("p", "")
	a.Register(Command{Name: "x"})
	a.Register(Command{Name: "x"})
}
