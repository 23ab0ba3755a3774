package chat

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error Parse and Render return is an *Error that
// wraps one of them, so callers can tell a broken template from a refused
// conversation with errors.Is.
var (
	// ErrSyntax: the template does not parse.
	ErrSyntax = errors.New("template syntax error")
	// ErrRender: evaluation failed (undefined value used, type error, ...).
	ErrRender = errors.New("template render error")
	// ErrRaised: the template called raise_exception; Error.Msg is its
	// message, verbatim. This is how a template refuses a conversation.
	ErrRaised = errors.New("template raised an exception")
	// ErrLimit: a sandbox limit (steps, output, allocation, depth) was hit.
	ErrLimit = errors.New("template exceeded a sandbox limit")
	// ErrUnsupported: the template uses Jinja that this package refuses
	// (include, extends, imports, mutation of lists and dicts, ...).
	ErrUnsupported = errors.New("template uses an unsupported feature")
	// ErrNoTemplate: Select found neither a model template nor a built-in.
	ErrNoTemplate = errors.New("no chat template")
)

// Pos is a position in a template's source: 1-based line and column, the
// column counted in characters. Line endings are normalized to "\n" first,
// as Jinja does, which does not move any position.
type Pos struct {
	Line, Col int
}

// Error is a template error with the place it comes from.
type Error struct {
	Name string // the template's name, "tokenizer.chat_template" or "builtin:chatml"
	Pos  Pos
	Msg  string // for ErrRaised, exactly the message passed to raise_exception
	Kind error  // one of the sentinel errors above
}

func (e *Error) Error() string {
	name := e.Name
	if name == "" {
		name = "template"
	}
	return fmt.Sprintf("%s:%d:%d: %s", name, e.Pos.Line, e.Pos.Col, e.Msg)
}

func (e *Error) Unwrap() error { return e.Kind }

// RaisedMessage returns the message a template passed to raise_exception,
// if err is such a refusal.
func RaisedMessage(err error) (string, bool) {
	var e *Error
	if errors.As(err, &e) && e.Kind == ErrRaised {
		return e.Msg, true
	}
	return "", false
}

// failure is what the lexer, parser and interpreter panic with; the public
// entry points recover it (and nothing else) and turn it into an *Error.
// Panicking keeps the interpreter's many small helpers free of error plumbing,
// the way text/template does it.
type failure struct {
	off  int // byte offset into the normalized source
	kind error
	msg  string
}

func fail(off int, kind error, format string, args ...any) {
	panic(&failure{off: off, kind: kind, msg: fmt.Sprintf(format, args...)})
}

// catch turns a failure panic into an error; other panics go on.
func catch(src *source, name string, err *error) {
	r := recover()
	if r == nil {
		return
	}
	f, ok := r.(*failure)
	if !ok {
		panic(r)
	}
	*err = &Error{Name: name, Pos: src.pos(f.off), Msg: f.msg, Kind: f.kind}
}
