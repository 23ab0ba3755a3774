package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/kernels"
)

func runKernelsCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// checkKernelsGolden compares got with testdata/name; UPDATE_GOLDEN=1 rewrites it.
func checkKernelsGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("UPDATE_GOLDEN") != "" {
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
		t.Errorf("%s differs from the output (UPDATE_GOLDEN=1 regenerates it; review the diff)", path)
	}
}

func TestKernelsJSONListsTheCatalog(t *testing.T) {
	out, errOut, code := runKernelsCmd(t, "kernels", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	checkKernelsGolden(t, "kernels.json.golden", []byte(out))

	// The fields docs/kernels.md promises, for every kernel of the catalog.
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != len(kernels.All()) {
		t.Errorf("%d kernels listed, the catalog has %d", len(list), len(kernels.All()))
	}
	for _, e := range list {
		for _, f := range []string{"name", "op", "act", "params", "bindings", "constants", "geometry", "backends"} {
			if _, ok := e[f]; !ok {
				t.Errorf("%v: no field %s", e["name"], f)
			}
		}
		// Every kernel runs on the CPU; the F16-activation kernels (what a
		// GPU plan names) also have their one GPU source, MSL and CUDA.
		b, _ := e["backends"].([]any)
		want := []any{"cpu"}
		if e["act"] == "F16" || e["act"] == "f16" {
			want = []any{"cpu", "cuda", "metal"}
		}
		if fmt.Sprint(b) != fmt.Sprint(want) {
			t.Errorf("%v: backends %v, want %v", e["name"], b, want)
		}
	}
}

func TestKernelsTableSelectsByPattern(t *testing.T) {
	out, errOut, code := runKernelsCmd(t, "kernels", "gemv_q4_0*", "rmsnorm_f16")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"gemv_q4_0_l_silu", "GEMVParams@5", "w gate up y* bias?", "rmsnorm_f16", "NormParams@3", "gemv_q4_0_planar", "gemv_q4_0_planar_glu", "w x res+ norm_w y* partials* bias?", "14 kernels."} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "gemv_q8_0") {
		t.Errorf("unselected kernel listed:\n%s", out)
	}
}

func TestKernelsRefusesAPatternThatMatchesNothing(t *testing.T) {
	_, errOut, code := runKernelsCmd(t, "kernels", "gemv_iq2_xs")
	if code != 1 || !strings.Contains(errOut, `no kernel matches "gemv_iq2_xs"`) {
		t.Errorf("exit %d: %s", code, errOut)
	}
	_, errOut, code = runKernelsCmd(t, "kernels", "[")
	if code != 2 || !strings.Contains(errOut, "pattern") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

func TestKernelsStructsPrintsEveryLayout(t *testing.T) {
	out, errOut, code := runKernelsCmd(t, "kernels", "--structs")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, s := range kernels.ParamStructs() {
		if !strings.Contains(out, s.Name+" (") {
			t.Errorf("no %s in\n%s", s.Name, out)
		}
	}
	if !strings.Contains(out, "16  uint32_t  kv_len      patched: kv_len") {
		t.Errorf("AttentionParams.kv_len not shown at 16:\n%s", out)
	}
	out, _, code = runKernelsCmd(t, "kernels", "--structs", "--json")
	var ss []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &ss) != nil || len(ss) != len(kernels.ParamStructs()) {
		t.Errorf("exit %d, --structs --json:\n%s", code, out)
	}
}
