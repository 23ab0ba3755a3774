package metal

import (
	"strings"
	"testing"
)

// Every kernel an Apple plan can name (F16 activations) has its MSL.
func TestEveryAppleKernelHasAnMSLFunction(t *testing.T) {
	ks, _ := parse(t)
	var missing []string
	for _, k := range appleKernels() {
		if ks[k.Name] == nil {
			missing = append(missing, k.Name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d Apple kernels have no MSL function: %s", len(missing), strings.Join(missing, " "))
	}
}
