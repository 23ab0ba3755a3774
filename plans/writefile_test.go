package plans

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteFileErrorsNameThePathAndItsModeIsTheUmasks: WriteFile's errors
// name the path asked for, never the temporary file it writes first, and
// the plan gets the mode any newly created file gets (0666 less the umask),
// not a temporary file's 0600.
func TestWriteFileErrorsNameThePathAndItsModeIsTheUmasks(t *testing.T) {
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe")
	f, err := os.OpenFile(probe, os.O_CREATE|os.O_WRONLY, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	st, err := os.Stat(probe)
	if err != nil {
		t.Fatal(err)
	}
	want := st.Mode().Perm()

	path := filepath.Join(dir, "ex.plan")
	if err := WriteFile(path, Example()); err != nil {
		t.Fatal(err)
	}
	if st, err = os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != want {
		t.Errorf("plan mode %v, want %v (what os.Create gives under this umask)", got, want)
	}
	if _, err := ReadFile(path); err != nil {
		t.Errorf("the plan written does not read back: %v", err)
	}

	for _, tc := range []struct{ name, path, want string }{
		{"a missing folder", filepath.Join(dir, "no", "such", "x.plan"), "no such file or directory"},
		{"a folder in the way", dir, ""},
	} {
		t.Run(tc.name+" is named by the path asked for", func(t *testing.T) {
			err := WriteFile(tc.path, Example())
			if err == nil {
				t.Fatal("WriteFile succeeded")
			}
			msg := err.Error()
			if !strings.Contains(msg, "writing "+tc.path+": ") || strings.Contains(msg, ".tmp") || !strings.Contains(msg, tc.want) {
				t.Errorf("err = %q; want it to name %s and no temporary file", msg, tc.path)
			}
		})
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*.tmp*"))
	if len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}
