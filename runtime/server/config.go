package server

import (
	"fmt"
	"io"
	"time"

	"github.com/akunu-dev/akunu/runtime"
)

// Config configures a Server. The zero value of a field means its default.
type Config struct {
	// Plans are the compiled plans to serve; a model's id is its plan's
	// file name without ".plan".
	Plans []string
	// Models names each plan's GGUF file, by plan path ("" or missing: the
	// plan's recorded file name next to the plan).
	Models map[string]string
	// VerifyWeights reads every byte of each model as it loads and holds
	// it to its plan's full weight sums (runtime.Options.VerifyWeights);
	// every load checks the sampled sums regardless.
	VerifyWeights bool
	// Parallel is the requests one model decodes at once, in one batched
	// step: its KV sequence slots (default 4, at most the plan's
	// max_seqs).
	Parallel int
	// Ctx bounds one request's prompt plus max_tokens (0: the plan's
	// context; larger than the plan's is refused).
	Ctx int
	// Template is a built-in chat template (chatml, llama3, gemma) for a
	// model whose file has none.
	Template string
	// TemplateSource, when set, is a chat template (Jinja source) used for
	// every model instead of its own (llama.cpp's --chat-template-file).
	TemplateSource string
	// ToolFormat is every model's tool-call format (hermes, llama3,
	// mistral, none); empty: each model's chat template declares its own
	// (toolcall.FormatOf, docs/adr/0016-tool-calls.md).
	ToolFormat string
	// APIKeys, when any, are the keys a request must bear
	// (Authorization: Bearer KEY); /health needs none.
	APIKeys []string
	// RateLimit is the requests a minute one key (or, without keys, one
	// client address) may make (0: no limit).
	RateLimit int
	// MaxQueue is the requests one model holds waiting for a slot; more
	// are refused with 503 (default 64).
	MaxQueue int
	// IdleUnload unloads a model that served nothing for this long (0:
	// never); the next request loads it again.
	IdleUnload time.Duration
	// MemoryBudget bounds the bytes of the loaded models (weights, KV
	// cache, scratch); loading one that does not fit unloads the least
	// recently used idle models first (0: no bound).
	MemoryBudget int64
	// MaxBody bounds a request body's bytes (default 8 MiB).
	MaxBody int64
	// PrefillRows bounds the prompt rows one batched step feeds (0: the
	// plan's prefill chunk); BusyPrefillRows bounds them while other
	// requests are generating, so that a long prompt delays their next
	// token by a short chunk (default 64).
	PrefillRows, BusyPrefillRows int
	// Timeouts: reading a request's header and body, writing one piece of
	// a response, and an idle keep-alive connection (defaults 10 s, 60 s,
	// 60 s and 120 s).
	HeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// Backend makes the backend the models share (nil: the CPU with
	// Threads).
	Backend func() (runtime.Backend, error)
	Threads int
	// Log receives one line per request in and out, and the server's
	// events (nil: none).
	Log io.Writer
	// Name is the owner reported by /v1/models (default "akunu").
	Name string
	// Spec decodes a model speculatively, by plan path (the key "" for
	// every plan without its own): its slots' generations draft and
	// verify their drafts as rows of each batched step.
	Spec map[string]Spec
}

// Spec is one model's speculative decoding (docs/adr/0014-speculative.md).
type Spec struct {
	// Mode is "ngram" (prompt lookup) or "draft" (DraftPlan, a smaller
	// model of the same vocabulary, loaded beside the target on its
	// backend with a session per slot).
	Mode string
	// DraftPlan and DraftModel: the draft model's plan and GGUF file (""
	// for the plan's recorded file next to it).
	DraftPlan, DraftModel string
	// Max and Min bound the drafts a step verifies (0: the runtime's
	// defaults); the length adapts to the acceptance rate in between.
	Max, Min int
	// Vocab is the draft model's shortlist (runtime.ModelDrafter's
	// SetShortlist): the token ids below it and the conversation's; 0
	// every token.
	Vocab int
}

// specFor is the Spec of the plan at path, if any.
func (c Config) specFor(path string) (Spec, bool) {
	if s, ok := c.Spec[path]; ok {
		return s, s.Mode != ""
	}
	s, ok := c.Spec[""]
	return s, ok && s.Mode != ""
}

func (c Config) withDefaults() (Config, error) {
	if len(c.Plans) == 0 {
		return c, fmt.Errorf("server: no plan to serve")
	}
	if c.Parallel == 0 {
		c.Parallel = 4
	}
	if c.MaxQueue == 0 {
		c.MaxQueue = 64
	}
	if c.BusyPrefillRows == 0 {
		c.BusyPrefillRows = 64
	}
	if c.MaxBody == 0 {
		c.MaxBody = 8 << 20
	}
	if c.HeaderTimeout == 0 {
		c.HeaderTimeout = 10 * time.Second
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = 60 * time.Second
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 60 * time.Second
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 120 * time.Second
	}
	if c.Name == "" {
		c.Name = "akunu"
	}
	switch {
	case c.Parallel < 1:
		return c, fmt.Errorf("server: parallel %d: want at least 1", c.Parallel)
	case c.MaxQueue < 1:
		return c, fmt.Errorf("server: max queue %d: want at least 1", c.MaxQueue)
	case c.Ctx < 0, c.RateLimit < 0, c.IdleUnload < 0, c.MemoryBudget < 0, c.MaxBody < 0, c.PrefillRows < 0, c.BusyPrefillRows < 0:
		return c, fmt.Errorf("server: a negative limit")
	}
	for path, s := range c.Spec {
		switch {
		case s.Mode != "" && s.Mode != "ngram" && s.Mode != "draft":
			return c, fmt.Errorf("server: spec of %q: mode %q: want ngram or draft", path, s.Mode)
		case s.Mode == "draft" && s.DraftPlan == "":
			return c, fmt.Errorf("server: spec of %q: mode draft needs a draft plan", path)
		case s.Max < 0 || s.Min < 0 || s.Max > 31 || (s.Max > 0 && s.Min > s.Max):
			return c, fmt.Errorf("server: spec of %q: drafts min %d, max %d: want 0 ≤ min ≤ max ≤ 31", path, s.Min, s.Max)
		}
	}
	for _, k := range c.APIKeys {
		if k == "" {
			return c, fmt.Errorf("server: an empty API key")
		}
	}
	return c, nil
}
