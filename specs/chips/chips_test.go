package chips

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestTheEmbeddedProfilesLoad(t *testing.T) {
	c, err := load(embedded, "specs/chips")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.All()); n != 31+3+3 {
		t.Errorf("%d profiles, want 31 Apple bins, 3 CPU targets and 3 NVIDIA GPUs", n)
	}
	for _, p := range c.All() {
		if p.Pos == "" || !strings.HasPrefix(p.Pos, "specs/chips/") {
			t.Errorf("%s: position %q, want specs/chips/FILE:LINE:COL", p.Name, p.Pos)
		}
	}
}

func TestNamesAndAliasesAreUniqueAndResolveToThemselves(t *testing.T) {
	seen := map[string]string{}
	for _, p := range All() {
		for _, n := range append([]string{p.Name}, p.Aliases...) {
			if other, dup := seen[n]; dup {
				t.Errorf("name %q used by %s and %s", n, other, p.Name)
			}
			seen[n] = p.Name
			if q, ok := Lookup(n); !ok || q.Name != p.Name {
				t.Errorf("Lookup(%q) = %q, %v; want %s", n, q.Name, ok, p.Name)
			}
		}
	}
}

// The akunu engine's example configurations, which the rules must reproduce.
func TestTheEngineExampleConfigurationsAreReproducedExactly(t *testing.T) {
	for _, tc := range []struct {
		name       string
		wantName   string
		cores      int
		slc        Bytes
		fuse       bool
		chain      int
		q4LargeK   int
		unreleased bool
	}{
		{"m1", "m1-8", 8, 8 * MiB, false, 64, 2048, false},
		{"m3-pro", "m3-pro-18", 18, 24 * MiB, true, 96, 1024, false},
		{"m4-ultra", "m4-ultra-64", 64, 96 * MiB, true, 128, 512, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := Lookup(tc.name)
			if !ok {
				t.Fatalf("no profile %s", tc.name)
			}
			tu := p.Tuning()
			if p.Name != tc.wantName || p.GPUCores != tc.cores || p.SLC != tc.slc || p.Unreleased != tc.unreleased {
				t.Errorf("profile %s: %d cores, SLC %v, unreleased %v; want %s: %d, %v, %v",
					p.Name, p.GPUCores, p.SLC, p.Unreleased, tc.wantName, tc.cores, tc.slc, tc.unreleased)
			}
			if tu.FuseWeights != tc.fuse || tu.ChainChunk != tc.chain || tu.Q4LargeKThreshold != tc.q4LargeK {
				t.Errorf("tuning: fuse %v, chain %d, Q4 large-K %d; want %v, %d, %d",
					tu.FuseWeights, tu.ChainChunk, tu.Q4LargeKThreshold, tc.fuse, tc.chain, tc.q4LargeK)
			}
			if tu.WideGEMVThreshold != 32768 || tu.PrefillChunk != 4096 || tu.NormTG != 1024 {
				t.Errorf("tuning: wide %d, prefill %d, norm %d; want the engine's 32768, 4096, 1024",
					tu.WideGEMVThreshold, tu.PrefillChunk, tu.NormTG)
			}
		})
	}
}

// Every Apple M1–M4 chip and GPU bin that was sold, with Apple's figures.
type appleBin struct {
	name, chip, family string
	cores              int
	bandwidth          float64
	slcMiB             Bytes
}

var appleBins = []appleBin{
	{"m1-7", "M1", "apple7", 7, 68.25, 8}, {"m1-8", "M1", "apple7", 8, 68.25, 8},
	{"m1-pro-14", "M1 Pro", "apple7", 14, 200, 24}, {"m1-pro-16", "M1 Pro", "apple7", 16, 200, 24},
	{"m1-max-24", "M1 Max", "apple7", 24, 400, 48}, {"m1-max-32", "M1 Max", "apple7", 32, 400, 48},
	{"m1-ultra-48", "M1 Ultra", "apple7", 48, 800, 96}, {"m1-ultra-64", "M1 Ultra", "apple7", 64, 800, 96},
	{"m2-8", "M2", "apple8", 8, 100, 8}, {"m2-10", "M2", "apple8", 10, 100, 8},
	{"m2-pro-16", "M2 Pro", "apple8", 16, 200, 24}, {"m2-pro-19", "M2 Pro", "apple8", 19, 200, 24},
	{"m2-max-30", "M2 Max", "apple8", 30, 400, 48}, {"m2-max-38", "M2 Max", "apple8", 38, 400, 48},
	{"m2-ultra-60", "M2 Ultra", "apple8", 60, 800, 96}, {"m2-ultra-76", "M2 Ultra", "apple8", 76, 800, 96},
	{"m3-8", "M3", "apple9", 8, 100, 8}, {"m3-10", "M3", "apple9", 10, 100, 8},
	{"m3-pro-14", "M3 Pro", "apple9", 14, 150, 24}, {"m3-pro-18", "M3 Pro", "apple9", 18, 150, 24},
	{"m3-max-30", "M3 Max", "apple9", 30, 300, 48}, {"m3-max-40", "M3 Max", "apple9", 40, 400, 48},
	{"m3-ultra-60", "M3 Ultra", "apple9", 60, 819, 96}, {"m3-ultra-80", "M3 Ultra", "apple9", 80, 819, 96},
	{"m4-8", "M4", "apple9", 8, 120, 8}, {"m4-10", "M4", "apple9", 10, 120, 8},
	{"m4-pro-16", "M4 Pro", "apple9", 16, 273, 24}, {"m4-pro-20", "M4 Pro", "apple9", 20, 273, 24},
	{"m4-max-32", "M4 Max", "apple9", 32, 410, 48}, {"m4-max-40", "M4 Max", "apple9", 40, 546, 48},
}

