package conversation

import "strings"

// Tags of a thinking model's reasoning.
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// thinker splits a streamed answer into reasoning (between <think> and
// </think>) and content. Text that could still be the start of a tag is
// held back, so neither part ever shows a tag or a piece of one; the
// whitespace a model puts around the tags is dropped at the edges of each
// part.
type thinker struct {
	in        bool   // inside <think>
	started   bool   // some content was released (its leading space is gone)
	reasoned  bool   // some reasoning was released
	opened    bool   // a <think> was seen (or the prompt opened one)
	held      string // text that may begin a tag
	spaceHeld string // whitespace at the end of content/reasoning, released once text follows
}

// newThinker starts a split; inThink says the prompt ends inside an open
// <think> (a template that opens the reasoning for the model).
func newThinker(inThink bool) *thinker { return &thinker{in: inThink, opened: inThink} }

// add takes a piece of text and returns what it releases.
func (t *thinker) add(piece string, final bool) (reasoning, content string) {
	text := t.held + piece
	t.held = ""
	var r, c strings.Builder
	for text != "" {
		tag := thinkOpen
		if t.in {
			tag = thinkClose
		}
		if i := strings.Index(text, tag); i >= 0 && (t.in || !t.opened && strings.TrimSpace(text[:i]) == "" && !t.started) {
			t.emit(text[:i], &r, &c, true)
			text = text[i+len(tag):]
			t.in, t.opened, t.spaceHeld = !t.in, true, ""
			continue
		}
		keep := 0
		if !final && (t.in || !t.opened && !t.started) {
			for k := min(len(tag)-1, len(text)); k > 0; k-- {
				if strings.HasSuffix(text, tag[:k]) {
					keep = k
					break
				}
			}
		}
		t.emit(text[:len(text)-keep], &r, &c, false)
		t.held = text[len(text)-keep:]
		break
	}
	return r.String(), c.String()
}

// emit releases s to the current part: without the leading whitespace of
// the part, and with trailing whitespace held until more text follows
// (atTag: a tag follows, so the held whitespace is dropped).
func (t *thinker) emit(s string, r, c *strings.Builder, atTag bool) {
	dst, first := c, &t.started
	if t.in {
		dst, first = r, &t.reasoned
	}
	if !*first {
		s = strings.TrimLeft(s, " \t\r\n")
	}
	if atTag {
		s = strings.TrimRight(t.spaceHeld+s, " \t\r\n")
		t.spaceHeld = ""
		if s != "" {
			dst.WriteString(s)
			*first = true
		}
		return
	}
	body := strings.TrimRight(s, " \t\r\n")
	if body == "" {
		if *first {
			t.spaceHeld += s
		}
		return
	}
	dst.WriteString(t.spaceHeld)
	dst.WriteString(body)
	t.spaceHeld = s[len(body):]
	*first = true
}

// opensThink reports whether rendered (a prompt) ends inside an open
// <think>: its last <think> comes after its last </think>.
func opensThink(rendered string) bool {
	return strings.LastIndex(rendered, thinkOpen) > strings.LastIndex(rendered, thinkClose)
}

// Splitter splits a streamed answer into reasoning and content, as a
// Conversation does: for a server that renders each request's messages
// itself.
type Splitter struct{ t *thinker }

// NewSplitter starts a split of the answer to the prompt rendered with
// template source src; it splits only when the template knows <think>
// (Thinks), otherwise everything is content.
func NewSplitter(src, rendered string) *Splitter {
	if !Thinks(src) {
		return &Splitter{}
	}
	return &Splitter{t: newThinker(opensThink(rendered))}
}

// Thinks reports whether a chat template has reasoning (<think>).
func Thinks(src string) bool { return strings.Contains(src, thinkOpen) }

// Add takes the next piece of the answer and returns what it releases.
func (s *Splitter) Add(piece string) (reasoning, content string) {
	if s.t == nil {
		return "", piece
	}
	return s.t.add(piece, false)
}

// Flush ends the answer: what was held back.
func (s *Splitter) Flush() (reasoning, content string) {
	if s.t == nil {
		return "", ""
	}
	return s.t.add("", true)
}
