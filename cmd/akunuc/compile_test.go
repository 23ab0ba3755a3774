package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/plans"
)

func TestCompileWritesAValidPlanTwiceTheSame(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.plan"), filepath.Join(dir, "b.plan")
	for _, out := range []string{a, b} {
		so, se, code := runCmd(t, "compile", stories(t), "-o", out, "--chip", "m3-pro")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, se)
		}
		if !strings.Contains(so, "m3-pro") {
			t.Errorf("summary %q does not name the target", so)
		}
	}
	ba, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ba, bb) {
		t.Error("two compiles of the same inputs differ")
	}
	p, err := plans.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	if p.Header.Target.Chip != "m3-pro-18" || p.Model.HParams.Layers != 5 {
		t.Errorf("target %q, %d layers", p.Header.Target.Chip, p.Model.HParams.Layers)
	}
}

func TestCompileVerboseListsEveryPass(t *testing.T) {
	out := filepath.Join(t.TempDir(), "s.plan")
	_, se, code := runCmd(t, "compile", stories(t), "-o", out, "--chip", "m1", "-v")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	for _, pass := range []string{"lower", "fuse", "layout", "select", "buffers", "emit", "weights", "validate"} {
		if !strings.Contains(se, pass) {
			t.Errorf("-v output lacks pass %q:\n%s", pass, se)
		}
	}
}

func TestCompileRefusesWhatItCannotCompile(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"an unknown chip", []string{"compile", stories(t), "--chip", "m9-ultra", "-o", "/dev/null"}, 1, "unknown chip"},
		{"a missing model", []string{"compile", "/nonexistent.gguf", "--chip", "m1"}, 1, "no such file"},
		{"no model", []string{"compile"}, 2, "usage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, se, code := runCmd(t, tc.args...)
			if code != tc.code || !strings.Contains(se, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d mentioning %q", code, se, tc.code, tc.want)
			}
		})
	}
}
