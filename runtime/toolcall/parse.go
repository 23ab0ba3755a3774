package toolcall

import "strings"

// Call is one tool call: OpenAI's tool_calls[i] with its function.
type Call struct {
	ID        string
	Name      string
	Arguments string // JSON text, as the model wrote it
}

// Parse splits a model's whole output in format f into its content and its
// calls. A region that is no call is content; a started call that breaks
// (truncated, or invalid JSON) is returned as far as it got, with an *Error
// wrapping ErrMalformed, and the text after the break is content. Ids are
// random; ParseWith seeds them.
func Parse(f Format, text string) (content string, calls []Call, err error) {
	return ParseWith(f, text, Options{})
}

// ParseWith is Parse with options.
func ParseWith(f Format, text string, o Options) (content string, calls []Call, err error) {
	s := NewStreamWith(f, o)
	ev := s.Feed(text)
	ev = append(ev, s.Finish()...)
	return Collect(ev)
}

// Collect gathers a stream's events into what Parse returns.
func Collect(events []Event) (content string, calls []Call, err error) {
	var b strings.Builder
	var args []strings.Builder
	for _, e := range events {
		switch e.Kind {
		case EventContent:
			b.WriteString(e.Text)
		case EventCall:
			calls = append(calls, Call{ID: e.ID, Name: e.Name})
			args = append(args, strings.Builder{})
		case EventArgs:
			if e.Index < len(args) {
				args[e.Index].WriteString(e.Text)
			}
		case EventError:
			if err == nil {
				err = e.Err
			}
		}
	}
	for i := range calls {
		calls[i].Arguments = args[i].String()
	}
	return b.String(), calls, err
}
