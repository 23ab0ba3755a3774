package proof

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeT records what Missing does to a test.
type fakeT struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (f *fakeT) Helper()      {}
func (f *fakeT) Name() string { return "TestX" }
func (f *fakeT) Skip(args ...any) {
	f.skipped = true
	f.msg = args[0].(string)
}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = true
	f.msg = format
}
func (f *fakeT) Logf(string, ...any) {}

func TestAMissingToolIsRecordedOutsideCIAndFailsInCI(t *testing.T) {
	log := filepath.Join(t.TempDir(), "sub", "skipped")
	t.Setenv(Env, log)
	t.Setenv("CI", "")
	ft := &fakeT{}
	Missing(ft, "the MSL kernels are not checked", "clang not found")
	Missing(ft, "ShaderTypes.h is not checked", "no C compiler")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := "TestX: the MSL kernels are not checked: clang not found\nTestX: ShaderTypes.h is not checked: no C compiler\n"
	if !ft.skipped || ft.failed || string(b) != want {
		t.Errorf("skipped %v, failed %v, file %q; want a skip and %q", ft.skipped, ft.failed, b, want)
	}

	t.Setenv("CI", "true")
	ft = &fakeT{}
	Missing(ft, "the MSL kernels are not checked", "clang not found")
	if !ft.failed || ft.skipped || !strings.Contains(ft.msg, "CI installs") {
		t.Errorf("in CI: failed %v, skipped %v, %q; want a failure", ft.failed, ft.skipped, ft.msg)
	}
	if b2, _ := os.ReadFile(log); string(b2) != want {
		t.Errorf("CI's failure was recorded as a skip: %q", b2)
	}
}

// Hardware CI never has is recorded as unproven, in CI as well, and skips.
func TestAbsentHardwareIsRecordedEverywhere(t *testing.T) {
	for _, ci := range []string{"", "true"} {
		log := filepath.Join(t.TempDir(), "skipped")
		t.Setenv(Env, log)
		t.Setenv("CI", ci)
		ft := &fakeT{}
		Elsewhere(ft, "CUDA is not checked", "no NVIDIA driver")
		b, _ := os.ReadFile(log)
		if !ft.skipped || ft.failed || string(b) != "TestX: CUDA is not checked: no NVIDIA driver\n" {
			t.Errorf("CI=%q: skipped %v, failed %v, file %q", ci, ft.skipped, ft.failed, b)
		}
	}
}

// A file of ../shared is its path where it is there; where it is not, the
// test ends as Missing, naming the file.
func TestSharedNamesTheFileItLacks(t *testing.T) {
	t.Setenv(Env, "")
	t.Setenv("CI", "")
	ft := &fakeT{}
	p := Shared(ft, "models", "stories260K.gguf")
	if ft.skipped || ft.failed {
		Missing(t, "Shared's path for a file that is there is not checked", ft.msg)
	}
	if _, err := os.Stat(p); err != nil || filepath.Base(p) != "stories260K.gguf" {
		t.Errorf("path %q: %v", p, err)
	}
	ft = &fakeT{}
	Shared(ft, "models", "no-such-model.gguf")
	if !ft.skipped || !strings.Contains(ft.msg, "../shared/models/no-such-model.gguf") {
		t.Errorf("a missing file: skipped %v, %q; want a skip naming it", ft.skipped, ft.msg)
	}
}
