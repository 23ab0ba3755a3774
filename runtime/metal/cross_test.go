package metal

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestDarwinBuild cross-compiles and vets the darwin side (the only code
// that touches Metal) from any host, with cgo off as on every build: what
// can be proven of it without a Mac. Building package runtime for darwin
// is what checks that *Backend is a runtime.Backend as it is (its
// backend_darwin.go asserts it). make lint does the same for the whole
// module.
func TestDarwinBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		t.Skipf("no go tool: %v", err)
	}
	for _, args := range [][]string{
		{"build", "-o", os.DevNull, "github.com/akunu-dev/akunu/runtime/metal", "github.com/akunu-dev/akunu/runtime/device", "github.com/akunu-dev/akunu/runtime"},
		{"build", "-o", t.TempDir(), "github.com/akunu-dev/akunu/cmd/..."},
		{"vet", "github.com/akunu-dev/akunu/runtime/metal", "github.com/akunu-dev/akunu/runtime", "github.com/akunu-dev/akunu/cmd/akunu"},
	} {
		cmd := exec.Command(gobin, args...)
		cmd.Env = append(os.Environ(), "GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("GOOS=darwin GOARCH=arm64 go %v: %v\n%s", args, err, out)
		}
	}
}
