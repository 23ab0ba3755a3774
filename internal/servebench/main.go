package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	var c config
	flag.StringVar(&c.akunu, "akunu", "bin/akunu", "the akunu binary that serves PLAN")
	flag.StringVar(&c.url, "url", "", "bench a server already running at this base URL instead of starting one (PLAN is then only a label)")
	streams := flag.String("streams", "1,4,8,16", "the concurrencies to measure, comma-separated")
	flag.IntVar(&c.tokens, "tokens", 128, "tokens each stream generates (max_tokens, with ignore_eos)")
	flag.IntVar(&c.prompt, "prompt", 64, "prompt tokens of each stream")
	flag.IntVar(&c.reps, "reps", 3, "repetitions of each concurrency")
	flag.IntVar(&c.threads, "threads", 0, "the server's --threads (0: its default, every core)")
	flag.StringVar(&c.jsonOut, "json", "", "also write every raw number to this JSON file")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "the most one round may take")
	procs := flag.Int("procs", 0, "the client's GOMAXPROCS (0: Go's default): fewer leave the server's threads their cores")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: servebench [flags] PLAN   (or: servebench -url http://HOST:PORT [flags] [LABEL])")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	var err error
	if c.streams, err = parseStreams(*streams); err != nil {
		fmt.Fprintln(os.Stderr, "servebench: -streams:", err)
		os.Exit(2)
	}
	if flag.NArg() > 1 || (flag.NArg() == 0 && c.url == "") || c.tokens < 2 || c.prompt < 1 || c.reps < 1 {
		flag.Usage()
		os.Exit(2)
	}
	c.plan = flag.Arg(0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, &c); err != nil {
		fmt.Fprintln(os.Stderr, "servebench:", err)
		os.Exit(1)
	}
}

type config struct {
	akunu, url, plan, jsonOut     string
	streams                       []int
	tokens, prompt, reps, threads int
	timeout                       time.Duration
}

// parseStreams reads "1,4,8,16": positive, ascending, no repeats.
func parseStreams(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// model is what /v1/models says of the served model.
type model struct {
	ID   string `json:"id"`
	Meta struct {
		Ctx   int `json:"n_ctx"`
		Vocab int `json:"n_vocab"`
		Slots int `json:"slots"`
	} `json:"meta"`
}

// report is the -json file.
type report struct {
	Machine    string    `json:"machine"`
	GOMAXPROCS int       `json:"client_gomaxprocs"`
	Plan       string    `json:"plan"`
	Model      string    `json:"model"`
	URL        string    `json:"url"`
	Threads    int       `json:"threads"`
	Tokens     int       `json:"tokens"`
	Prompt     int       `json:"prompt"`
	Reps       int       `json:"reps"`
	Started    time.Time `json:"started"`
	Levels     []*level  `json:"levels"`
}

func run(ctx context.Context, c *config) error {
	base := strings.TrimRight(c.url, "/")
	var srv *server
	if base == "" {
		var err error
		if srv, err = startServer(ctx, c.akunu, c.plan, c.streams[len(c.streams)-1], c.threads); err != nil {
			return err
		}
		defer srv.stop()
		base = srv.url
	}
	maxS := c.streams[len(c.streams)-1]
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: maxS + 4, DisableCompression: true}}
	m, err := ready(ctx, hc, base, srv)
	if err != nil {
		return err
	}
	switch {
	case m.Meta.Slots > 0 && maxS > m.Meta.Slots:
		return fmt.Errorf("%s has %d slots: -streams %d would queue requests, not decode them together", base, m.Meta.Slots, maxS)
	case m.Meta.Ctx > 0 && c.prompt+c.tokens > m.Meta.Ctx:
		return fmt.Errorf("-prompt %d + -tokens %d exceed the served context of %d tokens", c.prompt, c.tokens, m.Meta.Ctx)
	case m.Meta.Vocab < 2:
		return fmt.Errorf("%s reports a vocabulary of %d tokens", base, m.Meta.Vocab)
	}
	rep := &report{Machine: machine(), GOMAXPROCS: runtime.GOMAXPROCS(0), Plan: cmp.Or(c.plan, base), Model: m.ID, URL: base,
		Threads: c.threads, Tokens: c.tokens, Prompt: c.prompt, Reps: c.reps, Started: time.Now()}
	b := &bench{c: c, hc: hc, base: base, model: m, srv: srv}
	// Warm-up: every slot once, a few tokens each, so that the first
	// measured round pays for no first-touch allocation or page fault.
	fmt.Fprintf(os.Stderr, "servebench: %s ready; warming up %d streams\n", base, maxS)
	if _, err := b.round(ctx, maxS, -1, min(8, c.tokens)); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	for _, s := range c.streams {
		var rs []*round
		for i := range c.reps {
			r, err := b.round(ctx, s, i, c.tokens)
			if err != nil {
				return fmt.Errorf("%d streams, rep %d: %w", s, i+1, err)
			}
			fmt.Fprintf(os.Stderr, "servebench: %2d streams, rep %d: %.1f tok/s aggregate, %.0f ms\n", s, i+1, r.Aggregate, r.WallMS)
			rs = append(rs, r)
		}
		rep.Levels = append(rep.Levels, summarizeLevel(rs))
	}
	scale(rep.Levels)
	printTable(os.Stdout, rep)
	if c.jsonOut != "" {
		out, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(c.jsonOut, append(out, '\n'), 0o644); err != nil {
			return err
		}
	}
	if srv != nil {
		return srv.stop()
	}
	return nil
}

