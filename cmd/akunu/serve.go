package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/runtime/server"
)

func init() {
	app.Register(cli.Command{
		Name:    "serve",
		Summary: "an OpenAI-compatible HTTP server: chat and text completions, streamed, many requests decoded together",
		Usage: "PLAN [PLAN...] [--host 127.0.0.1] [--port 8080] [--parallel N] [--ctx N] [--api-key KEY | --api-key-file F]\n" +
			"       [--rate-limit RPM] [--max-queue N] [--idle-unload DUR] [--memory-budget BYTES] [--template NAME | --chat-template-file F] [--backend auto|cuda|metal|cpu] [--threads N]\n" +
			"       [--spec ngram|draft [--draft PLAN] [--draft-max K] [--draft-min K] [--draft-vocab N]] [--spec-plan PLAN=ngram|draft:DRAFT|none ...]",
		Run: runServe,
	})
}

// runServe serves the plans until SIGINT or SIGTERM, then drains: the
// requests in flight finish (up to --drain), new ones are refused.
func runServe(ctx *cli.Context, args []string) error {
	fs := ctx.Flags("serve")
	host := fs.String("host", "127.0.0.1", "the address to listen on (0.0.0.0: every interface)")
	port := fs.Int("port", 8080, "the port (0: any free one)")
	parallel := fs.Int("parallel", 4, "requests one model decodes at once, in one batched step (its KV slots)")
	ctxLen := fs.Int("ctx", 0, "the context one request may use, prompt plus max_tokens (0: the plan's)")
	var keys stringsFlag
	fs.Var(&keys, "api-key", "require this key (Authorization: Bearer KEY); repeatable")
	keyFile := fs.String("api-key-file", "", "require one of the keys in this file (one a line)")
	rate := fs.Int("rate-limit", 0, "requests a minute per key, or per client address without keys (0: no limit)")
	maxQueue := fs.Int("max-queue", 64, "requests one model holds waiting for a slot; more are answered 503")
	idle := fs.Duration("idle-unload", 0, "unload a model idle this long (0: never); the next request loads it again")
	budget := fs.String("memory-budget", "0", "bytes the loaded models may hold (K, M, G suffixes; 0: no bound): the least recently used idle model is unloaded to fit another")
	tmplName := fs.String("template", "", "a built-in chat template (chatml, llama3, gemma) for models whose file has none")
	tmplFile := fs.String("chat-template-file", "", "a chat template (Jinja) for every model, instead of their own")
	toolFormat := fs.String("tool-format", "", "how every model writes tool calls: hermes, llama3, mistral or none (default: what its chat template renders)")
	drain := fs.Duration("drain", 30*time.Second, "on SIGTERM, how long the requests in flight may take to finish")
	prefill := fs.Int("prefill-rows", 0, "prompt rows one batched step feeds at most (0: the plan's prefill chunk)")
	busyPrefill := fs.Int("prefill-rows-busy", 64, "prompt rows a step feeds while other requests generate: a long prompt delays their next token by this chunk")
	lf := addLoadFlags(fs)
	spf := addSpecFlags(fs)
	var specPlans stringsFlag
	fs.Var(&specPlans, "spec-plan", "one served plan's speculation, over --spec's: PLAN=ngram, PLAN=draft:DRAFT.plan or PLAN=none; repeatable")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	// The server would replace a 0 with its default: refuse it instead.
	if err := firstError(intIn("port", *port, 0, 65535), intIn("parallel", *parallel, 1, plans.MaxSeqs),
		atLeast("ctx", *ctxLen, 0, " (0: the plan's)"), atLeast("rate-limit", *rate, 0, " (0: no limit)"),
		atLeast("max-queue", *maxQueue, 1, ""), notNegative("idle-unload", *idle), notNegative("drain", *drain),
		atLeast("prefill-rows", *prefill, 0, " (0: the plan's chunk)"), atLeast("prefill-rows-busy", *busyPrefill, 1, ""),
		lf.check(), spf.check()); err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("%w: want at least one PLAN", cli.ErrUsage)
	}
	if *lf.model != "" && len(pos) != 1 {
		return fmt.Errorf("%w: --model names the GGUF file of one plan; with several, keep each next to its plan", cli.ErrUsage)
	}
	if *keyFile != "" {
		b, err := os.ReadFile(*keyFile)
		if err != nil {
			return err
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				keys = append(keys, l)
			}
		}
		if len(keys) == 0 {
			return fmt.Errorf("--api-key-file %s holds no key", *keyFile)
		}
	}
	mem, err := parseBytes(*budget)
	if err != nil {
		return cli.FlagError{Flag: "memory-budget", Msg: fmt.Sprintf("%q: want a byte count like 8G or 512M", *budget)}
	}
	var tmplSrc string
	if *tmplFile != "" {
		b, err := os.ReadFile(*tmplFile)
		if err != nil {
			return err
		}
		tmplSrc = string(b)
	}
	models := map[string]string{}
	if *lf.model != "" {
		models[pos[0]] = *lf.model
	}
	for _, plan := range pos {
		if err := lf.checkPlan(ctx, plan, models[plan]); err != nil {
			return err
		}
	}
	spec, err := serveSpecs(spf, specPlans, pos)
	if err != nil {
		return err
	}
	srv, err := server.New(server.Config{Spec: spec, Plans: pos, Models: models, VerifyWeights: *lf.verifyWeights, Parallel: *parallel, Ctx: *ctxLen, Template: *tmplName, TemplateSource: tmplSrc, ToolFormat: *toolFormat,
		APIKeys: keys, RateLimit: *rate, MaxQueue: *maxQueue, IdleUnload: *idle, MemoryBudget: mem, PrefillRows: *prefill, BusyPrefillRows: *busyPrefill,
		Backend: func() (runtime.Backend, error) {
			// one backend for every model served: the first plan's target chooses it
			p, err := plans.ReadFile(pos[0])
			if err != nil {
				return nil, err
			}
			return lf.newBackend(ctx, p.Header.Target)
		}, Log: ctx.Stderr})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return err
	}
	url := "http://" + l.Addr().String()
	fmt.Fprintf(ctx.Stderr, "akunu: serving %s on %s (OpenAI base URL %s/v1)\n", strings.Join(srv.Models(), ", "), url, url)
	fmt.Fprintln(ctx.Stdout, url)

	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case err := <-served:
		return err
	case s := <-sig:
		fmt.Fprintf(ctx.Stderr, "akunu: %v: finishing the requests in flight (up to %s; again to stop now)\n", s, *drain)
	}
	dctx, cancel := context.WithTimeout(context.Background(), *drain)
	defer cancel()
	go func() {
		<-sig
		cancel()
	}()
	err = srv.Shutdown(dctx)
	if e := <-served; e != nil && !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		fmt.Fprintln(ctx.Stderr, "akunu: stopped with requests cut short")
		return nil
	}
	fmt.Fprintln(ctx.Stderr, "akunu: stopped")
	return err
}

