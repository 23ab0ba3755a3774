package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestSynthProgressIsPlainLinesOffATerminal: into a log, synth's progress
// is a line at each quarter, never a carriage return; on a terminal one
// line rewritten, ended when the file is written.
func TestSynthProgressIsPlainLinesOffATerminal(t *testing.T) {
	const total = 100 << 20
	feed := func(report func(done, total int64)) {
		for done := int64(0); done <= total; done += 1 << 20 {
			report(done, total)
		}
	}
	var b bytes.Buffer
	feed(synthProgress(&b, false))
	want := "synth: 25% of 100.0 MiB\nsynth: 50% of 100.0 MiB\nsynth: 75% of 100.0 MiB\nsynth: 100% of 100.0 MiB\n"
	if b.String() != want {
		t.Errorf("off a terminal: got %q, want %q", b.String(), want)
	}
	b.Reset()
	feed(synthProgress(&b, true))
	if out := b.String(); !strings.HasPrefix(out, "\rsynth: ") || !strings.HasSuffix(out, "100.0% of 100.0 MiB\n") {
		t.Errorf("on a terminal: got %q, want \\r-rewritten lines ending in a newline at 100%%", out)
	}
	b.Reset()
	feed(func(done, _ int64) { synthProgress(&b, false)(done/100, total/100) })
	if b.Len() != 0 {
		t.Errorf("a small model printed progress: %q", b.String())
	}
}
