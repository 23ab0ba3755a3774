//go:build linux

package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// driver holds the CUDA driver API and NVRTC entry points, resolved once
// per process. Calls go through purego.SyscallN: every argument is an
// integer or a pointer, so its float limitation never applies.
type driver struct {
	cuInit, cuDeviceGet, cuDeviceGetName, cuDeviceGetAttribute, cuDeviceTotalMem           uintptr
	cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRelease, cuCtxSetCurrent, cuCtxSynchronize uintptr
	cuMemAlloc, cuMemFree, cuMemsetD8, cuMemAllocHost, cuMemFreeHost                       uintptr
	cuMemcpyHtoD, cuMemcpyDtoH, cuMemcpyDtoD, cuMemcpyHtoDAsync, cuMemcpyDtoDAsync         uintptr
	cuStreamCreate, cuStreamDestroy, cuStreamSynchronize                                   uintptr
	cuEventCreate, cuEventRecord, cuEventSynchronize, cuEventQuery, cuEventDestroy         uintptr
	cuEventElapsedTime                                                                     uintptr
	cuModuleLoadData, cuModuleUnload, cuModuleGetFunction, cuFuncSetAttribute              uintptr
	cuFuncGetAttribute, cuLaunchKernel, cuGetErrorName, cuDriverGetVersion                 uintptr
	cuMemGetInfo                                                                           uintptr
	cuStreamBeginCapture, cuStreamEndCapture, cuGraphInstantiate, cuGraphLaunch            uintptr
	cuGraphDestroy, cuGraphExecDestroy                                                     uintptr
	cuLaunchKernelEx                                                                       uintptr // 0 where the driver lacks it (before CUDA 12)

	nvrtcVersion, nvrtcCreateProgram, nvrtcCompileProgram, nvrtcDestroyProgram   uintptr
	nvrtcGetProgramLogSize, nvrtcGetProgramLog, nvrtcGetCUBINSize, nvrtcGetCUBIN uintptr
	nvrtcPath                                                                    string
}

var (
	drvOnce sync.Once
	drv     *driver
	drvErr  error
)

// Available reports whether the CUDA driver and NVRTC load here.
func Available() bool {
	_, err := loadDriver()
	return err == nil
}

func loadDriver() (*driver, error) {
	drvOnce.Do(func() { drv, drvErr = openDriver() })
	return drv, drvErr
}

func openDriver() (*driver, error) {
	cu, err := purego.Dlopen("libcuda.so.1", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err) // purego names the library
	}
	d := &driver{}
	syms := []struct {
		p    *uintptr
		name string
	}{
		{&d.cuInit, "cuInit"}, {&d.cuDeviceGet, "cuDeviceGet"}, {&d.cuDeviceGetName, "cuDeviceGetName"},
		{&d.cuDeviceGetAttribute, "cuDeviceGetAttribute"}, {&d.cuDeviceTotalMem, "cuDeviceTotalMem_v2"},
		{&d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"}, {&d.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"},
		{&d.cuCtxSetCurrent, "cuCtxSetCurrent"}, {&d.cuCtxSynchronize, "cuCtxSynchronize"},
		{&d.cuMemAlloc, "cuMemAlloc_v2"}, {&d.cuMemFree, "cuMemFree_v2"}, {&d.cuMemsetD8, "cuMemsetD8_v2"},
		{&d.cuMemAllocHost, "cuMemAllocHost_v2"}, {&d.cuMemFreeHost, "cuMemFreeHost"},
		{&d.cuMemcpyHtoD, "cuMemcpyHtoD_v2"}, {&d.cuMemcpyDtoH, "cuMemcpyDtoH_v2"}, {&d.cuMemcpyDtoD, "cuMemcpyDtoD_v2"},
		{&d.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"}, {&d.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"},
		{&d.cuStreamCreate, "cuStreamCreate"}, {&d.cuStreamDestroy, "cuStreamDestroy_v2"}, {&d.cuStreamSynchronize, "cuStreamSynchronize"},
		{&d.cuEventCreate, "cuEventCreate"}, {&d.cuEventRecord, "cuEventRecord"}, {&d.cuEventSynchronize, "cuEventSynchronize"},
		{&d.cuEventQuery, "cuEventQuery"}, {&d.cuEventDestroy, "cuEventDestroy_v2"}, {&d.cuEventElapsedTime, "cuEventElapsedTime"},
		{&d.cuModuleLoadData, "cuModuleLoadData"}, {&d.cuModuleUnload, "cuModuleUnload"}, {&d.cuModuleGetFunction, "cuModuleGetFunction"},
		{&d.cuFuncSetAttribute, "cuFuncSetAttribute"}, {&d.cuFuncGetAttribute, "cuFuncGetAttribute"},
		{&d.cuLaunchKernel, "cuLaunchKernel"}, {&d.cuGetErrorName, "cuGetErrorName"}, {&d.cuDriverGetVersion, "cuDriverGetVersion"},
		{&d.cuMemGetInfo, "cuMemGetInfo_v2"},
		{&d.cuStreamBeginCapture, "cuStreamBeginCapture_v2"}, {&d.cuStreamEndCapture, "cuStreamEndCapture"},
		{&d.cuGraphInstantiate, "cuGraphInstantiateWithFlags"}, {&d.cuGraphLaunch, "cuGraphLaunch"},
		{&d.cuGraphDestroy, "cuGraphDestroy"}, {&d.cuGraphExecDestroy, "cuGraphExecDestroy"},
	}
	for _, s := range syms {
		if *s.p, err = purego.Dlsym(cu, s.name); err != nil {
			return nil, fmt.Errorf("%w: libcuda.so.1 has no %s", ErrUnavailable, s.name)
		}
	}
	d.cuLaunchKernelEx, _ = purego.Dlsym(cu, "cuLaunchKernelEx")
	nv, path, err := openNVRTC()
	if err != nil {
		return nil, err
	}
	d.nvrtcPath = path
	for _, s := range []struct {
		p    *uintptr
		name string
	}{
		{&d.nvrtcVersion, "nvrtcVersion"}, {&d.nvrtcCreateProgram, "nvrtcCreateProgram"},
		{&d.nvrtcCompileProgram, "nvrtcCompileProgram"}, {&d.nvrtcDestroyProgram, "nvrtcDestroyProgram"},
		{&d.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize"}, {&d.nvrtcGetProgramLog, "nvrtcGetProgramLog"},
		{&d.nvrtcGetCUBINSize, "nvrtcGetCUBINSize"}, {&d.nvrtcGetCUBIN, "nvrtcGetCUBIN"},
	} {
		if *s.p, err = purego.Dlsym(nv, s.name); err != nil {
			return nil, fmt.Errorf("%w: %s has no %s", ErrUnavailable, path, s.name)
		}
	}
	if r := d.call(d.cuInit, 0); r != 0 {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, d.err("cuInit", r))
	}
	return d, nil
}

