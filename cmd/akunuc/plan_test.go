package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/plans"
)

func writePlan(t *testing.T, name string, p *plans.Plan) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := plans.WriteFile(path, p); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestInspectPlanJSONHasTheDocumentedFields(t *testing.T) {
	path := writePlan(t, "ex.plan", plans.Example())
	out, errOut, code := runCmd(t, "inspect", path, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"target", "memory", "programs", "bytes_per_token", "roofline_tok_s"} {
		if _, ok := r[f]; !ok {
			t.Errorf("no field %q", f)
		}
	}
	var progs map[string]struct {
		Commands []struct {
			Kernel string `json:"kernel"`
			Label  string `json:"label"`
		} `json:"commands"`
	}
	json.Unmarshal(r["programs"], &progs)
	dec, ok := progs["decode"]
	if !ok || len(dec.Commands) == 0 || dec.Commands[0].Kernel == "" || dec.Commands[0].Label == "" {
		t.Errorf("programs.decode = %+v, want commands with kernel and label", dec)
	}
	var bpt uint64
	json.Unmarshal(r["bytes_per_token"], &bpt)
	var sum uint64
	for _, c := range plans.Example().Programs[0].Commands {
		sum += c.BytesRead
	}
	if plans.Example().Programs[0].Name == "decode" && bpt != sum {
		t.Errorf("bytes_per_token = %d, want the decode program's %d", bpt, sum)
	}
}

func TestInspectPlanTextListsCommands(t *testing.T) {
	p := plans.Example()
	path := writePlan(t, "ex.plan", p)
	out, errOut, code := runCmd(t, "inspect", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"target", "memory", "bytes per token", "program decode", p.Programs[0].Commands[0].Label} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestDiffExitsZeroOneTwo(t *testing.T) {
	a := writePlan(t, "a.plan", plans.Example())
	changed := plans.Example()
	changed.Header.Target.Tuning.ChainChunk++
	changed.Programs[0].Commands[0].Threadgroup[0] *= 2
	b := writePlan(t, "b.plan", changed)

	out, _, code := runCmd(t, "diff", a, a)
	if code != 0 || !strings.Contains(out, "equal") {
		t.Errorf("equal plans: exit %d, %q", code, out)
	}
	out, _, code = runCmd(t, "diff", a, b)
	if code != 1 || !strings.Contains(out, "ChainChunk") && !strings.Contains(out, "chain_chunk") {
		t.Errorf("different plans: exit %d, output:\n%s", code, out)
	}
	if !strings.Contains(out, "2 differences") {
		t.Errorf("want exactly the tuning value and the threadgroup reported:\n%s", out)
	}
	_, errOut, code := runCmd(t, "diff", a, "/nonexistent.plan")
	if code != 2 || errOut == "" {
		t.Errorf("missing plan: exit %d, stderr %q; want 2 and a message", code, errOut)
	}
}
