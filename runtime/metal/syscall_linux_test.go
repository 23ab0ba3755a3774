//go:build linux && (amd64 || arm64)

package metal

import (
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// TestSyscallNAllocs measures what the darwin backend's objc_msgSend calls
// cost in allocations, on Linux: purego.SyscallN runs the same Go code on
// both (only the trampoline differs), so a call through a C function here
// (labs, which ignores extra arguments) allocates what a message there
// does. The encoder's form (a slice of an argument array it owns) must
// allocate nothing; the variadic form, used only at load, allocates once.
func TestSyscallNAllocs(t *testing.T) {
	lib, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Skipf("libc: %v", err)
	}
	fn, err := purego.Dlsym(lib, "labs")
	if err != nil {
		t.Skipf("labs: %v", err)
	}
	params := make([]byte, 64)
	grid := &[3]uint64{1, 1, 1}
	e := &struct{ args [5]uintptr }{}
	send := func(n int) uintptr {
		r, _, _ := purego.SyscallN(fn, e.args[:2+n]...)
		return r
	}
	e.args[0] = 5
	if r := send(0); r != 5 {
		t.Fatalf("labs(5) = %d", r)
	}
	t.Run("the encoder's argument-array form allocates nothing", func(t *testing.T) {
		allocs := testing.AllocsPerRun(10000, func() {
			e.args[0], e.args[1], e.args[2], e.args[3], e.args[4] = 1, 2, uintptr(unsafe.Pointer(&params[0])), 64, 2
			send(3)
			e.args[2], e.args[3] = uintptr(unsafe.Pointer(grid)), uintptr(unsafe.Pointer(grid))
			send(2)
		})
		if allocs != 0 {
			t.Fatalf("%v allocations per two messages", allocs)
		}
	})
	t.Run("the variadic form allocates its argument list", func(t *testing.T) {
		allocs := testing.AllocsPerRun(1000, func() { purego.SyscallN(fn, 1, 2, 3) })
		t.Logf("%v allocation(s) per variadic call", allocs)
	})
}
