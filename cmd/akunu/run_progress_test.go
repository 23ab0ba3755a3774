package main

import (
	"strings"
	"testing"
)

// TestLoadProgressOffATerminal: into a log, a load says each stage once as
// it ends, with no carriage returns; on a terminal it rewrites one line.
func TestLoadProgressOffATerminal(t *testing.T) {
	var log strings.Builder
	p := loadProgress(&log, false)
	for _, d := range []int64{0, 50, 100} {
		p("weights", d, 100)
	}
	if got, want := log.String(), "akunu: weights done\n"; got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
	var tty strings.Builder
	p = loadProgress(&tty, true)
	p("weights", 50, 100)
	p("weights", 100, 100)
	if got, want := tty.String(), "\rakunu: weights  50.0%\rakunu: weights 100.0%\n"; got != want {
		t.Errorf("tty = %q, want %q", got, want)
	}
}
