package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/plans"
)

func TestVersionNamesTheBuildAndThePlanFormats(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		out, se, code := runCmd(t, arg)
		want := fmt.Sprintf("plans: writes format %d; reads formats 1 to %d", plans.FormatVersion, plans.FormatVersion)
		if code != 0 || !strings.HasPrefix(out, "akunuc: ") || !strings.Contains(out, want) || !strings.Contains(out, "compiler "+compiler.Version) {
			t.Errorf("akunuc %s: exit %d, stdout %q, stderr %q; want the build, the compiler version and %q", arg, code, out, se, want)
		}
	}
}
