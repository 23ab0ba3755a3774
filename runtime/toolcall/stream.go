package toolcall

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
)

// EventKind says what an Event carries.
type EventKind uint8

const (
	// EventContent: Text is more of the message's content.
	EventContent EventKind = iota + 1
	// EventCall: call Index starts, with its ID and Name.
	EventCall
	// EventArgs: Text is more of call Index's arguments (JSON text).
	EventArgs
	// EventError: Err (an *Error) says why the output's calls end here;
	// the text from there on arrives as content.
	EventError
)

// Event is one piece of parsed output.
type Event struct {
	Kind     EventKind
	Text     string // EventContent, EventArgs
	Index    int    // EventCall, EventArgs, EventError: the call's index in the output
	ID, Name string // EventCall
	Err      error  // EventError
}

// ErrMalformed is wrapped by the *Error a started call that breaks off
// gives: its arguments were already passed on, so the break cannot turn
// back into content.
var ErrMalformed = errors.New("malformed tool call")

// Error is a started call that is not valid JSON in its format.
type Error struct {
	Call   int // the call's index in the output
	Offset int // byte offset in the output where it breaks
	Msg    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("tool call %d: byte %d: %s", e.Call, e.Offset, e.Msg)
}

func (e *Error) Unwrap() error { return ErrMalformed }

// Limits of what is held back before a call starts. A region that holds
// more without naming its function is not a call: it turns back into
// content, so a hostile or confused output is never held for long.
const (
	maxPending = 4096 // bytes of a region before its first call starts
	maxName    = 256  // bytes of a key or a function name
)

// Stream parses a model's output as it is generated. Feed it the text of
// each step; the events it returns, concatenated, are what Parse returns
// for the whole text, however the text was split (Parse is a Stream).
//
// Text that may still become a tag or a call is held back (a prefix of the
// format's tag, whitespace before it, a call whose name is not yet known),
// so content never holds part of a call, and a call starts only once its
// name is known and its arguments begin. A region that turns out not to be
// a call before that is content, byte for byte. A call that breaks after
// it started (truncated, or invalid JSON) gives an EventError; what
// follows is content. Deltas never end inside a UTF-8 sequence, except at
// Finish.
type Stream struct {
	f    Format
	tag  string
	rnd  *rand.Rand
	mode mode
	off  int // offset of the byte being read

	ws     []byte // whitespace held: at the end of content, or after a call
	held   []byte // a proper prefix of the open tag (content) or of the close tag
	region []byte // the region's text while none of its calls has started
	// committed: a call of the current region started, so a fault is an
	// error, no longer content. bare: the region is Llama3's untagged object.
	committed, bare, inArray bool
	call                     callParser
	calls                    int // calls started so far

	events   []Event
	pend     []byte // the delta being gathered
	pendKind EventKind
	pendIdx  int
	done     bool
}

type mode uint8

const (
	mContent  mode = iota // content; watching for the open tag
	mStart                // Llama3: the start of the output, where a bare object is a call
	mTagWS                // after the open tag: whitespace, then '{' (or Mistral's '[')
	mArrNext              // Mistral: after '[' or ',': a call object
	mArrAfter             // Mistral: after a call object: ',' or ']'
	mCall                 // inside a call object
	mClose                // Hermes: after a call object: whitespace and </tool_call>
	mAfter                // after a region: whitespace (and Llama3's ';' or next object)
	mFailed               // after an error: all content
)

func (m mode) inRegion() bool { return m >= mTagWS && m <= mCall }

// NewStream starts parsing output in format f, with random call ids.
func NewStream(f Format) *Stream { return NewStreamWith(f, Options{}) }

// NewStreamWith starts parsing output in format f.
func NewStreamWith(f Format, o Options) *Stream {
	s := &Stream{f: f, tag: f.openTag(), rnd: o.Rand}
	if f == Llama3 {
		s.mode = mStart
	}
	return s
}

// Calls is the number of calls started so far.
func (s *Stream) Calls() int { return s.calls }

// Feed parses the next text of the output. The events are the stream's;
// Text fields are new strings.
func (s *Stream) Feed(text string) []Event {
	if s.done {
		return nil
	}
	for i := 0; i < len(text); i++ {
		s.step(text[i])
		s.off++
	}
	s.flush(false)
	return s.take()
}

