package device

import (
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/kernels/gpu"
)

// The kernels whose bodies read bound lengths (kernels/gpu/bounds.h) are
// the ones the GPU backends send them to (BoundsTail): a kernel reading
// past its parameters without them would read garbage as a length, and
// its guard would be void. The body is the one source both Metal and CUDA
// compile.
func TestBoundsTailIsWhatTheBodiesRead(t *testing.T) {
	es, err := gpu.Entries()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, e := range es {
		k, _ := kernels.Lookup(name)
		reads := strings.Contains(e.Body, "bound_bytes(")
		if reads != BoundsTail(k) {
			t.Errorf("%s (%s, %s): reads bound lengths %v, the backends send them %v", name, e.File, e.Func, reads, BoundsTail(k))
		}
		if reads {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no kernel reads bound lengths: the check proves nothing")
	}
}