// bench runs rounds against one server.
type bench struct {
	c     *config
	hc    *http.Client
	base  string
	model *model
	srv   *server
	next  int // the next request's number: every prompt of a run is distinct
}

// round starts s streams together and waits for them all.
func (b *bench) round(ctx context.Context, s, rep, tokens int) (*round, error) {
	ctx, cancel := context.WithTimeout(ctx, b.c.timeout)
	defer cancel()
	r := &round{Streams: s, Rep: rep, Requests: make([]*request, s)}
	bodies := make([]completionBody, s)
	for i := range s {
		r.Requests[i] = &request{ID: b.next, PromptTokens: b.c.prompt}
		bodies[i] = completionBody{Model: b.model.ID, Prompt: promptFor(b.next, b.c.prompt, b.model.Meta.Vocab),
			MaxTokens: tokens, Temperature: 0, IgnoreEOS: true, Stream: true}
		b.next++
	}
	var wg sync.WaitGroup
	errs := make([]error, s)
	begin := make(chan struct{})
	var start time.Time
	for i := range s {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-begin
			errs[i] = complete(ctx, b.hc, b.base, bodies[i], start, r.Requests[i])
			if errs[i] != nil {
				cancel() // one failure ends the round
			}
		}()
	}
	start = time.Now()
	close(begin)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		if b.srv != nil {
			if dead := b.srv.deadWithin(time.Second); dead != nil {
				return nil, dead
			}
		}
		return nil, firstError(errs)
	}
	for _, q := range r.Requests {
		if q.Predicted != tokens {
			return nil, fmt.Errorf("request %d generated %d tokens, asked %d (finish_reason %q): is ignore_eos honoured?", q.ID, q.Predicted, tokens, q.Finish)
		}
	}
	r.summarize()
	return r, nil
}

// firstError is the error that ended a round, not those it caused.
func firstError(errs []error) error {
	for _, e := range errs {
		if e != nil && !errors.Is(e, context.Canceled) {
			return e
		}
	}
	return errors.Join(errs...)
}

// promptFor is request k's prompt: n token ids, distinct from every other
// request's from the first token on, so that the server's prefix reuse
// (a slot keeps the KV of its last request) never skips any prompt work.
// The first id is k's own; the rest are drawn from a generator seeded
// with k, so a run's prompts are the same every time. Ids keep off both
// ends of the vocabulary, where special and byte tokens usually sit.
func promptFor(k, n, vocab int) []int32 {
	lo := min(1000, vocab/4)
	hi := max(lo+1, vocab-vocab/16)
	rng := rand.New(rand.NewPCG(1, uint64(k)))
	p := make([]int32, n)
	p[0] = int32(lo + k%(hi-lo))
	for i := 1; i < n; i++ {
		p[i] = int32(lo + rng.IntN(hi-lo))
	}
	return p
}

