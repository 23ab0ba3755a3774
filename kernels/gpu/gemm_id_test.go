package gpu

import (
	"fmt"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/kernels"
)

// gemm_id's list of pairs is as long in the body as the geometry rule's
// threadgroup memory makes room for.
func TestGEMMIDListIsTheSizeTheGeometryAllows(t *testing.T) {
	b, err := sources.ReadFile("gemm_id.h")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("#define GID_CAP %d\n", kernels.GEMMIDListCap); !strings.Contains(string(b), want) {
		t.Errorf("gemm_id.h lacks %q (kernels.GEMMIDListCap)", want)
	}
}