// Finish ends the output: what was held back is resolved (a partial tag or
// an unfinished region is content; an unfinished started call is an
// error). The stream takes no more text.
func (s *Stream) Finish() []Event {
	if s.done {
		return nil
	}
	s.done = true
	switch s.mode {
	case mContent:
		s.content(s.ws)
		s.content(s.held)
	case mStart:
		s.content(s.ws)
	case mTagWS, mArrNext, mArrAfter, mCall:
		switch {
		case !s.committed:
			s.content(s.region)
		case s.mode == mCall:
			s.malformed("the output ends inside the call's JSON")
		}
	}
	s.ws, s.held, s.region = nil, nil, nil
	s.flush(true)
	return s.take()
}

func (s *Stream) take() []Event {
	ev := s.events
	s.events = nil
	return ev
}

func (s *Stream) step(c byte) {
	if s.mode.inRegion() && !s.committed {
		s.region = append(s.region, c)
		if len(s.region) > maxPending {
			s.fail(c, "too long before a call starts")
			return
		}
	}
	s.dispatch(c)
}

func (s *Stream) dispatch(c byte) {
	switch s.mode {
	case mContent:
		s.contentByte(c)
	case mStart:
		switch {
		case isSpace(c):
			s.ws = append(s.ws, c)
		case c == '{':
			s.startRegion(s.ws, c)
			s.bare = true
			s.beginCall()
		default:
			s.mode = mContent
			s.contentByte(c)
		}
	case mTagWS:
		switch {
		case isSpace(c):
		case c == '{':
			s.beginCall()
		case c == '[' && s.f == Mistral:
			s.inArray = true
			s.mode = mArrNext
		default:
			s.fail(c, fmt.Sprintf("expected '{' after %s", s.tag))
		}
	case mArrNext:
		switch {
		case isSpace(c):
		case c == '{':
			s.beginCall()
		case c == ']' && s.committed:
			s.endRegion()
		default:
			s.fail(c, "expected a call object in the array")
		}
	case mArrAfter:
		switch {
		case isSpace(c):
		case c == ',':
			s.mode = mArrNext
		case c == ']':
			s.endRegion()
		default:
			s.fail(c, fmt.Sprintf("expected ',' or ']' after a call, found %q", c))
		}
	case mCall:
		s.callByte(c)
	case mClose:
		switch {
		case len(s.held) == 0 && isSpace(c):
		case c == hermesClose[len(s.held)]:
			s.held = append(s.held, c)
			if len(s.held) == len(hermesClose) {
				s.held = s.held[:0]
				s.endRegion()
			}
		default:
			// No closing tag: the call stands, and the text goes on as
			// content (models sometimes drop it before the next call).
			held := append([]byte(nil), s.held...)
			s.held = s.held[:0]
			s.mode = mContent
			for _, b := range held {
				s.contentByte(b)
			}
			s.contentByte(c)
		}
	case mAfter:
		switch {
		case isSpace(c):
			s.ws = append(s.ws, c)
		case s.f == Llama3 && c == ';':
		case s.f == Llama3 && c == '{':
			s.startRegion(s.ws, c)
			s.bare = true
			s.beginCall()
		default:
			s.ws = s.ws[:0] // whitespace next to a call is the call's
			s.mode = mContent
			s.contentByte(c)
		}
	case mFailed:
		s.content1(c)
	}
}

// contentByte reads c as content: whitespace and a prefix of the open tag
// are held back until what follows decides them.
func (s *Stream) contentByte(c byte) {
	if s.tag == "" {
		s.content1(c)
		return
	}
	if len(s.held) > 0 || c == s.tag[0] {
		if c == s.tag[len(s.held)] {
			s.held = append(s.held, c)
			if len(s.held) == len(s.tag) {
				s.startRegion(s.ws, s.held...)
				s.held = s.held[:0]
				s.mode = mTagWS
			}
			return
		}
		// Not the tag: its first byte is content, the rest is read again
		// (it may start the tag itself).
		held := append([]byte(nil), s.held...)
		s.held = s.held[:0]
		s.content(s.ws)
		s.ws = s.ws[:0]
		s.content1(held[0])
		for _, b := range held[1:] {
			s.contentByte(b)
		}
		s.contentByte(c)
		return
	}
	if isSpace(c) {
		s.ws = append(s.ws, c)
		return
	}
	s.content(s.ws)
	s.ws = s.ws[:0]
	s.content1(c)
}

func (s *Stream) startRegion(ws []byte, text ...byte) {
	s.region = append(append(s.region[:0], ws...), text...)
	s.ws = s.ws[:0]
	s.committed, s.bare, s.inArray = false, false, false
}

