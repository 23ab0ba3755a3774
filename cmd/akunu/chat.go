package main

import (
	"bufio"
	"fmt"
	"strings"
	"time"

	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/runtime/chat"
)

func init() {
	app.Register(cli.Command{
		Name:    "chat",
		Summary: "talk with a chat model: multi-turn, streaming, the KV cache kept between turns",
		Usage:   "PLAN [--system TEXT] [--template NAME] [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p M] [--seed S] [--model PATH]",
		Run:     runChat,
	})
}

// runChat is an interactive loop: each line typed is a user turn (/reset
// starts over, /exit or end of input ends). The whole conversation is
// rendered through the model's chat template every turn, and only the
// tokens that differ from what the KV cache already holds are fed, as
// llama.cpp's server does.
func runChat(ctx *cli.Context, args []string) error {
	fs := ctx.Flags("chat")
	system := fs.String("system", "", "a system message to start the conversation with")
	tmplName := fs.String("template", "", "a built-in template (chatml, llama3, gemma) for a plan whose model has none")
	n := fs.Int("n", 1024, "tokens to generate at most per answer")
	sampling := addSamplingFlags(fs, 0.8)
	lf := addLoadFlags(fs)
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: want one PLAN", cli.ErrUsage)
	}
	// The template first: a plan that cannot chat is refused before its
	// model is mapped.
	p, err := plans.ReadFile(pos[0])
	if err != nil {
		return err
	}
	tmpl, err := chat.Select(p.Model.Tokenizer.ChatTemplate, *tmplName)
	if err != nil {
		return err
	}
	m, err := lf.load(ctx, pos[0])
	if err != nil {
		return err
	}
	defer m.Close()
	c := &chatter{m: m, tmpl: tmpl, s: m.NewSession(), out: ctx, o: runtime.GenerateOptions{MaxTokens: *n, Sampling: sampling()}}
	c.reset(*system)

	in := bufio.NewScanner(ctx.Stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	for {
		fmt.Fprint(ctx.Stdout, "> ")
		if !in.Scan() {
			fmt.Fprintln(ctx.Stdout)
			return in.Err()
		}
		line := strings.TrimSpace(in.Text())
		switch line {
		case "":
			continue
		case "/exit", "/quit":
			return nil
		case "/reset":
			c.reset(*system)
			fmt.Fprintln(ctx.Stderr, "akunu: the conversation starts over")
			continue
		}
		if err := c.turn(line); err != nil {
			return err
		}
	}
}

type chatter struct {
	m    *runtime.Model
	tmpl *chat.Template
	s    *runtime.Session
	out  *cli.Context
	o    runtime.GenerateOptions
	msgs []chat.Message
}

func (c *chatter) reset(system string) {
	c.s.Reset()
	c.msgs = c.msgs[:0]
	if system != "" {
		c.msgs = append(c.msgs, chat.Message{Role: "system", Content: system})
	}
}

// special returns the text of a special token, "" when the model has none.
func (c *chatter) special(id int32) string {
	if id < 0 || int(id) >= c.m.Tokenizer.NumTokens() {
		return ""
	}
	return c.m.Tokenizer.TokenToPiece(id, true)
}

// turn renders the conversation with the user's message, feeds what the
// KV cache lacks of it, and streams the answer until an end-of-turn token.
func (c *chatter) turn(user string) error {
	tk := &c.m.Plan.Model.Tokenizer
	c.msgs = append(c.msgs, chat.Message{Role: "user", Content: user})
	text, err := c.tmpl.Render(chat.Context{Messages: c.msgs, AddGenerationPrompt: true,
		BOS: c.special(tk.BOS), EOS: c.special(tk.EOS), Now: time.Now()})
	if err != nil {
		c.msgs = c.msgs[:len(c.msgs)-1]
		return err
	}
	ids := c.m.Tokenizer.Tokenize(text, false, true)
	if tk.AddBOS && tk.BOS >= 0 && (len(ids) == 0 || ids[0] != tk.BOS) {
		ids = append([]int32{tk.BOS}, ids...)
	}
	// Feed only what differs from the conversation the cache holds; at
	// least one token, so that there is something to predict from.
	hist := c.s.History()
	same := 0
	for same < len(hist) && same < len(ids) && hist[same] == ids[same] {
		same++
	}
	same = min(same, len(ids)-1)
	c.s.Rewind(same)

	dec := c.m.Tokenizer.NewDecoder(false)
	o := c.o
	o.OnToken = func(id int32) bool {
		if !c.m.Tokenizer.IsEOG(id) {
			fmt.Fprint(c.out.Stdout, dec.Add(id))
		}
		return true
	}
	res, err := c.s.Generate(ids[same:], o)
	if err != nil {
		c.msgs = c.msgs[:len(c.msgs)-1]
		return err
	}
	fmt.Fprintln(c.out.Stdout, dec.Flush())
	answer := res.Tokens
	if len(answer) > 0 && c.m.Tokenizer.IsEOG(answer[len(answer)-1]) {
		answer = answer[:len(answer)-1]
	}
	c.msgs = append(c.msgs, chat.Message{Role: "assistant", Content: c.m.Tokenizer.Detokenize(answer, false)})
	st := stats(c.m, res)
	fmt.Fprintf(c.out.Stderr, "akunu: fed %d of %d prompt tokens (%.1f tok/s); %d tokens at %.1f tok/s; stop: %s\n",
		len(res.Prompt), len(ids), st.PromptTokS, len(res.Tokens), st.DecodeTokS, st.Stop)
	return nil
}
