package chips

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Vendor says who makes a target and so which backend runs its plans.
type Vendor string

const (
	Apple   Vendor = "apple"   // Apple silicon GPU, Metal backend
	NVIDIA  Vendor = "nvidia"  // NVIDIA GPU, CUDA backend (to come)
	Generic Vendor = "generic" // a CPU instruction-set level, CPU backend
)

// Kind is the kind of processor a profile describes. It follows from the
// vendor (apple and nvidia profiles are GPUs, generic ones CPUs), so the
// YAML does not say it.
type Kind string

const (
	GPU Kind = "gpu"
	CPU Kind = "cpu"
)

// Profile is what the compiler knows about one target: facts, not policy
// (Tuning derives the policy). Profiles come from specs/chips/*.yaml.
//
// Fields that differ by kind: GPU profiles have GPUCores (Apple GPU cores,
// NVIDIA SMs), CPU profiles have ISA and Arch and get CPUCores when a name is
// resolved (0 in the catalog means "not chosen yet").
type Profile struct {
	Name    string   `yaml:"name" json:"name"`
	Aliases []string `yaml:"aliases" json:"aliases,omitempty"`
	Vendor  Vendor   `yaml:"vendor" json:"vendor"`
	Kind    Kind     `yaml:"-" json:"kind"`
	// Chip is the product as the machine names it, without the vendor:
	// "M3 Pro" (macOS reports "Apple M3 Pro"), "H100 SXM".
	Chip string `yaml:"chip" json:"chip,omitempty"`
	// Match lists substrings of the model name an NVIDIA driver reports
	// ("NVIDIA H100 80GB HBM3") that identify this profile; the longest wins.
	Match []string `yaml:"match" json:"-"`

	GPUCores int    `yaml:"gpu_cores" json:"gpu_cores"`
	CPUCores int    `yaml:"-" json:"cpu_cores"`
	ISA      string `yaml:"isa" json:"isa,omitempty"`   // cpu: avx2 | avx512 | neon
	Arch     string `yaml:"arch" json:"arch,omitempty"` // cpu: amd64 | arm64
	// Family is the GPU family (apple7, apple8, apple9; sm90) or, for a CPU,
	// the instruction-set level (x86-64-v3, x86-64-v4, armv8-a).
	Family string `yaml:"family" json:"family"`
	Metal  string `yaml:"metal" json:"metal,omitempty"` // Metal feature family: metal3

	// BandwidthGBs is the peak memory bandwidth in GB/s (10^9 bytes/s), the
	// vendor's figure; 0 when unknown (CPU targets).
	BandwidthGBs float64 `yaml:"bandwidth_gbs" json:"bandwidth_gbs"`
	// SLC is the last cache level every core shares: Apple's system-level
	// cache, NVIDIA's L2. 0 when unknown.
	SLC Bytes `yaml:"slc" json:"slc_bytes"`
	// MemoryGB lists the memory sizes sold with the chip, in GB.
	MemoryGB []int `yaml:"memory_gb" json:"memory_gb,omitempty"`

	// Unreleased marks a profile of a chip that was never sold (the engine's
	// M4 Ultra example); Note says why it is here.
	Unreleased bool   `yaml:"unreleased" json:"unreleased,omitempty"`
	Note       string `yaml:"note" json:"note,omitempty"`

	// Pos is file:line:col of the profile's entry, for error messages.
	Pos string `yaml:"-" json:"-"`
}

// String is the name that Resolve turns back into this profile: the name,
// with ":cores" for a CPU target whose core count was chosen.
func (p Profile) String() string {
	if p.Kind == CPU && p.CPUCores > 0 {
		return p.Name + ":" + strconv.Itoa(p.CPUCores)
	}
	return p.Name
}

// Title is a human description: "Apple M3 Pro, 18-core GPU".
func (p Profile) Title() string {
	switch p.Vendor {
	case Apple:
		return fmt.Sprintf("Apple %s, %d-core GPU", p.Chip, p.GPUCores)
	case NVIDIA:
		return fmt.Sprintf("NVIDIA %s, %d SMs", p.Chip, p.GPUCores)
	}
	s := "CPU " + p.Family + " (" + p.ISA + ")"
	if p.CPUCores > 0 {
		s += fmt.Sprintf(", %d cores", p.CPUCores)
	}
	return s
}

// Tuning derives the tuning values of p by the rules in rules.go.
func (p Profile) Tuning() Tuning { return Derive(p) }

// clone returns p with its slices copied, so that callers cannot change
// the catalog through them.
func (p Profile) clone() Profile {
	p.Aliases = append([]string(nil), p.Aliases...)
	p.Match = append([]string(nil), p.Match...)
	p.MemoryGB = append([]int(nil), p.MemoryGB...)
	return p
}

// Bytes is a size in bytes. In YAML it is written as an integer or with a
// binary unit: 8MiB, 50 MiB, 512KiB, 1GiB. Decimal units (MB) are refused
// because vendors' "MB" for caches means MiB and the ambiguity is not worth
// keeping.
type Bytes int64

const (
	KiB Bytes = 1 << 10
	MiB Bytes = 1 << 20
	GiB Bytes = 1 << 30
)

// String writes b with the largest binary unit that divides it.
func (b Bytes) String() string {
	switch {
	case b == 0:
		return "0"
	case b%GiB == 0:
		return strconv.FormatInt(int64(b/GiB), 10) + " GiB"
	case b%MiB == 0:
		return strconv.FormatInt(int64(b/MiB), 10) + " MiB"
	case b%KiB == 0:
		return strconv.FormatInt(int64(b/KiB), 10) + " KiB"
	}
	return strconv.FormatInt(int64(b), 10) + " B"
}

// ParseBytes reads "24MiB", "24 MiB", "512KiB", "1GiB" or a plain integer.
func ParseBytes(s string) (Bytes, error) {
	t := strings.TrimSpace(s)
	unit := Bytes(1)
	for _, u := range []struct {
		suffix string
		size   Bytes
	}{{"KiB", KiB}, {"MiB", MiB}, {"GiB", GiB}} {
		if strings.HasSuffix(t, u.suffix) {
			unit, t = u.size, strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > int64(1<<50/unit) {
		return 0, fmt.Errorf("%q is not a size (write 8MiB, 512KiB or a byte count)", s)
	}
	return Bytes(n) * unit, nil
}

// UnmarshalYAML reads a size; an error carries the line, as yaml.v3's own do.
func (b *Bytes) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: a size must be a scalar", n.Line)}}
	}
	v, err := ParseBytes(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	*b = v
	return nil
}