func (s *Stream) endRegion() {
	s.region = s.region[:0]
	s.mode = mAfter
}

// fail handles a byte c that the region cannot take. Before any call of the
// region started, the region was not a call: its text is content, and c is
// read again as content. After, the call is malformed.
func (s *Stream) fail(c byte, msg string) {
	if !s.committed {
		// Its trailing whitespace is held as content's is: it belongs to
		// a call that may follow.
		text := s.region[:len(s.region)-1]
		n := len(text)
		for n > 0 && isSpace(text[n-1]) {
			n--
		}
		s.content(text[:n])
		s.ws = append(s.ws[:0], text[n:]...)
		s.region = s.region[:0]
		s.mode = mContent
		s.contentByte(c)
		return
	}
	s.malformed(msg)
	s.mode = mFailed
	s.content1(c)
}

func (s *Stream) malformed(msg string) {
	idx := s.calls
	if s.call.started {
		idx = s.call.index
	}
	s.flush(true)
	s.events = append(s.events, Event{Kind: EventError, Index: idx, Err: &Error{Call: idx, Offset: s.off, Msg: msg}})
}

// callParser reads a call object's top level: "name", "arguments" (or
// "parameters"), and the keys it ignores ("id", "type"); nested values go
// through a scan.
type callParser struct {
	st       cstate
	key      ckey
	seen     [kOther]bool
	raw      []byte // the key or name being read, escapes and all
	esc      bool   // raw's last byte is an unfinished backslash
	name     string
	args     []byte // arguments read before the name
	argsDone bool
	started  bool
	index    int
	v        scan
}

type cstate uint8

const (
	cKeyOrEnd cstate = iota // after '{'
	cKeyNext                // after ','
	cKey                    // inside a key
	cColon                  // after a key
	cValue                  // after ':'
	cName                   // inside the name string
	cArgs                   // inside the arguments object
	cSkip                   // inside an ignored value
	cAfter                  // after a value
)

type ckey uint8

const (
	kName ckey = iota
	kArgs
	kOther
)

func (s *Stream) beginCall() {
	s.call = callParser{args: s.call.args[:0], raw: s.call.raw[:0], v: scan{stack: s.call.v.stack[:0]}}
	s.mode = mCall
}

func (s *Stream) callByte(c byte) {
	p := &s.call
	switch p.st {
	case cKeyOrEnd, cKeyNext:
		switch {
		case isSpace(c):
		case c == '"':
			p.st, p.raw, p.esc = cKey, p.raw[:0], false
		case c == '}' && p.st == cKeyOrEnd:
			s.endCall(c)
		default:
			s.fail(c, "expected a key in the call object")
		}
	case cKey, cName:
		switch {
		case p.esc:
			p.esc = false
		case c == '\\':
			p.esc = true
		case c == '"':
			var str string
			if err := json.Unmarshal(append(append([]byte{'"'}, p.raw...), '"'), &str); err != nil {
				s.fail(c, "invalid string in the call object")
				return
			}
			if p.st == cKey {
				s.key(c, str)
				return
			}
			if str == "" {
				s.fail(c, "the function name is empty")
				return
			}
			p.name = str
			p.st = cAfter
			if p.argsDone {
				s.commit()
			}
			return
		}
		if len(p.raw) >= maxName {
			s.fail(c, "key or function name too long")
			return
		}
		p.raw = append(p.raw, c)
	case cColon:
		switch {
		case isSpace(c):
		case c == ':':
			p.st = cValue
		default:
			s.fail(c, "expected ':' after a key")
		}
	case cValue:
		if isSpace(c) {
			return
		}
		switch p.key {
		case kName:
			if c != '"' {
				s.fail(c, "the function name must be a string")
				return
			}
			p.st, p.raw, p.esc = cName, p.raw[:0], false
		case kArgs:
			if c != '{' {
				s.fail(c, "the arguments must be an object")
				return
			}
			p.v.step(c)
			p.st = cArgs
			if p.name != "" {
				s.commit()
			}
			s.args(c)
		default:
			if r, what := p.v.step(c); r == scanError {
				s.fail(c, what)
				return
			}
			p.st = cSkip
		}
	case cArgs:
		r, what := p.v.step(c)
		if r == scanError {
			s.fail(c, "arguments: "+what)
			return
		}
		s.args(c)
		if r == scanDone {
			p.argsDone, p.st = true, cAfter
		}
	case cSkip:
		switch r, what := p.v.step(c); r {
		case scanError:
			s.fail(c, what)
		case scanDone:
			p.st = cAfter
		case scanBefore:
			p.st = cAfter
			s.callByte(c)
		}
	case cAfter:
		switch {
		case isSpace(c):
		case c == ',':
			p.st = cKeyNext
		case c == '}':
			s.endCall(c)
		default:
			s.fail(c, fmt.Sprintf("expected ',' or '}' in the call object, found %q", c))
		}
	}
}

