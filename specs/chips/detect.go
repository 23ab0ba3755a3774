package chips

import (
	"bufio"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Detect finds the profile of the machine it runs on, for --chip auto, and
// says what it found, one finding per line. The order of preference is an
// Apple GPU (macOS), an NVIDIA GPU (Linux), then the CPU target. Hardware
// found without a profile is named in the report and skipped.
func Detect() (Profile, string, error) { return Default().Detect() }

// Detect is the package's Detect over this catalog.
func (c *Catalog) Detect() (Profile, string, error) { return c.detect(hostProbe()) }

// probe is everything detection reads of the machine: hostProbe reads the
// real one, tests fill one with recorded output.
type probe struct {
	goos, goarch string
	numCPU       int
	sysctl       func(name string) (string, error)
	command      func(name string, args ...string) ([]byte, error)
	readFile     func(name string) ([]byte, error)
	glob         func(pattern string) ([]string, error)
	exists       func(path string) bool
	// cpuInfo reports the CPU's features from the CPUID/HWCAP bits
	// (golang.org/x/sys/cpu), where /proc/cpuinfo is not read.
	cpuInfo func() CPUInfo
}

// errNone says that a detector found nothing of its kind; detection goes on.
var errNone = errors.New("not present")

func (c *Catalog) detect(pr probe) (Profile, string, error) {
	var report []string
	detectors := []func(probe) (Profile, []string, error){c.detectApple, c.detectNVIDIA}
	for _, d := range detectors {
		p, found, err := d(pr)
		report = append(report, found...)
		if err == nil {
			return p, strings.Join(report, "\n"), nil
		}
		if !errors.Is(err, errNone) {
			report = append(report, err.Error())
		}
	}
	p, found, err := c.detectCPU(pr)
	report = append(report, found)
	return p, strings.Join(report, "\n"), err
}

// detectApple reads the brand string and the GPU core count on macOS.
func (c *Catalog) detectApple(pr probe) (Profile, []string, error) {
	if pr.goos != "darwin" {
		return Profile{}, nil, errNone
	}
	brand, err := pr.sysctl("machdep.cpu.brand_string")
	if err != nil {
		return Profile{}, []string{"sysctl machdep.cpu.brand_string: " + err.Error()}, errNone
	}
	chip, ok := strings.CutPrefix(strings.TrimSpace(brand), "Apple ")
	if !ok {
		return Profile{}, []string{fmt.Sprintf("CPU %q (sysctl machdep.cpu.brand_string): not Apple silicon", brand)}, errNone
	}
	report := []string{fmt.Sprintf("chip: Apple %s (sysctl machdep.cpu.brand_string)", chip)}

	cores, source := 0, ""
	if out, err := pr.command("ioreg", "-r", "-c", "AGXAccelerator"); err == nil {
		if n, ok := ParseIORegGPUCores(string(out)); ok {
			cores, source = n, "ioreg AGXAccelerator gpu-core-count"
		}
	}
	if cores == 0 {
		if out, err := pr.command("system_profiler", "SPDisplaysDataType"); err == nil {
			if _, n := ParseSystemProfilerGPU(string(out)); n > 0 {
				cores, source = n, "system_profiler SPDisplaysDataType"
			}
		}
	}

	var bins []Profile
	for _, p := range c.profiles {
		if p.Vendor == Apple && strings.EqualFold(p.Chip, chip) {
			bins = append(bins, p.clone())
		}
	}
	if len(bins) == 0 {
		return Profile{}, report, fmt.Errorf("no profile for Apple %s: add it to specs/chips or pass --chip", chip)
	}
	slices.SortFunc(bins, func(a, b Profile) int { return a.GPUCores - b.GPUCores })
	best := bins[len(bins)-1]
	switch {
	case cores == 0:
		report = append(report, fmt.Sprintf("GPU cores: not found (ioreg, system_profiler); assuming the top bin, %d", best.GPUCores))
	default:
		report = append(report, fmt.Sprintf("GPU cores: %d (%s)", cores, source))
		for _, b := range bins {
			if abs(b.GPUCores-cores) < abs(best.GPUCores-cores) {
				best = b
			}
		}
		if best.GPUCores != cores {
			report = append(report, fmt.Sprintf("no %d-core bin of the %s; taking the nearest, %d", cores, chip, best.GPUCores))
		}
	}
	report = append(report, fmt.Sprintf("profile: %s (%s, %s)", best.Name, best.Family, best.Metal))
	return best, report, nil
}

// nvidiaLibs are where distributions put the driver's libraries.
var nvidiaLibs = []string{
	"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
	"/usr/local/cuda/lib64", "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib",
}

// detectNVIDIA reads the driver's /proc files on Linux; the first GPU (by
// bus address) that has a profile wins.
func (c *Catalog) detectNVIDIA(pr probe) (Profile, []string, error) {
	if pr.goos != "linux" {
		return Profile{}, nil, errNone
	}
	files, _ := pr.glob("/proc/driver/nvidia/gpus/*/information")
	if len(files) == 0 {
		return Profile{}, nil, errNone
	}
	slices.Sort(files)
	var report []string
	var found *Profile
	for _, f := range files {
		data, err := pr.readFile(f)
		if err != nil {
			report = append(report, err.Error())
			continue
		}
		model, ok := ParseNVIDIAInformation(string(data))
		if !ok {
			report = append(report, f+": no Model line")
			continue
		}
		bus := filepath.Base(filepath.Dir(f))
		p, ok := c.matchNVIDIA(model)
		if !ok {
			report = append(report, fmt.Sprintf("GPU %s: %s: no profile", bus, model))
			continue
		}
		report = append(report, fmt.Sprintf("GPU %s: %s (%s) -> %s", bus, model, f, p.Name))
		if found == nil {
			found = &p
		}
	}
	lib := "driver library: libcuda.so.1 not found (the CUDA backend will need it)"
	for _, dir := range nvidiaLibs {
		if p := filepath.Join(dir, "libcuda.so.1"); pr.exists(p) {
			lib = "driver library: " + p
			break
		}
	}
	report = append(report, lib)
	if found == nil {
		return Profile{}, report, fmt.Errorf("no NVIDIA GPU here has a profile: add it to specs/chips/nvidia.yaml or pass --chip")
	}
	report = append(report, fmt.Sprintf("profile: %s (%s, %d SMs)", found.Name, found.Family, found.GPUCores))
	return *found, report, nil
}

// matchNVIDIA finds the profile whose match string is the longest substring
// of the driver's model name.
func (c *Catalog) matchNVIDIA(model string) (Profile, bool) {
	best, bestLen := -1, 0
	m := strings.ToLower(model)
	for i, p := range c.profiles {
		for _, s := range p.Match {
			if p.Vendor == NVIDIA && len(s) > bestLen && strings.Contains(m, strings.ToLower(s)) {
				best, bestLen = i, len(s)
			}
		}
	}
	if best < 0 {
		return Profile{}, false
	}
	return c.profiles[best].clone(), true
}

// detectCPU picks the CPU target of the machine, with its core count.
func (c *Catalog) detectCPU(pr probe) (Profile, string, error) {
	var info CPUInfo
	source := "cpuid"
	if data, err := pr.readFile("/proc/cpuinfo"); pr.goos == "linux" && err == nil {
		info, source = ParseCPUInfo(string(data)), "/proc/cpuinfo"
	} else {
		info = pr.cpuInfo()
	}
	isa, detail := info.ISA, info.String()+" ("+source+")"
	if isa == "" {
		return Profile{}, "CPU: " + detail, fmt.Errorf("%w: no CPU target fits this machine (%s): the CPU backend needs AVX2 or NEON", ErrUnknownChip, detail)
	}
	for _, p := range c.profiles {
		if p.Kind == CPU && p.ISA == isa {
			p = p.clone()
			p.CPUCores = pr.numCPU
			return p, fmt.Sprintf("CPU: %s\ncores: %d (runtime.NumCPU)\nprofile: %s", detail, p.CPUCores, p), nil
		}
	}
	return Profile{}, "CPU: " + detail, fmt.Errorf("%w: no CPU profile has isa %s", ErrUnknownChip, isa)
}

var reIORegCores = regexp.MustCompile(`"gpu-core-count"\s*=\s*(\d+)`)

// ParseIORegGPUCores reads the GPU core count from the output of
// `ioreg -r -c AGXAccelerator` ("gpu-core-count" = 18).
func ParseIORegGPUCores(out string) (int, bool) {
	m := reIORegCores.FindStringSubmatch(out)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil && n > 0
}

// ParseSystemProfilerGPU reads the chip ("Apple M3 Pro") and the GPU core
// count from `system_profiler SPDisplaysDataType`.
func ParseSystemProfilerGPU(out string) (chip string, cores int) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Chipset Model":
			if chip == "" {
				chip = v
			}
		case "Total Number of Cores":
			if cores == 0 {
				cores, _ = strconv.Atoi(v)
			}
		}
	}
	return chip, cores
}

