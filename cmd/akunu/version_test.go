package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/plans"
)

func TestVersionNamesTheBuildAndThePlanFormats(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		out, se, code := runAkunu(arg)
		want := fmt.Sprintf("plans: reads formats 1 to %d", plans.FormatVersion)
		if code != 0 || !strings.HasPrefix(out, "akunu: ") || !strings.Contains(out, want) {
			t.Errorf("akunu %s: exit %d, stdout %q, stderr %q; want the build and %q", arg, code, out, se, want)
		}
	}
}
