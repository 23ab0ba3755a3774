package specs

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/akunu-dev/akunu/internal/typo"
)

// Sentinel errors. Every *Error wraps exactly one of them, so a caller (or a
// test) asks errors.Is(err, specs.ErrUnknownOp) on a single error or on an
// ErrorList alike.
var (
	ErrSyntax         = errors.New("syntax error")
	ErrUnknownField   = errors.New("unknown field")
	ErrUnknownOp      = errors.New("unknown op")
	ErrUnknownKey     = errors.New("unknown metadata key")
	ErrUnknownName    = errors.New("unknown name")
	ErrUnknownTensor  = errors.New("unknown tensor")
	ErrType           = errors.New("type mismatch")
	ErrCycle          = errors.New("cycle")
	ErrInvalid        = errors.New("invalid spec")
	ErrUnknownArch    = errors.New("unknown architecture")
	ErrMissingKey     = errors.New("missing metadata key")
	ErrBadValue       = errors.New("bad metadata value")
	ErrConstraint     = errors.New("unsupported model")
	ErrMissingTensor  = errors.New("missing tensor")
	ErrShape          = errors.New("tensor shape mismatch")
	ErrUnexpectedTens = errors.New("unexpected tensor")
)

// Pos is a position in a spec file. Line and Col count from 1; a zero Line
// means the position is unknown (the error then names only the file).
type Pos struct {
	File      string
	Line, Col int
}

func (p Pos) String() string {
	switch {
	case p.File == "" && p.Line == 0:
		return ""
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Error is one problem found in a spec, or in a model checked against one.
// It prints as
//
//	archs/gemma3.yaml:41:9: layer.attn[3]: unknown op "rmsnrom" (did you mean rmsnorm?)
//
// Path says where in the spec's structure the problem lies (hparams.head_dim,
// tensors.attn_q, layer.attn[3]); it is empty for problems of a whole file.
type Error struct {
	Pos  Pos
	Path string
	Msg  string
	Kind error // one of the Err* sentinels
}

func (e *Error) Error() string {
	var b strings.Builder
	if s := e.Pos.String(); s != "" {
		b.WriteString(s)
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the sentinel, for errors.Is.
func (e *Error) Unwrap() error { return e.Kind }

// ErrorList is several errors reported at once, in file and line order. Its
// Error prints one per line.
type ErrorList []*Error

func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes every error to errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// errs collects errors while a pass runs.
type errs struct {
	list ErrorList
}

func (c *errs) add(kind error, pos Pos, path, format string, args ...any) {
	c.list = append(c.list, &Error{Pos: pos, Path: path, Msg: fmt.Sprintf(format, args...), Kind: kind})
}

func (c *errs) addErr(e *Error) { c.list = append(c.list, e) }

func (c *errs) merge(err error) {
	if err == nil {
		return
	}
	var l ErrorList
	var e *Error
	switch {
	case errors.As(err, &l):
		c.list = append(c.list, l...)
	case errors.As(err, &e):
		c.list = append(c.list, e)
	default:
		c.list = append(c.list, &Error{Msg: err.Error(), Kind: ErrInvalid})
	}
}

func (c *errs) empty() bool { return len(c.list) == 0 }

// err returns the collected errors sorted by position (stable, so errors at
// one position keep the order they were found in), or nil.
func (c *errs) err() error {
	if len(c.list) == 0 {
		return nil
	}
	l := append(ErrorList(nil), c.list...)
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i].Pos, l[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	// The same problem found twice (say, through two children of one parent)
	// is reported once.
	out := l[:0]
	for i, e := range l {
		if i > 0 && e.Error() == l[i-1].Error() {
			continue
		}
		out = append(out, e)
	}
	return out
}

// suggest returns " (did you mean X?)" when one of names is close to name,
// else "".
func suggest(name string, names []string) string {
	best, bestD := "", -1
	for _, n := range names {
		d := typo.Distance(name, n)
		if bestD < 0 || d < bestD || (d == bestD && n < best) {
			best, bestD = n, d
		}
	}
	limit := len(name) / 3
	if limit < 1 {
		limit = 1
	}
	if limit > 3 {
		limit = 3
	}
	if bestD < 0 || bestD > limit {
		// A prefix or suffix match ("key_length" for "attention.key_length")
		// is also worth suggesting.
		for _, n := range names {
			if len(name) >= 4 && (strings.HasSuffix(n, "."+name) || strings.HasPrefix(n, name)) {
				return fmt.Sprintf(" (did you mean %s?)", n)
			}
		}
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}
