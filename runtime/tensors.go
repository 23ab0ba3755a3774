package runtime

import (
	"fmt"

	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/plans"
)

// checkTensors holds every weight buffer of p to the tensor it names in
// the model's tensor table: its bytes must lie inside that tensor's. The
// header hash already says the table is the one the plan was compiled
// against, and Validate that each buffer lies inside the file; this says
// that a buffer reads its own tensor, not a neighbour's bytes shifted by a
// damaged offset (which would run, and compute garbage).
func checkTensors(p *plans.Plan, f *gguf.File) error {
	for i := range p.Buffers {
		b := &p.Buffers[i]
		if b.Kind != plans.BufWeight {
			continue
		}
		t, ok := f.Tensor(b.Tensor)
		if !ok {
			return fmt.Errorf("plan buffer %d %q: tensor %q is not in the model's tensor table: %w", i, b.Name, b.Tensor, plans.ErrInvalid)
		}
		start, size := uint64(t.FileOffset), uint64(t.Size)
		if b.Offset < start || b.Offset-start > size || b.Size > size-(b.Offset-start) {
			return fmt.Errorf("plan buffer %d %q: bytes [%d, %d) are not inside tensor %q at [%d, %d) of the model file: %w",
				i, b.Name, b.Offset, b.Offset+b.Size, b.Tensor, start, start+size, plans.ErrInvalid)
		}
	}
	return nil
}
