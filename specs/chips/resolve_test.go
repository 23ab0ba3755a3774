package chips

import (
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestResolveAcceptsNamesAliasesBinsAndCores(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cores  int
		want   string // Profile.String()
		wantCP int    // CPU cores
	}{
		{"m4-pro-20", 0, "m4-pro-20", 0},
		{"m4-pro", 0, "m4-pro-20", 0},
		{"Apple M4 Pro", 0, "m4-pro-20", 0},
		{"M4_PRO", 0, "m4-pro-20", 0},
		{"m4-pro:16", 0, "m4-pro-16", 0},
		{"m4-pro", 16, "m4-pro-16", 0},
		{"m4-pro-20", 16, "m4-pro-16", 0},
		{"m4-pro:20", 20, "m4-pro-20", 0},
		{"cpu-avx2:16", 0, "cpu-avx2:16", 16},
		{"cpu-avx2", 12, "cpu-avx2:12", 12},
		{"x86-64-v4", 8, "cpu-avx512:8", 8},
		{"cpu-neon", 0, "cpu-neon:" + strconv.Itoa(runtime.NumCPU()), runtime.NumCPU()},
		{"h100", 0, "h100-sxm", 0},
		{"NVIDIA H200", 0, "h200-sxm", 0},
	} {
		p, err := Resolve(tc.name, tc.cores)
		if err != nil {
			t.Errorf("Resolve(%q, %d): %v", tc.name, tc.cores, err)
			continue
		}
		if p.String() != tc.want || p.CPUCores != tc.wantCP {
			t.Errorf("Resolve(%q, %d) = %s with %d CPU cores, want %s with %d", tc.name, tc.cores, p, p.CPUCores, tc.want, tc.wantCP)
		}
		// What String gives back resolves to the same target.
		if q, err := Resolve(p.String(), 0); err != nil || q.String() != p.String() {
			t.Errorf("Resolve(%q) = %s, %v: String does not round-trip", p.String(), q, err)
		}
	}
}

func TestResolveExplainsWhatItRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cores   int
		want    string
		unknown bool
	}{
		{"m4-por", 0, `unknown chip "m4-por" (did you mean m4-pro?)`, true},
		{"pentium", 0, `unknown chip "pentium" (run 'akunuc chips' for the list)`, true},
		{"", 0, "empty chip name", true},
		{"m4-pro:12", 0, "M4 Pro has no 12-core bin (there are 16, 20)", true},
		{"h100", 100, "H100 SXM has no 100-core bin (there are 132)", true},
		{"cpu-avx2:x", 0, `"x" after ':' is not a core count`, false},
		{"cpu-avx2:0", 0, `"0" after ':' is not a core count`, false},
		{"cpu-avx2:8", 16, "the name says 8 cores, the option 16", false},
		{"cpu-avx2", -1, "negative core count", false},
	} {
		_, err := Resolve(tc.name, tc.cores)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Resolve(%q, %d) = %v, want %q", tc.name, tc.cores, err, tc.want)
			continue
		}
		if errors.Is(err, ErrUnknownChip) != tc.unknown {
			t.Errorf("Resolve(%q, %d): errors.Is(ErrUnknownChip) = %v, want %v", tc.name, tc.cores, !tc.unknown, tc.unknown)
		}
	}
}

func TestLookupReturnsCopies(t *testing.T) {
	p, _ := Lookup("m4-pro")
	p.Aliases[0] = "changed"
	p.MemoryGB[0] = 1
	if q, _ := Lookup("m4-pro"); q.Aliases[0] != "m4-pro" || q.MemoryGB[0] != 24 {
		t.Errorf("changing a looked-up profile changed the catalog: %+v", q)
	}
}
