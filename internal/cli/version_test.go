package cli

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

func TestVersionFlagRunsTheVersionCommand(t *testing.T) {
	a := testApp()
	var plain bytes.Buffer
	if code := a.Main([]string{"--version"}, nil, &plain, &plain); code != 2 {
		t.Errorf("--version of an app without a version command: exit %d, want 2 (unknown command)", code)
	}
	a.Register(VersionCommand("prog", "plans: format 9"))
	outs := map[string]string{}
	for _, arg := range []string{"version", "--version", "-version"} {
		var out, errOut bytes.Buffer
		code := a.Main([]string{arg}, nil, &out, &errOut)
		if code != 0 || errOut.Len() != 0 {
			t.Fatalf("prog %s: exit %d, stderr %q", arg, code, errOut.String())
		}
		outs[arg] = out.String()
	}
	got := outs["version"]
	if !strings.HasPrefix(got, "prog: ") || !strings.Contains(got, runtime.Version()) || !strings.HasSuffix(got, "\nplans: format 9\n") {
		t.Errorf("prog version printed %q; want the name, the build with the Go version, then the app's lines", got)
	}
	if outs["--version"] != got || outs["-version"] != got {
		t.Errorf("--version %q and -version %q differ from version %q", outs["--version"], outs["-version"], got)
	}
	var out, errOut bytes.Buffer
	if code := a.Main([]string{"version", "x"}, nil, &out, &errOut); code != 2 {
		t.Errorf("version with an argument: exit %d, want 2", code)
	}
}