func TestEveryAppleChipAndBinSoldIsPresent(t *testing.T) {
	for _, b := range appleBins {
		p, ok := Lookup(b.name)
		switch {
		case !ok:
			t.Errorf("%s: missing", b.name)
		case p.Chip != b.chip || p.Family != b.family || p.GPUCores != b.cores ||
			p.BandwidthGBs != b.bandwidth || p.SLC != b.slcMiB*MiB || p.Metal != "metal3" || p.Unreleased:
			t.Errorf("%s: %s %s %d cores %v GB/s SLC %v %s unreleased=%v; want %s %s %d cores %v GB/s SLC %v MiB metal3",
				b.name, p.Chip, p.Family, p.GPUCores, p.BandwidthGBs, p.SLC, p.Metal, p.Unreleased,
				b.chip, b.family, b.cores, b.bandwidth, b.slcMiB)
		}
	}
	// Nothing else from Apple but the engine's hypothetical M4 Ultra.
	for _, p := range All() {
		if p.Vendor == Apple && p.Name != "m4-ultra-64" &&
			!slices.ContainsFunc(appleBins, func(b appleBin) bool { return b.name == p.Name }) {
			t.Errorf("%s: an Apple profile the test does not know", p.Name)
		}
	}
}

func TestTheBareChipNameIsAnAliasOfTheTopBin(t *testing.T) {
	c := Default()
	for _, p := range c.All() {
		if p.Vendor != Apple {
			continue
		}
		bins := c.Bins(p)
		top := bins[len(bins)-1]
		if q, ok := Lookup(p.Chip); !ok || q.Name != top.Name {
			t.Errorf("Lookup(%q) = %s, want the top bin %s", p.Chip, q.Name, top.Name)
		}
	}
}

func TestEveryBinOfAChipDerivesTheSameTuning(t *testing.T) {
	c := Default()
	for _, p := range c.All() {
		for _, b := range c.Bins(p) {
			if a, z := Derive(p), Derive(b); !slices.Equal(a.LargeKTypes, z.LargeKTypes) ||
				a.FuseWeights != z.FuseWeights || a.ChainChunk != z.ChainChunk ||
				a.Q4LargeKThreshold != z.Q4LargeKThreshold || a.AttnDecodeParallelKV != z.AttnDecodeParallelKV {
				t.Errorf("%s and %s are bins of one chip but tune differently:\n%+v\n%+v", p.Name, b.Name, a, z)
			}
		}
	}
}

func TestTheCPUAndNVIDIATargetsArePresent(t *testing.T) {
	for _, tc := range []struct {
		name, isa, arch string
		sms             int
		bandwidth       float64
		slc             Bytes
	}{
		{name: "cpu-avx2", isa: "avx2", arch: "amd64"},
		{name: "cpu-avx512", isa: "avx512", arch: "amd64"},
		{name: "cpu-neon", isa: "neon", arch: "arm64"},
		{name: "h100", sms: 132, bandwidth: 3350, slc: 50 * MiB},
		{name: "h200", sms: 132, bandwidth: 4800, slc: 50 * MiB},
	} {
		p, ok := Lookup(tc.name)
		if !ok {
			t.Errorf("%s: missing", tc.name)
			continue
		}
		if p.ISA != tc.isa || p.Arch != tc.arch || p.GPUCores != tc.sms || p.BandwidthGBs != tc.bandwidth || p.SLC != tc.slc {
			t.Errorf("%s: %+v", tc.name, p)
		}
	}
}

