package chat

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// ErrContext: Context data that cannot be passed to a template (a Go type
// with no template equivalent, a reserved name in Extra).
var ErrContext = errors.New("chat context cannot be passed to a template")

// Message is one turn of a conversation.
type Message struct {
	Role    string
	Content string
	// Fields are the message's other keys (tool_calls, tool_call_id, name,
	// reasoning_content, ...), converted as Context.Extra is. A "content"
	// field replaces Content, for structured (list of parts) content; a
	// "role" field is refused.
	Fields map[string]any
}

func (m Message) value(depth int) (any, error) {
	d := newDict(2 + len(m.Fields))
	d.set("role", m.Role)
	d.set("content", m.Content)
	keys := make([]string, 0, len(m.Fields))
	for k := range m.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "role" {
			return nil, fmt.Errorf("Fields cannot set \"role\": use Message.Role")
		}
		v, err := fromGo(m.Fields[k], depth+1)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", k, err)
		}
		d.set(k, v)
	}
	return d, nil
}

// Context is what a template renders: the variables Hugging Face passes to
// chat templates.
type Context struct {
	Messages            []Message // messages
	AddGenerationPrompt bool      // add_generation_prompt: end with the assistant's turn opened
	BOS, EOS            string    // bos_token, eos_token
	// Now is the clock of strftime_now (zero: time.Now()).
	Now time.Time
	// Extra holds more variables: tools, documents, enable_thinking,
	// date_string, custom special tokens... tools and documents are None
	// unless set here, as in Hugging Face.
	Extra map[string]any
	// Limits bounds the work of one Render; zero fields take DefaultLimits'.
	Limits Limits
}

// Limits are the sandbox's bounds. A template that reaches one fails with
// ErrLimit instead of hanging or exhausting memory.
type Limits struct {
	MaxSteps  int   // statements, expressions and loop iterations evaluated
	MaxOutput int   // bytes of rendered text
	MaxAlloc  int64 // bytes of strings and lists built along the way, in total
	MaxDepth  int   // nested macro calls
	// MaxTime is the backstop for what the step count misses; it makes the
	// outcome of a render that comes near it depend on the machine.
	MaxTime time.Duration
}

// DefaultLimits are generous for any real conversation (4000 turns of
// Qwen3's template take 330,000 steps and 25 MB of values) and small enough
// that a hostile template fails within a second or so.
var DefaultLimits = Limits{MaxSteps: 5_000_000, MaxOutput: 16 << 20, MaxAlloc: 256 << 20, MaxDepth: 100, MaxTime: 10 * time.Second}

func (l Limits) withDefaults() Limits {
	if l.MaxSteps <= 0 {
		l.MaxSteps = DefaultLimits.MaxSteps
	}
	if l.MaxOutput <= 0 {
		l.MaxOutput = DefaultLimits.MaxOutput
	}
	if l.MaxAlloc <= 0 {
		l.MaxAlloc = DefaultLimits.MaxAlloc
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	if l.MaxTime <= 0 {
		l.MaxTime = DefaultLimits.MaxTime
	}
	return l
}

// Template is a parsed chat template. It is immutable, and safe to render
// from several goroutines at once.
type Template struct {
	name string
	src  *source
	body []stmt
}

// Parse parses a chat template (a model's tokenizer.chat_template).
func Parse(src string) (*Template, error) {
	return ParseNamed("tokenizer.chat_template", src)
}

// ParseNamed parses a template whose errors will carry name.
func ParseNamed(name, src string) (t *Template, err error) {
	s := newSource(src)
	defer catch(s, name, &err)
	return &Template{name: name, src: s, body: parse(s)}, nil
}

// Name is the name errors carry.
func (t *Template) Name() string { return t.name }

// Source is the template's text (line endings normalized).
func (t *Template) Source() string { return t.src.text }

var reserved = []string{"messages", "add_generation_prompt", "bos_token", "eos_token"}

// Render renders the template for ctx. Errors are *Error with line:col: a
// template's refusal (raise_exception) wraps ErrRaised and carries the
// template's message verbatim.
func (t *Template) Render(ctx Context) (out string, err error) {
	vars, err := ctx.vars()
	if err != nil {
		return "", err
	}
	return t.render(vars, ctx.Limits.withDefaults(), ctx.Now)
}

// render runs the template with vars, which must hold template values.
func (t *Template) render(vars map[string]any, lim Limits, now time.Time) (out string, err error) {
	if now.IsZero() {
		now = time.Now()
	}
	ip := &interp{out: &strings.Builder{}, lim: lim, now: now, deadline: time.Now().Add(lim.MaxTime)}
	defer catch(t.src, t.name, &err)
	globals := newScope(builtinScope(ip))
	for k, v := range vars {
		globals.set(k, v)
	}
	ip.exec(t.body, newScope(globals))
	return ip.out.String(), nil
}

func (ctx Context) vars() (map[string]any, error) {
	msgs := make([]any, len(ctx.Messages))
	for i, m := range ctx.Messages {
		v, err := m.value(0)
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %w: %w", i, ErrContext, err)
		}
		msgs[i] = v
	}
	vars := map[string]any{
		"messages":              msgs,
		"add_generation_prompt": ctx.AddGenerationPrompt,
		"bos_token":             ctx.BOS,
		"eos_token":             ctx.EOS,
		"tools":                 nil,
		"documents":             nil,
	}
	for k, v := range ctx.Extra {
		if indexOf(reserved, k) >= 0 {
			return nil, fmt.Errorf("Extra[%q]: %w: set it through its Context field", k, ErrContext)
		}
		c, err := fromGo(v, 0)
		if err != nil {
			return nil, fmt.Errorf("Extra[%q]: %w: %w", k, ErrContext, err)
		}
		vars[k] = c
	}
	return vars, nil
}

