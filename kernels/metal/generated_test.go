package metal

import (
	"testing"

	"github.com/akunu-dev/akunu/kernels/gpu"
)

// The embedded .metal files are what kernels/gpu generates from the one
// kernel source now: an edit to a body or to the catalog that was not
// regenerated (go generate ./kernels) fails here.
func TestTheMetalFilesAreGeneratedFromTheOneSource(t *testing.T) {
	es, err := gpu.Entries()
	if err != nil {
		t.Fatal(err)
	}
	fams := gpu.Families()
	if len(fams) != len(Files()) {
		t.Errorf("%d families in kernels/gpu, %d .metal files here", len(fams), len(Files()))
	}
	for _, f := range fams {
		want, err := gpu.MetalFile(f, es)
		if err != nil {
			t.Fatal(err)
		}
		name := f[:len(f)-len(".h")] + ".metal"
		got, err := sources.ReadFile(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if string(got) != want {
			t.Errorf("%s is stale: run go generate ./kernels and commit it", name)
		}
	}
}