// key takes a finished key. Before the call starts, a key no call has means
// the object is no call; after, it is ignored.
func (s *Stream) key(c byte, k string) {
	p := &s.call
	switch k {
	case "name":
		p.key = kName
	case "arguments", "parameters":
		p.key = kArgs
	case "id", "type":
		p.key = kOther
	default:
		if !p.started {
			s.fail(c, fmt.Sprintf("unexpected key %q in the call object", k))
			return
		}
		p.key = kOther
	}
	if p.key < kOther {
		if p.seen[p.key] {
			s.fail(c, fmt.Sprintf("key %q twice in the call object", k))
			return
		}
		p.seen[p.key] = true
	}
	p.v = scan{stack: p.v.stack[:0]}
	p.st = cColon
}

// commit starts the call: its name is known and its arguments begin (or
// were read before the name, or are absent).
func (s *Stream) commit() {
	p := &s.call
	p.started, p.index = true, s.calls
	s.calls++
	s.committed = true
	s.region = s.region[:0]
	s.flush(true)
	s.events = append(s.events, Event{Kind: EventCall, Index: p.index, ID: newID(s.f, s.rnd), Name: p.name})
	s.emit(EventArgs, p.index, p.args)
}

func (s *Stream) args(c byte) {
	p := &s.call
	if p.started {
		s.emit(EventArgs, p.index, []byte{c})
		return
	}
	p.args = append(p.args, c)
}

func (s *Stream) endCall(c byte) {
	p := &s.call
	switch {
	case p.name == "":
		s.fail(c, "the call object has no name")
		return
	case !p.argsDone && s.bare:
		// Llama3's bare object needs its parameters to be a call: a
		// {"name": ...} answer in JSON is content.
		s.fail(c, "the call object has no parameters")
		return
	}
	if !p.started {
		s.commit()
	}
	if !p.argsDone {
		s.emit(EventArgs, p.index, []byte("{}"))
	}
	switch {
	case s.f == Hermes:
		s.mode = mClose
	case s.inArray:
		s.mode = mArrAfter
	default:
		s.endRegion()
	}
}

func (s *Stream) content(b []byte) { s.emit(EventContent, 0, b) }

func (s *Stream) content1(c byte) {
	if s.pendKind == EventContent {
		s.pend = append(s.pend, c)
		return
	}
	s.emit(EventContent, 0, []byte{c})
}

// emit gathers b into the delta being built, starting a new one when the
// kind or call changes.
func (s *Stream) emit(kind EventKind, idx int, b []byte) {
	if len(b) == 0 {
		return
	}
	if s.pendKind != kind || s.pendIdx != idx {
		s.flush(true)
		s.pendKind, s.pendIdx = kind, idx
	}
	s.pend = append(s.pend, b...)
}

// flush turns the gathered delta into an event: all of it, or (between
// Feeds) all but an unfinished UTF-8 sequence at its end.
func (s *Stream) flush(all bool) {
	n := len(s.pend)
	if !all {
		n -= partialRune(s.pend)
	}
	if n == 0 {
		return
	}
	s.events = append(s.events, Event{Kind: s.pendKind, Index: s.pendIdx, Text: string(s.pend[:n])})
	s.pend = s.pend[:copy(s.pend, s.pend[n:])]
}

// partialRune is the length of the unfinished UTF-8 sequence that ends b
// (0 if b ends on a whole rune or on bytes that are no UTF-8).
func partialRune(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-3; i-- {
		c := b[i]
		if c&0xC0 == 0x80 {
			continue
		}
		need := 0
		switch {
		case c&0xE0 == 0xC0:
			need = 2
		case c&0xF0 == 0xE0:
			need = 3
		case c&0xF8 == 0xF0:
			need = 4
		}
		if len(b)-i < need {
			return len(b) - i
		}
		return 0
	}
	return 0
}
