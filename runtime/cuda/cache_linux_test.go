//go:build linux

package cuda

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/akunu-dev/akunu/kernels/gpu"
)

// The compiled-kernel cache: a cubin put under its key comes back; a key
// differs with the source, the architecture and NVRTC's version; a file
// that is not an ELF image (truncated, overwritten) reads as a miss, so it
// costs a compile and never a bad load.
func TestKernelCache(t *testing.T) {
	c := cache{dir: filepath.Join(t.TempDir(), "k")}
	cubin := append([]byte("\x7fELF"), make([]byte, 60)...)
	key := cacheKey("src", 90, 13, 0)
	if c.get(key) != nil {
		t.Fatal("a hit in an empty cache")
	}
	c.put(key, cubin)
	if got := c.get(key); string(got) != string(cubin) {
		t.Fatalf("got %q", got)
	}
	for _, other := range []string{cacheKey("src2", 90, 13, 0), cacheKey("src", 80, 13, 0), cacheKey("src", 90, 12, 8)} {
		if other == key {
			t.Errorf("two inputs share the key %s", key)
		}
	}
	if err := os.WriteFile(filepath.Join(c.dir, key+".cubin"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c.get(key) != nil {
		t.Error("a corrupt cubin read as a hit")
	}
	var off cache
	off.put(key, cubin)
	if off.get(key) != nil {
		t.Error("the disabled cache hit")
	}
}

// The launch structures are the driver's (cuda.h: CUlaunchConfig,
// CUlaunchAttribute), field for field.
func TestLaunchStructsMatchTheDriver(t *testing.T) {
	var c launchConfig
	var a launchAttr
	for _, x := range []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof(CUlaunchConfig)", unsafe.Sizeof(c), 56},
		{"sharedMemBytes", unsafe.Offsetof(c.shmem), 24},
		{"hStream", unsafe.Offsetof(c.stream), 32},
		{"attrs", unsafe.Offsetof(c.attrs), 40},
		{"numAttrs", unsafe.Offsetof(c.nattrs), 48},
		{"sizeof(CUlaunchAttribute)", unsafe.Sizeof(a), 72},
		{"value", unsafe.Offsetof(a.value), 8},
	} {
		if x.got != x.want {
			t.Errorf("%s = %d, the driver's is %d", x.name, x.got, x.want)
		}
	}
}

// Every family launched late is a kernel family: a renamed file would
// otherwise silently start the prefill GEMMs early again.
func TestLateFamiliesAreFamilies(t *testing.T) {
	fams := gpu.Families()
	for f := range lateFamilies {
		if !slices.Contains(fams, f) {
			t.Errorf("lateFamilies names %s; the families are %v", f, fams)
		}
	}
}

// A malformed AKUNU_CUDA_SKIP is an error that names it, before any driver
// is needed (so this runs on machines without one too).
func TestSkipPatternIsChecked(t *testing.T) {
	t.Setenv("AKUNU_CUDA_SKIP", "attn.(norm")
	_, err := New(Options{})
	if err == nil || !strings.Contains(err.Error(), "AKUNU_CUDA_SKIP") {
		t.Fatalf("New with a malformed AKUNU_CUDA_SKIP: %v", err)
	}
}
