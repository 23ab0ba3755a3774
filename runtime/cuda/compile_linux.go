//go:build linux

package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"
)

// nvrtcVersion is NVRTC's major and minor version.
func (d *driver) version() (int, int) {
	var major, minor int32
	d.call(d.nvrtcVersion, uintptr(unsafe.Pointer(&major)), uintptr(unsafe.Pointer(&minor)))
	return int(major), int(minor)
}

// compile compiles src (named name) for sm_<arch> with NVRTC and returns
// the cubin. Every function without an execution space is a device
// function (-default-device), as every MSL function is; math is IEEE
// (no fast-math), as the CPU twins' is, but where a kernel asks for the
// hardware's approximations by name (fast_exp and fast_recip in SiLU:
// prelude_cuda.h), as Metal's fast math gives them.
func (d *driver) compile(name, src string, arch int) ([]byte, error) {
	var prog uintptr
	csrc, cname := cstr(src), cstr(name)
	if r := d.call(d.nvrtcCreateProgram, uintptr(unsafe.Pointer(&prog)), uintptr(unsafe.Pointer(&csrc[0])),
		uintptr(unsafe.Pointer(&cname[0])), 0, 0, 0); r != 0 {
		return nil, &Error{Call: "nvrtcCreateProgram", Code: r}
	}
	defer d.call(d.nvrtcDestroyProgram, uintptr(unsafe.Pointer(&prog)))
	opts := [][]byte{cstr(fmt.Sprintf("--gpu-architecture=sm_%d", arch)), cstr("-default-device"), cstr("-std=c++17")}
	ptrs := make([]uintptr, len(opts))
	for i := range opts {
		ptrs[i] = uintptr(unsafe.Pointer(&opts[i][0]))
	}
	r := d.call(d.nvrtcCompileProgram, prog, uintptr(len(ptrs)), uintptr(unsafe.Pointer(&ptrs[0])))
	if r != 0 {
		var n uint64
		d.call(d.nvrtcGetProgramLogSize, prog, uintptr(unsafe.Pointer(&n)))
		log := make([]byte, n+1)
		d.call(d.nvrtcGetProgramLog, prog, uintptr(unsafe.Pointer(&log[0])))
		return nil, fmt.Errorf("cuda: NVRTC cannot compile %s (error %d):\n%s", name, r, strings.TrimRight(string(log), "\x00\n"))
	}
	var n uint64
	if r := d.call(d.nvrtcGetCUBINSize, prog, uintptr(unsafe.Pointer(&n))); r != 0 || n == 0 {
		return nil, &Error{Call: "nvrtcGetCUBINSize", Code: r}
	}
	cubin := make([]byte, n)
	if r := d.call(d.nvrtcGetCUBIN, prog, uintptr(unsafe.Pointer(&cubin[0]))); r != 0 {
		return nil, &Error{Call: "nvrtcGetCUBIN", Code: r}
	}
	return cubin, nil
}

// cache is the compiled-kernel cache on disk: dir/<key>.cubin, the key
// the hash of the source, the architecture and NVRTC's version. A file
// that cannot be read or written costs a compile, never a failure.
type cache struct{ dir string }

func defaultCacheDir() string {
	if d := os.Getenv("AKUNU_CUDA_CACHE"); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "akunu", "cuda")
}

func cacheKey(src string, arch, major, minor int) string {
	h := sha256.New()
	fmt.Fprintf(h, "sm_%d nvrtc %d.%d\n", arch, major, minor)
	h.Write([]byte(src))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

func (c cache) get(key string) []byte {
	if c.dir == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(c.dir, key+".cubin"))
	if err != nil || len(b) < 4 || string(b[1:4]) != "ELF" {
		return nil
	}
	return b
}

func (c cache) put(key string, cubin []byte) {
	if c.dir == "" || os.MkdirAll(c.dir, 0o755) != nil {
		return
	}
	tmp, err := os.CreateTemp(c.dir, key+".*.tmp")
	if err != nil {
		return
	}
	_, err = tmp.Write(cubin)
	if cerr := tmp.Close(); err == nil && cerr == nil {
		_ = os.Rename(tmp.Name(), filepath.Join(c.dir, key+".cubin"))
		return
	}
	_ = os.Remove(tmp.Name())
}