// nvrtcCandidates are where NVRTC is looked for: $AKUNU_NVRTC, the loader's
// search path, the CUDA toolkits under /usr/local, and the pip wheel
// (nvidia-cuda-nvrtc) of a Python installation.
func nvrtcCandidates() []string {
	var out []string
	if p := os.Getenv("AKUNU_NVRTC"); p != "" {
		out = append(out, p)
	}
	out = append(out, "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so")
	for _, pat := range []string{
		"/usr/local/cuda/lib64/libnvrtc.so*", "/usr/local/cuda-*/lib64/libnvrtc.so*",
		"/usr/local/cuda*/targets/*/lib/libnvrtc.so*",
		"/usr/local/lib/python3*/dist-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so*",
		"/usr/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so*",
		"/opt/conda/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so*",
		"/usr/local/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so*",
	} {
		m, _ := filepath.Glob(pat)
		sort.Sort(sort.Reverse(sort.StringSlice(m)))
		for _, p := range m {
			if !strings.Contains(filepath.Base(p), "builtins") {
				out = append(out, p)
			}
		}
	}
	return out
}

func openNVRTC() (uintptr, string, error) {
	var first error
	for _, p := range nvrtcCandidates() {
		h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			return h, p, nil
		}
		if first == nil {
			first = err
		}
	}
	return 0, "", fmt.Errorf("%w: NVRTC not found (set AKUNU_NVRTC to libnvrtc.so's path): %v", ErrUnavailable, first)
}

// call calls a driver or NVRTC function that returns a status (0: success).
// Load-time calls use it; the per-step path uses the backend's own
// argument array (Backend.callArgs), which allocates nothing.
//
// Its arguments are often out-parameters, uintptr(unsafe.Pointer(&x)) of
// a local: uintptrescapes moves x to the heap and keeps it there for the
// call. Without it a stack that moved during the call left the driver
// writing into the old stack and x unchanged (seen: a cuMemAllocHost that
// succeeded and left its pointer nil).
//
//go:uintptrescapes
func (d *driver) call(fn uintptr, args ...uintptr) int {
	r, _, _ := purego.SyscallN(fn, args...)
	return int(int32(r))
}

// err names a failed driver call's result.
func (d *driver) err(call string, r int) error {
	e := &Error{Call: call, Code: r}
	var name *byte
	if d.cuGetErrorName != 0 && d.call(d.cuGetErrorName, uintptr(r), uintptr(unsafe.Pointer(&name))) == 0 && name != nil {
		e.Name = goString(name)
	}
	return e
}

// goString copies a NUL-terminated C string.
func goString(p *byte) string {
	var b []byte
	for i := 0; i < 4096; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(p), i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

// cstr is s NUL-terminated, for a C call.
func cstr(s string) []byte { return append([]byte(s), 0) }
