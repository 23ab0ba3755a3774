package plans

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error this package returns wraps one of them, so
// callers (and tests) tell the cases apart with errors.Is, and every message
// is one line that says what to do.
var (
	// ErrNotPlan: the bytes do not start with Magic.
	ErrNotPlan = errors.New("not an akunu plan")
	// ErrCorrupt: truncated, a checksum mismatch, or a body that does not
	// decode.
	ErrCorrupt = errors.New("corrupt plan")
	// ErrTooNew: the plan needs a newer runtime than this one.
	ErrTooNew = errors.New("plan too new")
	// ErrPlanMismatch: the plan was compiled for another model file.
	ErrPlanMismatch = errors.New("plan does not match the model")
	// ErrInvalid: the plan decodes but breaks a rule of Validate.
	ErrInvalid = errors.New("invalid plan")
)

// maxProblems is how many problems a ValidationError lists before it counts
// the rest: the first few say what is wrong, a thousand say nothing more.
const maxProblems = 20

// ValidationError is what Validate returns: every problem found, each a
// line that starts with where it is ("decode[57] L6.attn.flash: ...").
type ValidationError struct {
	// Plan is what messages call the plan: its path, when Decode or ReadFile
	// validated it, else "".
	Plan     string
	Problems []string
	// More counts the problems found after the first maxProblems.
	More int
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("plan: ")
	if e.Plan != "" {
		b.WriteString(e.Plan)
		b.WriteString(" is ")
	}
	if len(e.Problems) == 1 && e.More == 0 {
		b.WriteString("invalid: ")
		b.WriteString(e.Problems[0])
		return b.String()
	}
	fmt.Fprintf(&b, "invalid (%d problems):", len(e.Problems)+e.More)
	for _, p := range e.Problems {
		b.WriteString("\n\t")
		b.WriteString(p)
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "\n\t... and %d more", e.More)
	}
	return b.String()
}

func (e *ValidationError) Unwrap() error { return ErrInvalid }

// problems collects validation problems.
type problems struct {
	list []string
	more int
}

func (ps *problems) add(format string, args ...any) {
	if len(ps.list) >= maxProblems {
		ps.more++
		return
	}
	ps.list = append(ps.list, fmt.Sprintf(format, args...))
}

func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	return &ValidationError{Problems: ps.list, More: ps.more}
}

// hashPrefix shortens a digest for a message: "1a2b3c4d…".
func hashPrefix(h []byte) string {
	if len(h) > 4 {
		return fmt.Sprintf("%x…", h[:4])
	}
	return fmt.Sprintf("%x", h)
}
