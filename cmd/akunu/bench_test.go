package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBandwidthLineNeverShowsABareShareAbove100(t *testing.T) {
	for _, tc := range []struct {
		name           string
		achieved, bw   float64
		measured       bool
		want, wantNote string
		perTok         float64 // bytes a token reads; 0: 2.4 MB
	}{
		{"a share below 100% is plain", 10e9, 20e9, true, "50.0% of 20.0 GB/s (measured read, 2 threads)", "", 0},
		{"above the measured bandwidth says the caches", 93e9, 20e9, true, "465.0% of 20.0 GB/s (measured read, 2 threads); above the measured read bandwidth: the bytes a token reads stay in the CPU's caches", "caches", 0},
		{"above the measured bandwidth with more bytes than caches hold blames the probe", 93e9, 20e9, true, "465.0% of 20.0 GB/s (measured read, 2 threads); above the measured read bandwidth: the read probe", "undershoots", 456.8e6},
		{"above a profile's figure says so", 150e9, 100e9, false, "150.0% of 100.0 GB/s (measured read, 2 threads); above the profile's bandwidth", "profile", 0},
		{"no bandwidth, no share", 10e9, 0, true, "10.00 GB/s (no bandwidth to compare with)", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			perTok := tc.perTok
			if perTok == 0 {
				perTok = 2.4e6
			}
			line, note := bandwidthLine(perTok, tc.achieved, tc.bw, "measured read, 2 threads", tc.measured)
			if !strings.Contains(line, tc.want) || !strings.Contains(note, tc.wantNote) || (tc.wantNote == "") != (note == "") {
				t.Errorf("line %q, note %q; want %q in the line, %q in the note", line, note, tc.want, tc.wantNote)
			}
			if !strings.HasPrefix(line, fmt.Sprintf("decode reads %.1f MB/token: ", perTok/1e6)) {
				t.Errorf("line %q", line)
			}
		})
	}
}

// TestBenchProgressIsALineARunOffATerminal: a bench tells each run as it
// ends; into a file or a pipe that is a line each, never a carriage return.
func TestBenchProgressIsALineARunOffATerminal(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, 2)
	p.phase("pp8 and tg8, 2 runs after a warm-up")
	for rep := range 3 {
		p.rep(rep, "tg 10.00 t/s")
	}
	p.done()
	p.phase("batched decode of 2 sequences")
	want := "akunu: pp8 and tg8, 2 runs after a warm-up\n" +
		"akunu:   warm-up: tg 10.00 t/s\nakunu:   run 1/2: tg 10.00 t/s\nakunu:   run 2/2: tg 10.00 t/s\n" +
		"akunu: batched decode of 2 sequences\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
	// On a terminal the runs rewrite one line, ended before the next phase.
	p = &progress{w: &b, tty: true, reps: 1}
	b.Reset()
	p.phase("x")
	p.rep(1, "y")
	p.phase("z")
	if want := "akunu: x\n\r\x1b[Kakunu:   run 1/1: y\nakunu: z\n"; b.String() != want {
		t.Errorf("terminal: got %q, want %q", b.String(), want)
	}
}

// akunu bench times tg from an empty context unless -c names a depth, and
// says which: the JSON's tg_context, the table's row name (llama-bench's
// "tg8 @ d100"). A decode that needs more positions than the plan has is
// refused, whatever -p is.
func TestBenchDecodeContext(t *testing.T) {
	plan := compileShared(t, "models", "stories260K.gguf")
	for _, c := range []struct {
		args    []string
		ctx     int
		rowName string
	}{
		{[]string{"-p", "200", "-n", "8"}, 1, "tg8  "},
		{[]string{"-p", "16", "-c", "100", "-n", "8"}, 100, "tg8 @ d100"},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"bench", plan, "--backend", "cpu", "-r", "1"}, c.args...)
		if code := runIO(append(args, "--json"), strings.NewReader(""), &out, &errOut); code != 0 {
			t.Fatalf("%v: exit %d, %s", c.args, code, errOut.String())
		}
		var r struct {
			TGContext int       `json:"tg_context"`
			TGRuns    []float64 `json:"tg_runs"`
		}
		if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.TGContext != c.ctx || len(r.TGRuns) != 1 || r.TGRuns[0] <= 0 {
			t.Errorf("%v: %+v %v\n%s", c.args, r, err, out.String())
		}
		out.Reset()
		if code := runIO(args, strings.NewReader(""), &out, &errOut); code != 0 || !strings.Contains(out.String(), c.rowName) {
			t.Errorf("%v: exit %d, no row %q in\n%s", c.args, code, c.rowName, out.String())
		}
	}
}

// --cpuprofile writes a profile in the form go tool pprof reads (a gzip
// stream); a path that cannot be created is an error naming the flag.
func TestBenchWritesACPUProfile(t *testing.T) {
	plan := compileShared(t, "models", "stories260K.gguf")
	prof := filepath.Join(t.TempDir(), "bench.prof")
	var out, errOut bytes.Buffer
	if code := runIO([]string{"bench", plan, "--backend", "cpu", "-r", "2", "-p", "64", "-n", "64", "--cpuprofile", prof}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	b, err := os.ReadFile(prof)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("the profile is not a gzip stream: %d bytes, %v", len(b), err)
	}
	errOut.Reset()
	bad := filepath.Join(t.TempDir(), "no", "such", "dir", "p.prof")
	if code := runIO([]string{"bench", plan, "--backend", "cpu", "-r", "1", "--cpuprofile", bad}, strings.NewReader(""), &out, &errOut); code == 0 || !strings.Contains(errOut.String(), "--cpuprofile") {
		t.Fatalf("a bad path: exit %d, %q", code, errOut.String())
	}
}