// ParseNVIDIAInformation reads the model name from the driver's
// /proc/driver/nvidia/gpus/BUS/information ("Model: NVIDIA H100 PCIe").
func ParseNVIDIAInformation(text string) (string, bool) {
	for line := range strings.Lines(text) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "Model" {
			v = strings.TrimSpace(v)
			return v, v != ""
		}
	}
	return "", false
}

// CPUInfo is what ParseCPUInfo found.
type CPUInfo struct {
	Arch  string // amd64 or arm64, from the shape of the file
	Model string // the "model name" line; arm64 kernels print none
	ISA   string // the best CPU target: avx512, avx2, neon, or "" for none
	// Missing names the features that kept the next better target away
	// ("avx512bw"), for the report.
	Missing []string
}

func (c CPUInfo) String() string {
	s := c.Arch
	if c.Model != "" {
		s = c.Model + ", " + s
	}
	switch {
	case c.ISA == "":
		s += ", no supported SIMD level"
	default:
		s += ", " + c.ISA
	}
	if len(c.Missing) > 0 {
		s += " (lacks " + strings.Join(c.Missing, " ") + ")"
	}
	return s
}

// The features each x86 target needs, as /proc/cpuinfo spells them: the
// x86-64-v3 and -v4 levels, less the features every such CPU has anyway.
var (
	avx2Needs   = []string{"avx2", "fma", "f16c"}
	avx512Needs = []string{"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
)

// selectISA picks the best CPU target an architecture with the features
// has supports, and names what the next better one lacks.
func selectISA(arch string, has func(feature string) bool) (isa string, missing []string) {
	lacks := func(need []string) []string {
		var out []string
		for _, f := range need {
			if !has(f) {
				out = append(out, f)
			}
		}
		return out
	}
	switch arch {
	case "amd64":
		if m := lacks(avx2Needs); len(m) > 0 {
			return "", m
		}
		if m := lacks(avx512Needs); len(m) > 0 {
			return "avx2", m
		}
		return "avx512", nil
	case "arm64":
		if has("asimd") {
			return "neon", nil
		}
		return "", []string{"asimd"}
	}
	return "", nil
}

// ParseCPUInfo reads the text of Linux's /proc/cpuinfo: the first
// processor's "flags" (x86) or "Features" (arm64) line.
func ParseCPUInfo(text string) CPUInfo {
	var info CPUInfo
	var flags []string
	for line := range strings.Lines(text) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case k == "model name" && info.Model == "":
			info.Model = v
		case k == "flags" && flags == nil:
			info.Arch, flags = "amd64", strings.Fields(v)
		case k == "Features" && flags == nil:
			info.Arch, flags = "arm64", strings.Fields(v)
		}
	}
	info.ISA, info.Missing = selectISA(info.Arch, func(f string) bool { return slices.Contains(flags, f) })
	if info.Arch == "" {
		info.Arch = "unknown architecture"
	}
	return info
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
