package chips

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

// Recorded outputs, trimmed to the lines that matter plus some around them.
const (
	ioregM3Pro = `+-o AGXAcceleratorG15X  <class AGXAcceleratorG15X, id 0x1000003e1, registered, matched, active, busy 0 (0 ms), retain 46>
    {
      "IOClass" = "AGXAcceleratorG15X"
      "gpu-core-count" = 18
      "CFBundleIdentifier" = "com.apple.AGXG15X"
      "model" = "Apple M3 Pro"
    }
`
	systemProfilerM1 = `Graphics/Displays:

    Apple M1:

      Chipset Model: Apple M1
      Type: GPU
      Bus: Built-In
      Total Number of Cores: 7
      Vendor: Apple (0x106b)
      Metal Support: Metal 3
`
	nvidiaH100SXM  = "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 154\nGPU UUID: \t GPU-5a4f1c1e\nBus Type: \t PCIe\nBus Location: \t 0000:1a:00.0\n"
	nvidiaH100PCIe = "Model: \t\t NVIDIA H100 PCIe\nIRQ:   \t\t 154\n"
	nvidiaRTX4090  = "Model: \t\t NVIDIA GeForce RTX 4090\nIRQ:   \t\t 154\n"
	// Recorded on the project's H200 device machine (driver 580).
	nvidiaH200 = "Model: \t\t NVIDIA H200\nIRQ:   \t\t 41\nGPU UUID: \t GPU-8248db9c-6528-33e5-e270-a0365cef82d9\n" +
		"Video BIOS: \t 96.00.a5.00.1a\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\n" +
		"Bus Location: \t 0000:00:06.0\nDevice Minor: \t 0\nGPU Firmware: \t 580.159.04\nGPU Excluded:\t No\n"

	cpuinfoSapphireRapids = `processor	: 0
vendor_id	: GenuineIntel
model name	: Intel(R) Xeon(R) Platinum 8480+
flags		: fpu vme de pse tsc msr pae mce cx8 apic sse sse2 ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt aes xsave avx f16c rdrand avx2 bmi1 bmi2 avx512f avx512dq avx512cd avx512bw avx512vl avx512_bf16 amx_tile

processor	: 1
model name	: Intel(R) Xeon(R) Platinum 8480+
flags		: fpu
`
	cpuinfoZen3 = `processor	: 0
vendor_id	: AuthenticAMD
model name	: AMD Ryzen 9 5950X 16-Core Processor
flags		: fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 bmi1 bmi2 sha_ni
`
	cpuinfoSandyBridge = `processor	: 0
model name	: Intel(R) Core(TM) i7-2600K CPU @ 3.40GHz
flags		: fpu sse sse2 ssse3 sse4_1 sse4_2 avx
`
	cpuinfoGraviton = `processor	: 0
BogoMIPS	: 243.75
Features	: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp
CPU implementer	: 0x41
CPU part	: 0xd0c
`
)

func TestParseIORegGPUCores(t *testing.T) {
	if n, ok := ParseIORegGPUCores(ioregM3Pro); !ok || n != 18 {
		t.Errorf("got %d, %v; want 18", n, ok)
	}
	if _, ok := ParseIORegGPUCores(`"gpu-core-count" = 0`); ok {
		t.Error("a zero core count was accepted")
	}
	if _, ok := ParseIORegGPUCores("no accelerator"); ok {
		t.Error("found cores in text without them")
	}
}

func TestParseSystemProfilerGPU(t *testing.T) {
	if chip, n := ParseSystemProfilerGPU(systemProfilerM1); chip != "Apple M1" || n != 7 {
		t.Errorf("got %q, %d; want Apple M1, 7", chip, n)
	}
}

func TestParseNVIDIAInformation(t *testing.T) {
	if m, ok := ParseNVIDIAInformation(nvidiaH100SXM); !ok || m != "NVIDIA H100 80GB HBM3" {
		t.Errorf("got %q, %v", m, ok)
	}
	if _, ok := ParseNVIDIAInformation("IRQ: 1\n"); ok {
		t.Error("found a model in text without one")
	}
}

