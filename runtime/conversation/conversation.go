package conversation

import (
	"context"
	"strings"
	"time"

	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/runtime/chat"
)

// Conversation is a chat on one session: the messages so far, rendered
// through the template each turn.
type Conversation struct {
	s        *runtime.Session
	m        *runtime.Model
	tmpl     *chat.Template
	messages []chat.Message
	system   string
	// thinks: the template knows <think>, so answers are split.
	thinks bool
	// Extra are further template variables (enable_thinking, tools, ...).
	Extra map[string]any
}

// New starts a conversation on session s (of model m) with template tmpl
// and, when system is not empty, a system message.
func New(m *runtime.Model, s *runtime.Session, tmpl *chat.Template, system string) *Conversation {
	c := &Conversation{s: s, m: m, tmpl: tmpl, system: system, thinks: Thinks(tmpl.Source())}
	c.Reset()
	return c
}

// Reset starts over: the messages and the session's conversation.
func (c *Conversation) Reset() {
	c.s.Reset()
	c.messages = c.messages[:0]
	if c.system != "" {
		c.messages = append(c.messages, chat.Message{Role: "system", Content: c.system})
	}
}

// Model is the model the conversation talks to.
func (c *Conversation) Model() *runtime.Model { return c.m }

// Messages are the conversation's messages (do not modify).
func (c *Conversation) Messages() []chat.Message { return c.messages }

// Delta is a piece of a streamed answer: its reasoning or its content.
type Delta struct {
	Reasoning, Content string
}

// Reply is one turn's answer.
type Reply struct {
	// Content is the answer; Reasoning what a thinking model thought
	// first (between <think> and </think>).
	Content, Reasoning string
	Result             *runtime.Result
	// Rendered is the conversation's tokens this turn; Fed those that the
	// session's cache lacked and were fed (the rest was kept).
	Rendered, Fed int
}

// special is the text of a special token, "" when the model has none.
func (c *Conversation) special(id int32) string {
	if id < 0 || int(id) >= c.m.Tokenizer.NumTokens() {
		return ""
	}
	return c.m.Tokenizer.TokenToPiece(id, true)
}

// Turn adds the user's message, renders the conversation with the
// assistant's turn opened, feeds what the session's cache lacks of it,
// and generates the answer with o, streaming it to onDelta (when set;
// returning false stops the answer). The answer joins the conversation;
// a failed turn leaves it as it was. A cancelled ctx ends the answer where
// it is (Result.Stop is StopCancelled) and keeps what was said.
func (c *Conversation) Turn(ctx context.Context, user string, o runtime.GenerateOptions, onDelta func(Delta) bool) (*Reply, error) {
	tk := &c.m.Plan.Model.Tokenizer
	c.messages = append(c.messages, chat.Message{Role: "user", Content: user})
	text, err := c.tmpl.Render(chat.Context{Messages: c.messages, AddGenerationPrompt: true,
		BOS: c.special(tk.BOS), EOS: c.special(tk.EOS), Now: time.Now(), Extra: c.Extra})
	if err != nil {
		c.messages = c.messages[:len(c.messages)-1]
		return nil, err
	}
	ids := c.m.Tokenizer.Tokenize(text, false, true)
	if tk.AddBOS && tk.BOS >= 0 && (len(ids) == 0 || ids[0] != tk.BOS) {
		ids = append([]int32{tk.BOS}, ids...)
	}
	// Keep the longest prefix the session already holds; feed at least one
	// token, so that there is something to predict from.
	hist := c.s.History()
	same := 0
	for same < len(hist) && same < len(ids) && hist[same] == ids[same] {
		same++
	}
	same = min(same, len(ids)-1)
	c.s.Rewind(same)

	th := newThinker(c.thinks && opensThink(text))
	var reasoning, content strings.Builder
	send := func(r, cont string) bool {
		reasoning.WriteString(r)
		content.WriteString(cont)
		if onDelta != nil && (r != "" || cont != "") {
			return onDelta(Delta{Reasoning: r, Content: cont})
		}
		return true
	}
	if c.thinks {
		o.OnText = func(s string) bool { return send(th.add(s, false)) }
	} else {
		o.OnText = func(s string) bool { return send("", s) }
	}
	res, err := c.s.Generate(ctx, ids[same:], o)
	if err != nil {
		c.messages = c.messages[:len(c.messages)-1]
		return nil, err
	}
	if c.thinks {
		send(th.add("", true))
	}
	rep := &Reply{Content: content.String(), Reasoning: reasoning.String(), Result: res, Rendered: len(ids), Fed: len(ids) - same}
	msg := chat.Message{Role: "assistant", Content: rep.Content}
	if rep.Reasoning != "" {
		msg.Fields = map[string]any{"reasoning_content": rep.Reasoning}
	}
	c.messages = append(c.messages, msg)
	return rep, nil
}
