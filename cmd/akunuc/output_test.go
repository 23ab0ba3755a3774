package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/specs/chips"
)

// TestCompileOutputNamesTheUsersPathAndTakesTheUmask: -o's errors name the
// path given, never the temporary file the plan is written through, and
// the plan gets the mode a newly created file gets.
func TestCompileOutputNamesTheUsersPathAndTakesTheUmask(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "no", "such", "x.plan")
	_, se, code := runCmd(t, "compile", stories(t), "--chip", "cpu-avx2:2", "-o", bad)
	if code != 1 || !strings.Contains(se, bad+": no such file or directory") || strings.Contains(se, ".tmp") {
		t.Errorf("-o into a missing folder: exit %d, stderr %q; want 1 naming %s and no temporary file", code, se, bad)
	}
	_, se, code = runCmd(t, "compile", stories(t), "--chip", "cpu-avx2:2", "-o", dir)
	if code != 1 || !strings.Contains(se, "writing "+dir+": ") || strings.Contains(se, ".tmp") {
		t.Errorf("-o a folder: exit %d, stderr %q; want 1 naming %s and no temporary file", code, se, dir)
	}

	probe := filepath.Join(dir, "probe")
	if err := os.WriteFile(probe, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	want, _ := os.Stat(probe)
	out := filepath.Join(dir, "s.plan")
	if _, se, code := runCmd(t, "compile", stories(t), "--chip", "cpu-avx2:2", "-o", out); code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != want.Mode().Perm() {
		t.Errorf("plan mode %v, want %v (0666 less the umask)", st.Mode().Perm(), want.Mode().Perm())
	}
}

func TestChipAutoSaysWhatItDetected(t *testing.T) {
	prof, err := chips.Resolve("cpu-avx2", 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ found, want string }{
		{prof.String(), "akunuc: --chip auto: detected cpu-avx2:2"},
		{"", "akunuc: --chip auto: detected cpu-avx2:2"},
		{"CPU: x86\ncores: 2", "akunuc: --chip auto: detected cpu-avx2:2 (CPU: x86; cores: 2)"},
	} {
		if got := autoChipLine(tc.found, prof); got != tc.want {
			t.Errorf("autoChipLine(%q) = %q, want %q", tc.found, got, tc.want)
		}
	}
	_, se, code := runCmd(t, "compile", stories(t), "--chip", "auto", "-o", filepath.Join(t.TempDir(), "a.plan"))
	if code != 0 || !strings.HasPrefix(se, "akunuc: --chip auto: detected ") || strings.Contains(se, "→") {
		t.Errorf("exit %d, stderr %q; want one line starting \"akunuc: --chip auto: detected\"", code, se)
	}
}

func TestInspectOfACPUPlanPrintsNoZeroBandwidth(t *testing.T) {
	out := filepath.Join(t.TempDir(), "c.plan")
	if _, se, code := runCmd(t, "compile", stories(t), "--chip", "cpu-avx2:2", "-o", out); code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	so, se, code := runCmd(t, "inspect", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	if strings.Contains(so, " 0 GB/s") || strings.Contains(so, "SLC 0 B") || !strings.Contains(so, "bandwidth unknown") ||
		!strings.Contains(so, "none: the target records no memory bandwidth") {
		t.Errorf("inspect of a CPU plan:\n%s\nwant no zero bandwidth or SLC, and the roofline's absence explained", so)
	}
}

// inspect says how much of a token's bytes is the KV cache at the plan's
// whole context: the decode attention commands' reads, no more, no less.
func TestInspectSaysWhatPartOfATokensBytesIsTheCache(t *testing.T) {
	out := filepath.Join(t.TempDir(), "c.plan")
	if _, se, code := runCmd(t, "compile", stories(t), "--chip", "m4-max", "-o", out); code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	so, se, code := runCmd(t, "inspect", out, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	var r struct {
		BytesPerToken uint64 `json:"bytes_per_token"`
		Cache         uint64 `json:"cache_bytes_per_token"`
		Programs      map[string]struct {
			Commands []struct {
				Kernel    string `json:"kernel"`
				BytesRead uint64 `json:"bytes_read"`
			} `json:"commands"`
		} `json:"programs"`
	}
	if err := json.Unmarshal([]byte(so), &r); err != nil {
		t.Fatal(err)
	}
	var want uint64
	for _, c := range r.Programs["decode"].Commands {
		if strings.HasPrefix(c.Kernel, "flash_attention_decode") && !strings.Contains(c.Kernel, "reduce") {
			want += c.BytesRead
		}
	}
	if want == 0 || r.Cache != want || r.Cache >= r.BytesPerToken {
		t.Errorf("cache_bytes_per_token %d of %d; the decode attention commands read %d", r.Cache, r.BytesPerToken, want)
	}
	text, _, _ := runCmd(t, "inspect", out)
	if !strings.Contains(text, "of which KV cache") {
		t.Errorf("inspect's text does not say the cache's part:\n%s", text)
	}
}