func TestParseCPUInfo(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       CPUInfo
	}{
		{"AVX-512 with every level-4 feature", cpuinfoSapphireRapids,
			CPUInfo{Arch: "amd64", Model: "Intel(R) Xeon(R) Platinum 8480+", ISA: "avx512"}},
		{"AVX2 without AVX-512", cpuinfoZen3,
			CPUInfo{Arch: "amd64", Model: "AMD Ryzen 9 5950X 16-Core Processor", ISA: "avx2",
				Missing: []string{"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}}},
		{"AVX without AVX2 has no target", cpuinfoSandyBridge,
			CPUInfo{Arch: "amd64", Model: "Intel(R) Core(TM) i7-2600K CPU @ 3.40GHz", Missing: []string{"avx2", "fma", "f16c"}}},
		{"arm64 with Advanced SIMD", cpuinfoGraviton,
			CPUInfo{Arch: "arm64", ISA: "neon"}},
		{"a file without flags", "processor : 0\n",
			CPUInfo{Arch: "unknown architecture"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseCPUInfo(tc.text)
			if got.String() != tc.want.String() {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// fakeProbe is a machine made of recorded outputs.
type fakeProbe struct {
	goos     string
	sysctl   map[string]string
	commands map[string]string // "ioreg -r -c AGXAccelerator" → output
	files    map[string]string
	libs     []string
	cpu      CPUInfo
}

func (f fakeProbe) probe() probe {
	return probe{
		goos: f.goos, goarch: "test", numCPU: 12,
		sysctl: func(name string) (string, error) {
			if v, ok := f.sysctl[name]; ok {
				return v, nil
			}
			return "", errors.New("unknown oid")
		},
		command: func(name string, args ...string) ([]byte, error) {
			if v, ok := f.commands[strings.Join(append([]string{name}, args...), " ")]; ok {
				return []byte(v), nil
			}
			return nil, errors.New("exit status 1")
		},
		readFile: func(name string) ([]byte, error) {
			if v, ok := f.files[name]; ok {
				return []byte(v), nil
			}
			return nil, fs.ErrNotExist
		},
		glob: func(pattern string) ([]string, error) {
			var out []string
			for name := range f.files {
				if strings.HasPrefix(name, "/proc/driver/nvidia/gpus/") && strings.HasSuffix(name, "/information") {
					out = append(out, name)
				}
			}
			return out, nil
		},
		exists:  func(p string) bool { return strings.Contains(strings.Join(f.libs, "\n"), p) },
		cpuInfo: func() CPUInfo { return f.cpu },
	}
}

func TestDetectFindsTheMachine(t *testing.T) {
	neon := CPUInfo{Arch: "arm64", ISA: "neon"}
	for _, tc := range []struct {
		name    string
		machine fakeProbe
		want    string   // Profile.String()
		report  []string // substrings of the report, in order
	}{
		{"an M3 Pro with 18 GPU cores, by ioreg", fakeProbe{goos: "darwin",
			sysctl:   map[string]string{"machdep.cpu.brand_string": "Apple M3 Pro"},
			commands: map[string]string{"ioreg -r -c AGXAccelerator": ioregM3Pro}, cpu: neon},
			"m3-pro-18", []string{"chip: Apple M3 Pro (sysctl", "GPU cores: 18 (ioreg", "profile: m3-pro-18 (apple9, metal3)"}},
		{"an M1 with 7 GPU cores, by system_profiler when ioreg fails", fakeProbe{goos: "darwin",
			sysctl:   map[string]string{"machdep.cpu.brand_string": "Apple M1"},
			commands: map[string]string{"system_profiler SPDisplaysDataType": systemProfilerM1}, cpu: neon},
			"m1-7", []string{"GPU cores: 7 (system_profiler", "profile: m1-7"}},
		{"an M4 Max whose core count cannot be read takes the top bin", fakeProbe{goos: "darwin",
			sysctl: map[string]string{"machdep.cpu.brand_string": "Apple M4 Max"}, cpu: neon},
			"m4-max-40", []string{"GPU cores: not found", "assuming the top bin, 40", "profile: m4-max-40"}},
		{"an unknown bin takes the nearest", fakeProbe{goos: "darwin",
			sysctl:   map[string]string{"machdep.cpu.brand_string": "Apple M2 Max"},
			commands: map[string]string{"ioreg -r -c AGXAccelerator": `"gpu-core-count" = 36`}, cpu: neon},
			"m2-max-38", []string{"no 36-core bin of the M2 Max; taking the nearest, 38"}},
		{"an Apple chip without a profile falls back to the CPU and says so", fakeProbe{goos: "darwin",
			sysctl:   map[string]string{"machdep.cpu.brand_string": "Apple M9 Pro"},
			commands: map[string]string{"ioreg -r -c AGXAccelerator": `"gpu-core-count" = 24`}, cpu: neon},
			"cpu-neon:12", []string{"chip: Apple M9 Pro", "no profile for Apple M9 Pro", "CPU: arm64, neon (cpuid)", "cores: 12", "profile: cpu-neon:12"}},
		{"an Intel Mac is a CPU target", fakeProbe{goos: "darwin",
			sysctl: map[string]string{"machdep.cpu.brand_string": "Intel(R) Core(TM) i9-9980HK CPU @ 2.40GHz"},
			cpu:    CPUInfo{Arch: "amd64", ISA: "avx2"}},
			"cpu-avx2:12", []string{"not Apple silicon", "profile: cpu-avx2:12"}},
		{"an H100 SXM with its driver library", fakeProbe{goos: "linux",
			files: map[string]string{"/proc/driver/nvidia/gpus/0000:1a:00.0/information": nvidiaH100SXM, "/proc/cpuinfo": cpuinfoSapphireRapids},
			libs:  []string{"/usr/lib/x86_64-linux-gnu/libcuda.so.1"}},
			"h100-sxm", []string{"GPU 0000:1a:00.0: NVIDIA H100 80GB HBM3", "-> h100-sxm", "driver library: /usr/lib/x86_64-linux-gnu/libcuda.so.1", "profile: h100-sxm (sm90, 132 SMs)"}},
		{"an H200 as its driver reports it, with the library where the container runtime puts it", fakeProbe{goos: "linux",
			files: map[string]string{"/proc/driver/nvidia/gpus/0000:00:06.0/information": nvidiaH200, "/proc/cpuinfo": cpuinfoSapphireRapids},
			libs:  []string{"/usr/local/nvidia/lib64/libcuda.so.1"}},
			"h200-sxm", []string{"GPU 0000:00:06.0: NVIDIA H200 (", "-> h200-sxm", "driver library: /usr/local/nvidia/lib64/libcuda.so.1", "profile: h200-sxm"}},
		{"an H100 PCIe is told from an SXM", fakeProbe{goos: "linux",
			files: map[string]string{"/proc/driver/nvidia/gpus/0000:3b:00.0/information": nvidiaH100PCIe, "/proc/cpuinfo": cpuinfoZen3}},
			"h100-pcie", []string{"NVIDIA H100 PCIe", "libcuda.so.1 not found", "profile: h100-pcie"}},
		{"the first GPU with a profile wins", fakeProbe{goos: "linux",
			files: map[string]string{
				"/proc/driver/nvidia/gpus/0000:01:00.0/information": nvidiaRTX4090,
				"/proc/driver/nvidia/gpus/0000:02:00.0/information": nvidiaH100PCIe,
				"/proc/driver/nvidia/gpus/0000:03:00.0/information": nvidiaH100SXM,
				"/proc/cpuinfo": cpuinfoZen3}},
			"h100-pcie", []string{"GPU 0000:01:00.0: NVIDIA GeForce RTX 4090: no profile", "GPU 0000:02:00.0", "GPU 0000:03:00.0", "profile: h100-pcie"}},
		{"an NVIDIA GPU without a profile falls back to the CPU", fakeProbe{goos: "linux",
			files: map[string]string{"/proc/driver/nvidia/gpus/0000:01:00.0/information": nvidiaRTX4090, "/proc/cpuinfo": cpuinfoZen3}},
			"cpu-avx2:12", []string{"RTX 4090: no profile", "no NVIDIA GPU here has a profile", "CPU: AMD Ryzen 9 5950X", "avx2", "(/proc/cpuinfo)", "profile: cpu-avx2:12"}},
		{"a Linux server with AVX-512", fakeProbe{goos: "linux", files: map[string]string{"/proc/cpuinfo": cpuinfoSapphireRapids}},
			"cpu-avx512:12", []string{"Intel(R) Xeon(R) Platinum 8480+, amd64, avx512 (/proc/cpuinfo)", "profile: cpu-avx512:12"}},
		{"a Linux arm64 server", fakeProbe{goos: "linux", files: map[string]string{"/proc/cpuinfo": cpuinfoGraviton}},
			"cpu-neon:12", []string{"arm64, neon (/proc/cpuinfo)"}},
		{"Windows reads CPUID", fakeProbe{goos: "windows", cpu: CPUInfo{Arch: "amd64", ISA: "avx2"}},
			"cpu-avx2:12", []string{"amd64, avx2 (cpuid)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, report, err := Default().detect(tc.machine.probe())
			if err != nil {
				t.Fatalf("%v\nreport:\n%s", err, report)
			}
			if p.String() != tc.want {
				t.Errorf("detected %s, want %s\nreport:\n%s", p, tc.want, report)
			}
			rest := report
			for _, w := range tc.report {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("report\n%s\nlacks %q (in order)", report, w)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestDetectFailsOnACPUWithoutATarget(t *testing.T) {
	m := fakeProbe{goos: "linux", files: map[string]string{"/proc/cpuinfo": cpuinfoSandyBridge}}
	_, report, err := Default().detect(m.probe())
	if !errors.Is(err, ErrUnknownChip) || !strings.Contains(err.Error(), "lacks avx2 fma f16c") {
		t.Errorf("got %v, want ErrUnknownChip naming the missing features", err)
	}
	if !strings.Contains(report, "i7-2600K") {
		t.Errorf("report %q does not name the CPU", report)
	}
}
