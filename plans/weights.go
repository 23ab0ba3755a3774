package plans

import (
	"errors"
	"fmt"
	"strings"
)

// MaxTensorSums bounds the tensors whose sums a plan records (a GGUF of an
// 80-layer model has ~1000 tensors; a mixture of experts a few thousand).
const MaxTensorSums = 1 << 16

// ErrNoWeightSums: the plan records no weight sums this runtime can check
// (it predates them, or was written with another scheme).
var ErrNoWeightSums = errors.New("no weight sums")

// Weights (format 3) are what the compiler read of the tensor data: for
// each tensor of the GGUF tensor table, in table order, a sum of sampled
// blocks and, when Full, a sum of every byte. Scheme names how they were
// computed (compiler/gguf.SumScheme); a runtime checks only a scheme it
// computes itself. ADR 0013 says why these and not a hash of the file.
type Weights struct {
	Scheme  string
	Full    bool
	Tensors []TensorSum
}

// TensorSum is one tensor's sums.
type TensorSum struct {
	Name    string
	Sampled [32]byte
	Full    [32]byte // zero unless Weights.Full
}

// recompileHint is the plan's name for messages and the command that
// recompiles it.
func (p *Plan) recompileHint() (planName, hint string) {
	m := p.Header.Model
	planName = p.name
	if planName == "" {
		planName = planNameFor(m.File)
	}
	return planName, fmt.Sprintf("recompile with: akunuc compile %s -o %s", m.File, planName)
}

// WeightsCheckable says whether the plan records sums a caller computing
// scheme can check (full: every byte's): nil, or an error wrapping
// ErrNoWeightSums that says why not.
func (p *Plan) WeightsCheckable(scheme string, full bool) error {
	w := &p.Header.Model.Weights
	planName, hint := p.recompileHint()
	switch {
	case w.Scheme == "":
		return fmt.Errorf("plan: %s (format %d) records no weight sums, so its weights cannot be checked; %s: %w",
			planName, p.Header.Format, hint, ErrNoWeightSums)
	case w.Scheme != scheme:
		return fmt.Errorf("plan: %s records weight sums of scheme %q; this akunu computes %q; %s: %w",
			planName, w.Scheme, scheme, hint, ErrNoWeightSums)
	case full && !w.Full:
		return fmt.Errorf("plan: %s records sampled weight sums only, not every byte's (compiled with --sampled-sums-only); %s: %w",
			planName, hint, ErrNoWeightSums)
	}
	// The names go into messages: hold them to the limit of every name.
	for i := range w.Tensors {
		if n := len(w.Tensors[i].Name); n > MaxNameBytes {
			return fmt.Errorf("plan: %s: header.model.weights.tensors[%d].name is %d bytes, more than the %d a name may have; %s: %w",
				planName, i, n, MaxNameBytes, hint, ErrInvalid)
		}
	}
	return nil
}

// CheckWeights compares sums computed from the mapped file with the sums
// the plan records: sampled ones, or with full every byte's. scheme is the
// scheme the caller computed them with. A plan without sums (or of another
// scheme, or without full sums when full is asked) is ErrNoWeightSums; sums
// that differ are ErrPlanMismatch, naming the first tensors that differ.
func (p *Plan) CheckWeights(scheme string, sums [][32]byte, full bool) error {
	if err := p.WeightsCheckable(scheme, full); err != nil {
		return err
	}
	w := &p.Header.Model.Weights
	planName, hint := p.recompileHint()
	switch {
	case len(sums) != len(w.Tensors):
		return fmt.Errorf("plan: %s was compiled for a different model file (sums of %d tensors; this one has %d); %s: %w",
			planName, len(w.Tensors), len(sums), hint, ErrPlanMismatch)
	}
	var differ []string
	for i := range sums {
		want := w.Tensors[i].Sampled
		if full {
			want = w.Tensors[i].Full
		}
		if sums[i] != want {
			differ = append(differ, fmt.Sprintf("%q", w.Tensors[i].Name))
		}
	}
	if len(differ) == 0 {
		return nil
	}
	what := "sampled blocks"
	if full {
		what = "every byte"
	}
	names := strings.Join(differ[:min(len(differ), 3)], ", ")
	if len(differ) > 3 {
		names += fmt.Sprintf(" and %d more", len(differ)-3)
	}
	return fmt.Errorf("plan: %s was compiled from another model file: %d of %d tensors differ (%s): %s; the header matches but the weights do not (the file was changed or replaced after compiling); %s: %w",
		planName, len(differ), len(sums), what, names, hint, ErrPlanMismatch)
}