// maxRange is Jinja's sandbox bound on range().
const maxRange = 100_000

// builtinScope holds the global functions: Jinja's range, dict, namespace
// and joiner, and Hugging Face's raise_exception and strftime_now.
func builtinScope(ip *interp) *scope {
	fns := []*builtinFn{
		{name: "range", fn: fnRange},
		{name: "dict", fn: func(ip *interp, off int, args []any, kw []kwVal) any {
			return mkDict(off, "dict", args, kw)
		}},
		{name: "namespace", fn: func(ip *interp, off int, args []any, kw []kwVal) any {
			return &namespace{attrs: mkDict(off, "namespace", args, kw)}
		}},
		{name: "joiner", fn: func(ip *interp, off int, args []any, kw []kwVal) any {
			a := bindArgs(off, "joiner", args, kw, "sep")
			sep, first := argOr(a[0], ", "), true
			return &builtinFn{name: "joiner", fn: func(*interp, int, []any, []kwVal) any {
				if first {
					first = false
					return ""
				}
				return sep
			}}
		}},
		{name: "raise_exception", fn: func(ip *interp, off int, args []any, kw []kwVal) any {
			a := bindArgs(off, "raise_exception", args, kw, "message")
			fail(off, ErrRaised, "%s", pyStr(off, argOr(a[0], "")))
			return nil
		}},
		{name: "strftime_now", fn: func(ip *interp, off int, args []any, kw []kwVal) any {
			a := bindArgs(off, "strftime_now", args, kw, "format")
			f, ok := a[0].(string)
			if !ok {
				fail(off, ErrRender, "strftime_now() needs a format string")
			}
			return strftime(ip.now, f)
		}},
	}
	s := newScope(nil)
	for _, f := range fns {
		s.set(f.name, f)
	}
	return s
}

func mkDict(off int, name string, args []any, kw []kwVal) *dict {
	d := newDict(len(kw))
	if len(args) > 1 {
		fail(off, ErrRender, "%s() takes at most 1 positional argument", name)
	}
	if len(args) == 1 {
		src, ok := args[0].(*dict)
		if !ok {
			fail(off, ErrRender, "%s() needs a mapping, not '%s'", name, typeName(args[0]))
		}
		for i, k := range src.keys {
			d.set(k, src.vals[i])
		}
	}
	for _, k := range kw {
		d.set(k.name, k.v)
	}
	return d
}

func fnRange(ip *interp, off int, args []any, kw []kwVal) any {
	if len(kw) > 0 {
		fail(off, ErrRender, "range() takes no keyword arguments")
	}
	ns := make([]int64, len(args))
	for i, a := range args {
		n, ok := asInt(a)
		if !ok {
			ip.operandCheck(off, a)
			fail(off, ErrRender, "range() needs integers, not '%s'", typeName(a))
		}
		ns[i] = n
	}
	var start, stop, step int64 = 0, 0, 1
	switch len(ns) {
	case 1:
		stop = ns[0]
	case 2:
		start, stop = ns[0], ns[1]
	case 3:
		start, stop, step = ns[0], ns[1], ns[2]
	default:
		fail(off, ErrRender, "range() takes 1 to 3 arguments")
	}
	if step == 0 {
		fail(off, ErrRender, "range() arg 3 must not be zero")
	}
	if (float64(stop)-float64(start))/float64(step) > maxRange {
		fail(off, ErrLimit, "range too big: the sandbox allows at most %d items", maxRange)
	}
	var n int64
	if step > 0 && stop > start {
		n = (stop - start + step - 1) / step
	} else if step < 0 && stop < start {
		n = (start - stop - step - 1) / -step
	}
	if n < 0 || n > maxRange {
		fail(off, ErrLimit, "range too big: the sandbox allows at most %d items", maxRange)
	}
	ip.charge(off, 16*int(n))
	ip.work(off, int(n))
	out := make([]any, n)
	for i := range out {
		out[i] = start + int64(i)*step
	}
	return out
}
