package chips

import (
	"strings"
	"testing"
)

// A rule that no profile of the catalog reaches is dead weight or a bug in
// an earlier rule's condition.
func TestEveryRuleDecidesForSomeProfile(t *testing.T) {
	used := map[string]bool{}
	for _, p := range All() {
		_, by := Explain(p)
		for _, r := range by {
			used[r.Pos] = true
		}
	}
	for _, r := range Rules() {
		if !used[r.Pos] {
			t.Errorf("%s: rule %s when %s decides for no profile", r.Pos, r.Field, r.When.Text)
		}
	}
}

func TestTheRuleTableCheckRefusesMalformedTables(t *testing.T) {
	full := Rules()
	var noFuseAlways []Rule // fuse_weights loses its always rule
	for _, r := range full {
		if r.Field != "fuse_weights" || r.When.Text != "always" {
			noFuseAlways = append(noFuseAlways, r)
		}
	}
	for _, tc := range []struct {
		name  string
		rules []Rule
		want  string
	}{
		{"a rule after always is shadowed",
			append(append([]Rule{}, full...), rule("chain_chunk", largeGPU, 256, "")),
			"can never fire: the always rule at rules.go:"},
		{"a value of the wrong type",
			append([]Rule{rule("chain_chunk", isCPU, "16", "")}, full...),
			"rule for chain_chunk sets a string, the field is a int"},
		{"an unknown field",
			append([]Rule{rule("chain_chunks", isCPU, 16, "")}, full...),
			`unknown tuning field "chain_chunks"`},
		{"a field without an always rule",
			noFuseAlways,
			"tuning field fuse_weights has no always rule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkRules(tc.rules)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	if err := checkRules(full); err != nil {
		t.Errorf("the real table: %v", err)
	}
}

func TestExplainNamesTheRuleThatDecided(t *testing.T) {
	p, _ := Lookup("m1")
	_, by := Explain(p)
	if r := by["fuse_weights"]; r.When.Text != "always" || r.Value != false {
		t.Errorf("m1 fuse_weights decided by %+v, want the always/false rule", r)
	}
	p, _ = Lookup("m3-pro")
	_, by = Explain(p)
	if r := by["fuse_weights"]; r.When.Text != "slc >= 16 MiB" {
		t.Errorf("m3-pro fuse_weights decided by %q, want slc >= 16 MiB", r.When.Text)
	}
	if len(by) != len(tuningFields) {
		t.Errorf("%d fields decided, want %d", len(by), len(tuningFields))
	}
}

func TestGEMVVariantFollowsDtypeAndShape(t *testing.T) {
	m1, _ := Lookup("m1")
	ultra, _ := Lookup("m4-ultra")
	cpu, _ := Resolve("cpu-avx2", 4)
	for _, tc := range []struct {
		chip  Profile
		dtype string
		n, k  int
		want  GEMVVariant
	}{
		{m1, "q4_0", 4096, 4096, GEMVLargeK},   // 4096 >= 2048
		{m1, "q4_0", 4096, 1024, GEMVStandard}, // 1024 < 2048 on a small GPU
		{ultra, "q4_0", 4096, 1024, GEMVLargeK},
		{ultra, "Q4_K", 4096, 512, GEMVLargeK}, // dtype names fold case
		{ultra, "q8_0", 4096, 14336, GEMVStandard},
		{ultra, "f16", 4096, 14336, GEMVStandard},
		{m1, "q4_0", 32768, 4096, GEMVLargeK}, // N = 32768 is not above the threshold
		{m1, "q4_0", 32769, 4096, GEMVWide},
		{m1, "f16", 151936, 1024, GEMVWide}, // a Qwen LM head
		{cpu, "q4_0", 151936, 14336, GEMVStandard},
	} {
		if got := tc.chip.Tuning().GEMV(tc.dtype, tc.n, tc.k); got != tc.want {
			t.Errorf("%s GEMV(%s, N=%d, K=%d) = %s, want %s", tc.chip.Name, tc.dtype, tc.n, tc.k, got, tc.want)
		}
	}
}

func TestAttentionVariantFollowsLength(t *testing.T) {
	m1, _ := Lookup("m1")
	m4max, _ := Lookup("m4-max")
	cpu, _ := Resolve("cpu-neon", 8)
	for _, tc := range []struct {
		chip   Profile
		kvLen  int
		decode AttnVariant
	}{
		{m1, 1, AttnStandard}, {m1, 255, AttnStandard}, {m1, 256, AttnFast},
		{m1, 16383, AttnFast}, {m1, 16384, AttnParallel},
		{m4max, 4095, AttnFast}, {m4max, 4096, AttnParallel},
		{cpu, 100000, AttnStandard},
	} {
		if got := tc.chip.Tuning().DecodeAttention(tc.kvLen); got != tc.decode {
			t.Errorf("%s DecodeAttention(%d) = %s, want %s", tc.chip.Name, tc.kvLen, got, tc.decode)
		}
	}
	if m1.Tuning().PrefillAttention(63) != AttnV1 || m1.Tuning().PrefillAttention(64) != AttnV2 {
		t.Errorf("prefill attention on m1: want v1 below 64 tokens, v2 from 64")
	}
	if cpu.Tuning().PrefillAttention(4096) != AttnV1 {
		t.Errorf("prefill attention on CPU: want v1 always")
	}
}

func TestDeriveDoesNotShareSlicesWithTheTable(t *testing.T) {
	p, _ := Lookup("m1")
	a := Derive(p)
	a.LargeKTypes[0] = "changed"
	if b := Derive(p); b.LargeKTypes[0] != "q4_0" {
		t.Errorf("changing one tuning changed the rule table: %v", b.LargeKTypes)
	}
}

func TestWorkingSetShare(t *testing.T) {
	for mem, want := range map[Bytes]float64{8 * GiB: 2.0 / 3, 32 * GiB: 2.0 / 3, 36 * GiB: 0.75, 128 * GiB: 0.75} {
		if got := WorkingSetShare(mem); got != want {
			t.Errorf("WorkingSetShare(%v) = %v, want %v", mem, got, want)
		}
	}
}
