package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/runtime/chat"
	"github.com/akunu-dev/akunu/runtime/conversation"
)

func init() {
	app.Register(cli.Command{
		Name:    "chat",
		Summary: "talk with a chat model: multi-turn, streaming, the KV cache kept between turns (Ctrl-C ends an answer)",
		Usage: "PLAN [--system TEXT] [--template NAME] [--think] [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p M] [--seed S] [--stop TEXT]... [--model PATH]\n" +
			"       [--grammar FILE.gbnf | --json-schema FILE.json | --json-object] (each answer; thinking off)\n" +
			"       [--spec ngram|draft [--draft PLAN] [--draft-max K] [--draft-min K] [--draft-vocab N]]",
		Run: runChat,
	})
}

// runChat is an interactive loop: each line typed is a user turn (/reset
// starts over, /exit or end of input ends). A conversation
// (runtime/conversation) renders the whole conversation through the
// model's chat template every turn and feeds only the tokens that differ
// from what the KV cache already holds, as llama.cpp's server does. A
// thinking model's reasoning is shown dimmed before its answer.
func runChat(ctx *cli.Context, args []string) error {
	fs := ctx.Flags("chat")
	system := fs.String("system", "", "a system message to start the conversation with")
	tmplName := fs.String("template", "", "a built-in template (chatml, llama3, gemma) for a plan whose model has none")
	think := fs.Bool("think", true, "let a model that thinks (Qwen3's enable_thinking) think before it answers")
	n := fs.Int("n", 1024, "tokens to generate at most per answer, at least 1")
	sampling := addSamplingFlags(fs, 0.8)
	var stops stringsFlag
	fs.Var(&stops, "stop", "end an answer when its text reaches this string (repeatable)")
	lf := addLoadFlags(fs)
	spf := addSpecFlags(fs)
	cf := addConstrainFlags(fs)
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if err := firstError(atLeast("n", *n, 1, ""), sampling.check(), lf.check(), spf.check(), cf.check()); err != nil {
		return err
	}
	if _, err := cf.parse(io.Discard); err != nil { // a bad file is refused before the model loads
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
	if errors.Is(err, chat.ErrNoTemplate) && *tmplName == "" {
		// A model without a template (a base model, most often) still
		// talks in a plain format; the notice says how to pick a real one.
		if tmpl, err = chat.ParseNamed("plain", plainTemplate); err != nil {
			return err
		}
		stops = append(stops, plainUserTurn)
		fmt.Fprintf(ctx.Stderr, "akunu: %s has no chat template: plain \"User:\"/\"Assistant:\" turns (--template %s picks a built-in format)\n",
			p.Header.Model.File, strings.Join(chat.BuiltinNames(), ", "))
	}
	if err != nil {
		return fmt.Errorf("%w (--template %s picks a built-in format)", err, strings.Join(chat.BuiltinNames(), ", "))
	}
	m, err := lf.load(ctx, pos[0], 1)
	if err != nil {
		return err
	}
	defer closeModel(m)
	spc, err := spf.newSpeculator(m, 1)
	if err != nil {
		return err
	}
	defer spc.close()
	s, err := m.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	spec, closeSpec, err := spc.speculation(m)
	if err != nil {
		return err
	}
	defer closeSpec()
	c := conversation.New(m, s, tmpl, *system)
	// A constrained answer starts at its first token, so a thinking
	// model is asked not to think (its reasoning is not in the language).
	c.Extra = map[string]any{"enable_thinking": *think && !cf.on()}
	x, err := cf.index(m, ctx.Stderr)
	if err != nil {
		return err
	}
	o := runtime.GenerateOptions{MaxTokens: *n, Sampling: sampling.sampling(), Stop: stops, Spec: spec}
	if !o.Sampling.Greedy() && o.Sampling.Unseeded {
		o.Sampling.Seed, o.Sampling.Unseeded = runtime.NewSeed(), false
		fmt.Fprintf(ctx.Stderr, "akunu: seed %d (--seed %d replays this conversation)\n", o.Sampling.Seed, o.Sampling.Seed)
	}

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
			c.Reset()
			fmt.Fprintln(ctx.Stderr, "akunu: the conversation starts over")
			continue
		}
		if x != nil {
			o.Processors = []runtime.Processor{runtime.NewConstraint(x)} // each answer starts the grammar over
		}
		if err := turn(ctx, c, line, o); err != nil {
			return err
		}
	}
}

// plainTemplate is the turn format of a model whose file has no chat
// template: text a base model continues sensibly, with nothing that needs
// special tokens. plainUserTurn ends an answer where the model would go on
// to write the user's next turn.
const (
	plainTemplate = `{{- bos_token -}}
{%- for message in messages -%}
{%- if message['role'] == 'system' -%}{{- message['content'] + '\n\n' -}}
{%- elif message['role'] == 'user' -%}{{- 'User: ' + message['content'] + '\n' -}}
{%- else -%}{{- 'Assistant:' + message['content'] + '\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- 'Assistant:' -}}{%- endif -%}`
	plainUserTurn = "\nUser:"
)

// turn streams one answer: reasoning dimmed, then the content.
func turn(ctx *cli.Context, c *conversation.Conversation, line string, o runtime.GenerateOptions) error {
	run, stop := interruptible()
	defer stop()
	thinking := false
	rep, err := c.Turn(run, line, o, func(d conversation.Delta) bool {
		if d.Reasoning != "" {
			if !thinking {
				fmt.Fprint(ctx.Stdout, "\x1b[2m")
				thinking = true
			}
			fmt.Fprint(ctx.Stdout, d.Reasoning)
		}
		if d.Content != "" {
			if thinking {
				fmt.Fprint(ctx.Stdout, "\x1b[0m\n\n")
				thinking = false
			}
			fmt.Fprint(ctx.Stdout, d.Content)
		}
		return true
	})
	if thinking {
		fmt.Fprint(ctx.Stdout, "\x1b[0m")
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(ctx.Stdout)
	st := stats(c.Model(), rep.Result, nil)
	fmt.Fprintf(ctx.Stderr, "akunu: fed %d of %d prompt tokens (%.1f tok/s); %d tokens at %.1f tok/s; stop: %s\n",
		rep.Fed, rep.Rendered, st.PromptTokS, len(rep.Result.Tokens), st.DecodeTokS, st.Stop)
	return nil
}
