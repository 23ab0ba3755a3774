package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/plans"
)

// Finding the model and checking its weights (ADR 0013). A plan records
// the model's base name, size, header hash and, since format 3, its
// absolute path and per-tensor weight sums. Load looks for the model in a
// fixed order and, whichever file it finds, holds it to all of them.

// modelPlaces are where a plan's model may lie, in the order Load looks:
// next to the plan, at the path recorded at compile time, in the working
// directory. Each is described for a message that lists them.
func modelPlaces(planPath string, p *plans.Plan) (paths, what []string) {
	m := &p.Header.Model
	base := filepath.Base(m.File)
	add := func(path, desc string) {
		abs, err := filepath.Abs(path)
		if err != nil {
			abs = path
		}
		for _, q := range paths {
			if qa, _ := filepath.Abs(q); qa == abs {
				return
			}
		}
		paths = append(paths, path)
		what = append(what, fmt.Sprintf("%s (%s)", desc, abs))
	}
	add(filepath.Join(filepath.Dir(planPath), base), "next to the plan")
	if m.Path != "" && filepath.IsAbs(m.Path) {
		add(m.Path, "at the path recorded at compile time")
	}
	add(base, "in the working directory")
	return paths, what
}

// FindModel is the GGUF file Load maps for the plan at planPath when
// Options names none: of the places modelPlaces lists, the first regular
// file of the recorded size, else the first that exists (New then says
// why it is not the plan's). When none exists the error lists the places.
func FindModel(planPath string, p *plans.Plan) (string, error) {
	paths, what := modelPlaces(planPath, p)
	found := ""
	for _, path := range paths {
		st, err := os.Stat(path)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		if uint64(st.Size()) == p.Header.Model.Size {
			return path, nil
		}
		if found == "" {
			found = path
		}
	}
	if found != "" {
		return found, nil
	}
	return "", fmt.Errorf("runtime: the plan needs its model file %s (%d bytes), which is not %s; pass it with --model: %w",
		p.Header.Model.File, p.Header.Model.Size, strings.Join(what, ", nor "), ErrModelFile)
}

// The two kinds of Model.WeightCheck line.
const (
	checked    = "weights checked: "
	notChecked = "weights not checked: "
)

// WeightsChecked says whether the load held the weights to sums the plan
// records; when not, WeightCheck says why (the command says so once).
func (m *Model) WeightsChecked() bool { return strings.HasPrefix(m.WeightCheck, checked) }

// checkWeights holds the mapped file's tensors to the sums the plan
// records: the sampled sums, or with full every byte's. It returns a line
// saying what it checked, or why it checked nothing (a plan that predates
// the sums: the caller says so once). A plan without the sums asked for
// fails only when full is asked: the caller wanted every byte checked.
func checkWeights(p *plans.Plan, mp *gguf.Mapping, full bool) (string, error) {
	if err := p.WeightsCheckable(gguf.SumScheme, full); err != nil {
		if full {
			return "", err
		}
		return notChecked + strings.TrimPrefix(strings.TrimSuffix(err.Error(), ": "+plans.ErrNoWeightSums.Error()), "plan: "), nil
	}
	start := time.Now()
	var sums [][32]byte
	var err error
	if full {
		sums, err = mp.FullSums(0)
	} else {
		sums, err = mp.SampledSums()
	}
	if err != nil {
		return "", err
	}
	if err := p.CheckWeights(gguf.SumScheme, sums, full); err != nil {
		return "", err
	}
	what := "sampled"
	if full {
		what = "full"
	}
	return fmt.Sprintf(checked+"the %s sums of %d tensors match (%.1f ms)", what, len(sums), float64(time.Since(start).Microseconds())/1000), nil
}

// CheckFile fails when the model file shrank since it was mapped: the
// weights past its new end are gone, and a kernel touching them would
// crash the process (SIGBUS). One fstat; asked when a replay fails
// (explain), not before every replay: the CPU backend turns the fault
// itself into an error.
func (m *Model) CheckFile() error {
	if m.mapping == nil {
		return nil
	}
	if err := m.mapping.CheckSize(); err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	return nil
}

// wait waits for the backend's submissions, explaining a failure.
func (m *Model) wait() error { return m.explain(m.be.Wait()) }

// explain names the cause of a failed replay when the model file shrank
// under the mapping (the backend reports only the fault it caused).
func (m *Model) explain(err error) error {
	if err == nil {
		return nil
	}
	if ferr := m.CheckFile(); ferr != nil {
		return fmt.Errorf("%w (%w)", ferr, err)
	}
	return err
}

// VerifyWeights reads every byte of the mapped model and holds it to the
// full sums the plan records, naming the tensors that differ. A file that
// shrank or faults while read is an error, not a crash.
func (m *Model) VerifyWeights() (string, error) {
	if m.mapping == nil {
		return "", errors.New("runtime: the model is closed")
	}
	note, err := checkWeights(m.Plan, m.mapping, true)
	if err != nil {
		return "", fmt.Errorf("runtime: %s: %w", m.ModelPath, err)
	}
	return note, nil
}

// VerifyReport is what VerifyModel checked.
type VerifyReport struct {
	Plan, Model string
	Tensors     int
	Bytes       int64
	Elapsed     time.Duration
}

// VerifyModel checks, without a backend, that the model the plan at
// planPath finds (or model, when not "") is the one it was compiled from,
// down to every byte of every tensor: size, header hash, then the full
// sums. Its errors are one line; a mismatch wraps plans.ErrPlanMismatch and
// names the tensors that differ.
func VerifyModel(planPath, model string) (*VerifyReport, error) {
	p, err := plans.ReadFile(planPath)
	if err != nil {
		return nil, err
	}
	if model == "" {
		if model, err = FindModel(planPath, p); err != nil {
			return nil, err
		}
	}
	if err := p.WeightsCheckable(gguf.SumScheme, true); err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	st, err := os.Stat(model)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w: %w", ErrModelFile, err)
	}
	if err := p.CheckModel(st.Size(), p.Header.Model.HeaderSHA256); err != nil {
		return nil, fmt.Errorf("runtime: %s: %w", model, err)
	}
	mp, err := gguf.Map(model)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w: %w", ErrModelFile, err)
	}
	defer mp.Close()
	if err := p.CheckModel(mp.FileSize, mp.HeaderHash); err != nil {
		return nil, fmt.Errorf("runtime: %s: %w", model, err)
	}
	start := time.Now()
	if _, err := checkWeights(p, mp, true); err != nil {
		return nil, fmt.Errorf("runtime: %s: %w", model, err)
	}
	r := &VerifyReport{Plan: planPath, Model: model, Tensors: len(mp.Tensors), Elapsed: time.Since(start)}
	for i := range mp.Tensors {
		r.Bytes += mp.Tensors[i].Size
	}
	return r, nil
}