func TestParseFileRejectsBadProfiles(t *testing.T) {
	const good = `profiles:
  - name: m9-10
    vendor: apple
    chip: M9
    family: apple12
    metal: metal3
    gpu_cores: 10
    bandwidth_gbs: 100
    slc: 8MiB
`
	if _, err := ParseFile("good.yaml", []byte(good)); err != nil {
		t.Fatalf("the base case must parse: %v", err)
	}
	for _, tc := range []struct {
		name, yaml string
		want       []string // substrings of the error, in order
	}{
		{"an unknown field is named with its position and a suggestion",
			strings.Replace(good, "slc:", "slcc:", 1),
			[]string{`bad.yaml:9:5: unknown field "slcc" (did you mean slc?)`}},
		{"a missing field is named at its profile",
			strings.Replace(good, "    gpu_cores: 10\n", "", 1),
			[]string{"bad.yaml:2:5: missing field gpu_cores"}},
		{"several problems are reported together",
			strings.Replace(strings.Replace(good, "    metal: metal3\n", "", 1), "vendor: apple", "vendor: apple\n    isa: avx2", 1),
			[]string{"bad.yaml:2:5: missing field metal", "bad.yaml:4:10: isa does not apply to a GPU"}},
		{"a size without a binary unit is refused",
			strings.Replace(good, "8MiB", "8MB", 1),
			[]string{`bad.yaml:9: "8MB" is not a size`}},
		{"a wrongly typed value is refused",
			strings.Replace(good, "gpu_cores: 10", "gpu_cores: ten", 1),
			[]string{"bad.yaml:7: cannot unmarshal !!str `ten` into int"}},
		{"an unknown vendor is refused",
			strings.Replace(good, "vendor: apple", "vendor: qualcomm", 1),
			[]string{`bad.yaml:3:13: vendor "qualcomm": want apple, nvidia or generic`}},
		{"an Apple name must follow <chip>-<cores>",
			strings.Replace(good, "name: m9-10", "name: m9-ten", 1),
			[]string{`bad.yaml:2:11: name "m9-ten": an Apple profile is named <chip>-<gpu cores>: m9-10`}},
		{"an Apple family must be appleN",
			strings.Replace(good, "apple12", "metal3", 1),
			[]string{`bad.yaml:5:13: family "metal3"`}},
		{"an unreleased chip needs a note",
			good + "    unreleased: true\n",
			[]string{"bad.yaml:10:17: an unreleased profile needs a note"}},
		{"a CPU target has no GPU cores",
			"profiles:\n  - name: cpu-x\n    vendor: generic\n    isa: avx2\n    arch: amd64\n    family: x86-64-v3\n    gpu_cores: 4\n",
			[]string{"bad.yaml:7:16: gpu_cores does not apply to a CPU target"}},
		{"a CPU target's isa implies its arch",
			"profiles:\n  - name: cpu-x\n    vendor: generic\n    isa: neon\n    arch: amd64\n    family: armv8-a\n",
			[]string{`isa neon implies arch arm64, not "amd64"`}},
		{"an NVIDIA GPU needs match strings",
			"profiles:\n  - name: b200\n    vendor: nvidia\n    chip: B200\n    family: sm100\n    gpu_cores: 148\n    bandwidth_gbs: 8000\n    slc: 126MiB\n",
			[]string{"bad.yaml:2:5: missing field match"}},
		{"YAML syntax errors keep their line",
			"profiles:\n  - name: [\n",
			[]string{"bad.yaml:2: did not find expected node content"}},
		{"an empty file is refused",
			"# nothing\n",
			[]string{"bad.yaml: empty file"}},
		{"a file without profiles is refused",
			"profiles: []\n",
			[]string{"bad.yaml:1:1: want a non-empty profiles: list"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFile("bad.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrInvalid) && !strings.Contains(tc.name, "syntax") {
				t.Errorf("%v does not wrap ErrInvalid", err)
			}
			msg := err.Error()
			for _, w := range tc.want {
				i := strings.Index(msg, w)
				if i < 0 {
					t.Fatalf("error\n%s\nlacks %q", msg, w)
				}
				msg = msg[i+len(w):]
			}
		})
	}
}

func TestLoadRejectsANameUsedTwice(t *testing.T) {
	one := "profiles:\n  - name: cpu-a\n    aliases: [fast]\n    vendor: generic\n    isa: avx2\n    arch: amd64\n    family: x86-64-v3\n"
	two := strings.NewReplacer("cpu-a", "cpu-b").Replace(one)
	_, err := Load(fstest.MapFS{"a.yaml": {Data: []byte(one)}, "b.yaml": {Data: []byte(two)}})
	want := `b.yaml:2:5: invalid chip profile: name "fast" already used by cpu-a (a.yaml:2:5)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]Bytes{"8MiB": 8 * MiB, "50 MiB": 50 * MiB, "512KiB": 512 * KiB, "1GiB": GiB, "4096": 4096} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"8MB", "-1MiB", "MiB", "1.5MiB", "99999999999GiB"} {
		if _, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q): no error", in)
		}
	}
}
