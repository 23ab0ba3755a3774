package chips

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/sys/cpu"
)

// hostProbe reads the machine the process runs on.
func hostProbe() probe {
	return probe{
		goos:     runtime.GOOS,
		goarch:   runtime.GOARCH,
		numCPU:   runtime.NumCPU(),
		sysctl:   sysctl,
		command:  runCommand,
		readFile: os.ReadFile,
		glob:     filepath.Glob,
		exists: func(p string) bool {
			_, err := os.Stat(p)
			return err == nil
		},
		cpuInfo: hostCPUInfo,
	}
}

// runCommand runs a read-only system tool (ioreg, system_profiler) with a
// time limit: detection must not hang a compile.
func runCommand(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, name, args...).Output()
}

// hostCPUInfo reads the CPUID (x86) or HWCAP (arm64) bits through
// golang.org/x/sys/cpu: no cgo, no files.
func hostCPUInfo() CPUInfo {
	flags := map[string]bool{
		"avx2": cpu.X86.HasAVX2, "fma": cpu.X86.HasFMA, "f16c": cpu.X86.HasF16C,
		"avx512f": cpu.X86.HasAVX512F, "avx512bw": cpu.X86.HasAVX512BW, "avx512cd": cpu.X86.HasAVX512CD,
		"avx512dq": cpu.X86.HasAVX512DQ, "avx512vl": cpu.X86.HasAVX512VL,
		"asimd": runtime.GOARCH == "arm64", // every arm64 core has Advanced SIMD
	}
	info := CPUInfo{Arch: runtime.GOARCH}
	info.ISA, info.Missing = selectISA(runtime.GOARCH, func(f string) bool { return flags[f] })
	return info
}
