package compiler

import (
	"fmt"

	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/plans"
)

// weightsPass records what a load checks the weights against (ADR 0013):
// per tensor of the GGUF table, the sum of sampled blocks, which a load
// recomputes in milliseconds, and, unless Options.SampledSumsOnly, the sum
// of every byte, which `akunu verify-model` and --verify-weights recompute.
// It also records the model's absolute path, a hint for finding the model
// when the plan lives in another folder. A plan compiled from a header
// alone (CompileFile) records neither.
func weightsPass(s *state) (string, error) {
	if s.mapping == nil {
		return "no tensor data at hand: no sums recorded", nil
	}
	m := &s.plan.Header.Model
	m.Path = s.modelPath
	sampled, err := s.mapping.SampledSums()
	if err != nil {
		return "", err
	}
	w := plans.Weights{Scheme: gguf.SumScheme, Full: !s.opts.SampledSumsOnly, Tensors: make([]plans.TensorSum, len(sampled))}
	if len(sampled) > plans.MaxTensorSums {
		return "", fmt.Errorf("%s has %d tensors, more than the %d a plan records sums of: %w", s.fileName, len(sampled), plans.MaxTensorSums, ErrUnsupported)
	}
	var full [][32]byte
	if w.Full {
		if full, err = s.mapping.FullSums(0); err != nil {
			return "", err
		}
	}
	var bytes int64
	for i := range sampled {
		t := &s.mapping.Tensors[i]
		w.Tensors[i] = plans.TensorSum{Name: t.Name, Sampled: sampled[i]}
		if w.Full {
			w.Tensors[i].Full = full[i]
		}
		bytes += t.Size
	}
	m.Weights = w
	if !w.Full {
		return fmt.Sprintf("%d tensors: sampled sums only", len(sampled)), nil
	}
	return fmt.Sprintf("%d tensors: sampled sums, full sums of %d bytes", len(sampled), bytes), nil
}
