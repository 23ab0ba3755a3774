package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkChipsGolden compares got with testdata/name; UPDATE_GOLDEN=1 rewrites it.
func checkChipsGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with UPDATE_GOLDEN=1 to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (UPDATE_GOLDEN=1 regenerates it; review the diff):\n%s", path, got)
	}
}

func runChipsCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestChipsJSONListsEveryProfileWithItsTuning(t *testing.T) {
	out, errOut, code := runChipsCmd(t, "chips", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	checkChipsGolden(t, "chips.json.golden", []byte(out))

	// The fields docs/chips.md promises.
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		for _, f := range []string{"name", "vendor", "gpu_cores", "family", "bandwidth_gbs", "slc_bytes", "tuning"} {
			if _, ok := e[f]; !ok {
				t.Errorf("%v: no field %s", e["name"], f)
			}
		}
		tu, _ := e["tuning"].(map[string]any)
		for _, f := range []string{"fuse_weights", "q4_large_k_threshold", "wide_gemv_threshold", "chain_chunk", "prefill_chunk", "norm_tg"} {
			if _, ok := tu[f]; !ok {
				t.Errorf("%v: no tuning field %s", e["name"], f)
			}
		}
	}
}

func TestChipsTableListsEveryProfile(t *testing.T) {
	out, errOut, code := runChipsCmd(t, "chips")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	checkChipsGolden(t, "chips.txt.golden", []byte(out))
}

func TestChipsRulesPrintsTheRuleTable(t *testing.T) {
	out, _, code := runChipsCmd(t, "chips", "--rules")
	if code != 0 || !strings.Contains(out, "fuse_weights") || !strings.Contains(out, "slc >= 16 MiB") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	out, _, code = runChipsCmd(t, "chips", "--rules", "--json")
	var rules []ruleJSON
	if err := json.Unmarshal([]byte(out), &rules); code != 0 || err != nil || len(rules) == 0 {
		t.Errorf("exit %d, %v, %d rules", code, err, len(rules))
	}
}

func TestChipsResolvesNamedTargets(t *testing.T) {
	out, errOut, code := runChipsCmd(t, "chips", "--json", "m3-pro:14", "cpu-avx2:16", "Apple M1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var list []chipJSON
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range list {
		got = append(got, e.String())
	}
	if strings.Join(got, " ") != "m3-pro-14 cpu-avx2:16 m1-8" {
		t.Errorf("resolved %v", got)
	}
	if list[0].Tuning.ChainChunk != 96 || list[1].CPUCores != 16 || list[1].Tuning.FuseWeights || list[2].Tuning.ChainChunk != 64 {
		t.Errorf("tuning not derived per resolved target: %+v", list)
	}
}

func TestChipsRefusesUnknownNamesWithASuggestion(t *testing.T) {
	_, errOut, code := runChipsCmd(t, "chips", "m4-mx")
	if code != 1 || !strings.Contains(errOut, "did you mean m4-max?") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = runChipsCmd(t, "chips", "--rules", "m1")
	if code != 2 || !strings.Contains(errOut, "usage: akunuc chips") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// Detection reads this machine, so only its shape is checked: a report and
// a profile, or an error that says why (a CPU without AVX2).
func TestChipsDetectReportsWhatItFound(t *testing.T) {
	out, errOut, code := runChipsCmd(t, "chips", "--detect")
	switch {
	case code == 0 && strings.Contains(out, "profile: ") && strings.Contains(out, "NAME"):
	case code == 1 && errOut != "":
	default:
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