// parseBytes reads a byte count with an optional K, M, G or T suffix
// (powers of 1024; a trailing B or iB is allowed).
func parseBytes(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("%q is not a byte count (like 8G or 512M)", s)
	}
	return int64(v * float64(mult)), nil
}

// serveSpecs is the server's speculation by plan: --spec's for every plan
// (the key ""), then each --spec-plan PLAN=MODE[:DRAFT] for its plan
// (none: no speculation), the draft lengths --draft-max and --draft-min's.
func serveSpecs(spf specFlags, perPlan []string, plans []string) (map[string]server.Spec, error) {
	spec := map[string]server.Spec{}
	if *spf.mode != "" {
		spec[""] = server.Spec{Mode: *spf.mode, DraftPlan: *spf.draft, DraftModel: *spf.draftModel, Max: *spf.max, Min: *spf.min, Vocab: *spf.vocab}
	}
	for _, v := range perPlan {
		plan, mode, ok := strings.Cut(v, "=")
		mode, draft, hasDraft := strings.Cut(mode, ":")
		bad := func(msg string) error { return cli.FlagError{Flag: "spec-plan", Msg: fmt.Sprintf("%q: %s", v, msg)} }
		switch {
		case !ok || plan == "":
			return nil, bad("want PLAN=ngram, PLAN=draft:DRAFT.plan or PLAN=none")
		case !slices.Contains(plans, plan):
			return nil, bad(fmt.Sprintf("%s is not a plan this server serves (%s)", plan, strings.Join(plans, ", ")))
		case mode != "ngram" && mode != "draft" && mode != "none":
			return nil, bad(fmt.Sprintf("mode %q: want ngram, draft or none", mode))
		case mode == "draft" && draft == "":
			return nil, bad("draft needs its plan: PLAN=draft:DRAFT.plan")
		case mode != "draft" && hasDraft:
			return nil, bad(fmt.Sprintf("a draft plan is for mode draft, not %s", mode))
		}
		if _, dup := spec[plan]; dup {
			return nil, bad(fmt.Sprintf("%s has a --spec-plan already", plan))
		}
		s := server.Spec{Max: *spf.max, Min: *spf.min, Vocab: *spf.vocab}
		if mode != "none" {
			s.Mode, s.DraftPlan = mode, draft
		}
		spec[plan] = s
	}
	if len(spec) == 0 {
		return nil, nil
	}
	return spec, nil
}
