package compiler

import (
	"testing"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/runtime/device"
	"github.com/akunu-dev/akunu/specs/chips"
)

// A launch the compiler derives from a profile's tuning is the launch the
// runtime derives again from the tuning the plan records (PlanTuning, then
// device.ChipTuning): a tuning field that a geometry rule reads and the
// plan drops would make every such plan refuse to run.
func TestTheRecordedTuningGivesTheCompilersLaunches(t *testing.T) {
	shapes := []kernels.Shape{
		{N: 1024, K: 2048, Tokens: 1}, {N: 4096, K: 4096, Tokens: 1}, {N: 151936, K: 1024, Tokens: 1},
		{N: 1024, K: 1024, Tokens: 512}, {Dim: 1024, Tokens: 1}, {Dim: 4096, Tokens: 8},
	}
	for _, pr := range chips.All() {
		want := pr.Tuning()
		got := device.ChipTuning(PlanTuning(want))
		for _, k := range kernels.All() {
			for _, s := range shapes {
				lw, errw := k.Geometry(s, want)
				lg, errg := k.Geometry(s, got)
				if (errw == nil) != (errg == nil) || errw == nil && !sameLaunch(lw, lg) {
					t.Fatalf("%s, %s, %+v: the compiler's launch %+v (%v), from the plan's tuning %+v (%v)", pr, k.Name, s, lw, errw, lg, errg)
				}
			}
		}
	}
}

func sameLaunch(a, b kernels.Launch) bool {
	if a.Grid != b.Grid || a.Threadgroup != b.Threadgroup || a.TGMem != b.TGMem || len(a.Constants) != len(b.Constants) {
		return false
	}
	for i := range a.Constants {
		if a.Constants[i] != b.Constants[i] {
			return false
		}
	}
	return true
}