// ready waits for /health to say ok, asks /v1/models which model is
// served and has it loaded.
func ready(ctx context.Context, hc *http.Client, base string, srv *server) (*model, error) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		resp, err := get(ctx, hc, base+"/health")
		if err == nil && resp.StatusCode == http.StatusOK {
			resp.Body.Close()
			break
		}
		if err == nil {
			resp.Body.Close()
		}
		if srv != nil {
			if dead := srv.dead(); dead != nil {
				return nil, dead
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("%s/health: not ok after 5 minutes (last: %v)", base, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	resp, err := get(ctx, hc, base+"/v1/models")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list struct{ Data []model }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("%s/v1/models: %v", base, err)
	}
	if len(list.Data) != 1 {
		return nil, fmt.Errorf("%s/v1/models: %d models served; servebench wants one", base, len(list.Data))
	}
	m := &list.Data[0]
	// The server loads a model at its first request; load it now, so that
	// a plan that cannot load fails here, plainly, and no round pays for it.
	body, _ := json.Marshal(map[string]string{"model": m.ID})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/models/load", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err = hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		return nil, fmt.Errorf("POST %s/v1/models/load: %s: %s", base, resp.Status, strings.TrimSpace(string(msg)))
	}
	return m, nil
}

func get(ctx context.Context, hc *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return hc.Do(req)
}

// machine names the CPU (Linux's /proc/cpuinfo "model name") and its
// cores.
func machine() string {
	name := runtime.GOOS + "/" + runtime.GOARCH
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				name = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d cores", name, runtime.NumCPU())
}

// printTable writes the markdown table of the levels.
func printTable(w io.Writer, r *report) {
	threads := "server default (every core)"
	if r.Threads > 0 {
		threads = strconv.Itoa(r.Threads)
	}
	fmt.Fprintf(w, "%s, client GOMAXPROCS %d · plan %s (%s) · threads %s · %d prompt + %d generated tokens a stream · reps %d\n\n",
		r.Machine, r.GOMAXPROCS, filepath.Base(r.Plan), r.Model, threads, r.Prompt, r.Tokens, r.Reps)
	fmt.Fprintln(w, "| streams | aggregate tok/s (median, min–max) | per-stream tok/s | × one stream | TTFT p50 / p99 ms | gap p50 / p99 ms | worst gap ms | end-to-end tok/s |")
	fmt.Fprintln(w, "|--:|--:|--:|--:|--:|--:|--:|--:|")
	var notes []string
	for _, l := range r.Levels {
		x := "–"
		if !math.IsNaN(l.Scaling) {
			x = fmt.Sprintf("%.2f×", l.Scaling)
		}
		fmt.Fprintf(w, "| %d | %.1f (%.1f–%.1f) | %.1f | %s | %.0f / %.0f | %.1f / %.1f | %.0f | %.1f |\n",
			l.Streams, l.Aggregate.Median, l.Aggregate.Min, l.Aggregate.Max, l.PerStream, x,
			l.TTFT50, l.TTFT99, l.Gap50, l.Gap99, l.GapMax, l.EndToEnd.Median)
		if l.SharedTokens > 0 {
			notes = append(notes, fmt.Sprintf("%d streams: %d of %d tokens (%.1f%%) came in a chunk behind another token; their chunks' gaps are split among them",
				l.Streams, l.SharedTokens, l.Tokens, 100*float64(l.SharedTokens)/float64(l.Tokens)))
		}
		if l.Cached > 0 {
			notes = append(notes, fmt.Sprintf("%d streams: the server reused %d cached prompt tokens", l.Streams, l.Cached))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "aggregate: (all tokens − 1) / (first first token → last last token); per-stream: the median stream's (n − 1) / (its first → last token);")
	fmt.Fprintln(w, "end-to-end: all tokens / (start → last [DONE]); gaps pool every stream's inter-token gaps over the reps.")
	for _, n := range notes {
		fmt.Fprintln(w, "note:", n)
	}
}
