package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/runtime/chat"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
	"github.com/akunu-dev/akunu/runtime/toolcall"
)

// entry is one servable model: its plan (read at start), and its engine
// while loaded.
type entry struct {
	id      string
	path    string // the plan
	model   string // the GGUF file
	plan    *plans.Plan
	tmpl    *chat.Template  // nil: no chat template
	tmplErr error           // why there is none
	tools   toolcall.Format // how the model writes tool calls (ADR 0016)
	tok     *tokenizer.Tokenizer
	ctx     int   // a request's context
	memory  int64 // bytes loaded (estimate: every buffer, KV per slot)
	created time.Time
	// What the plan does: generate (decode programs), embed (embedding
	// programs), or both (a decoder compiled with --pooling).
	generates, embeds bool
	// parallel is the generation slots (a session each; 0 for an
	// embedding model); seqs the KV sequence slots the model loads with:
	// parallel, plus the free ones an embedding call packs inputs into.
	parallel, seqs int
	// embedDim is the length of the model's embeddings and maxEmbed the
	// most tokens one input may have (runtime.Model's EmbeddingDim and
	// MaxEmbedTokens, read from the plan so that a request is checked
	// before its model loads; within ctx).
	embedDim, maxEmbed int

	// Under registry.mu.
	eng     *engine
	loading chan struct{} // closed when the load in flight ends
	loadErr error
	used    time.Time
}

// registry is the server's models: loading on demand, unloading when idle
// or when another needs the memory.
type registry struct {
	cfg Config
	met *metrics
	log func(format string, args ...any)

	mu      sync.Mutex
	entries []*entry
	be      runtime.Backend
	// lock is the backend's: one submission (or load) at a time.
	lock   sync.Mutex
	closed bool
}

// newRegistry reads every plan's header (refusing plans that cannot be
// served) without loading a model.
func newRegistry(cfg Config, met *metrics, logf func(string, ...any)) (*registry, error) {
	r := &registry{cfg: cfg, met: met, log: logf}
	seen := map[string]string{}
	for _, path := range cfg.Plans {
		p, err := plans.ReadFile(path)
		if err != nil {
			return nil, err
		}
		id := strings.TrimSuffix(filepath.Base(path), ".plan")
		if prev, ok := seen[strings.ToLower(id)]; ok {
			return nil, fmt.Errorf("server: %s and %s would both be model %q: rename one", prev, path, id)
		}
		seen[strings.ToLower(id)] = path
		e := &entry{id: id, path: path, plan: p, ctx: int(p.Model.HParams.Ctx), created: time.Now()}
		e.kinds()
		if cfg.Ctx > 0 {
			// An embedding model's context is its encoder's (often 512): a
			// --ctx meant for the decoders beside it only bounds it.
			if cfg.Ctx > e.ctx && e.generates {
				return nil, fmt.Errorf("server: --ctx %d exceeds %s's context of %d (compile the plan with a larger one)", cfg.Ctx, path, e.ctx)
			}
			e.ctx = min(e.ctx, cfg.Ctx)
		}
		e.maxEmbed = min(e.maxEmbed, e.ctx)
		if limit := int(p.Header.Target.Tuning.Seqs()); e.generates && cfg.Parallel > limit {
			return nil, fmt.Errorf("server: --parallel %d exceeds %s's %d sequence slots (compile it with --max-seqs %d)", cfg.Parallel, path, limit, cfg.Parallel)
		}
		if e.generates {
			e.parallel = cfg.Parallel
		}
		e.seqs = seqsOf(p, e.parallel, e.embeds)
		e.model = cfg.Models[path]
		if e.model == "" {
			e.model = runtime.ModelPathFor(path, p)
		}
		if fi, err := os.Stat(e.model); err == nil {
			e.created = fi.ModTime()
		}
		if e.tok, err = runtime.Tokenizer(&p.Model.Tokenizer); err != nil {
			return nil, fmt.Errorf("server: %s: %w", path, err)
		}
		switch {
		case !e.generates:
			e.tmplErr = errors.New("an embedding model does not chat")
		case cfg.TemplateSource != "":
			if e.tmpl, err = chat.ParseNamed("--chat-template-file", cfg.TemplateSource); err != nil {
				return nil, fmt.Errorf("server: %w", err)
			}
		default:
			e.tmpl, e.tmplErr = chat.Select(p.Model.Tokenizer.ChatTemplate, cfg.Template)
		}
		// Derived from the template in use (a --template or
		// --chat-template-file may replace the plan's), once per model
		// that writes text.
		if e.generates {
			if e.tools, err = toolcall.FormatFor(e.tmpl, cfg.ToolFormat); err != nil {
				if cfg.ToolFormat != "" {
					return nil, fmt.Errorf("server: --tool-format: %w", err)
				}
				logf("server: %s: %v (its output is all content)", path, err)
			}
		}
		e.memory = memoryOf(p, e.seqs)
		if cfg.MemoryBudget > 0 && e.memory > cfg.MemoryBudget {
			return nil, fmt.Errorf("server: %s needs %d bytes with %d slots, more than the memory budget of %d", path, e.memory, e.seqs, cfg.MemoryBudget)
		}
		r.entries = append(r.entries, e)
	}
	return r, nil
}

// kinds reads what e's plan does (generate, embed) and, for embedding,
// the length of its vectors and the most tokens of one input, as
// runtime.Model's EmbeddingDim and MaxEmbedTokens do.
func (e *entry) kinds() {
	p := e.plan
	for _, pr := range p.Programs {
		if pr.Kind == plans.KindEmbed {
			e.embeds = true
			e.maxEmbed = max(e.maxEmbed, int(pr.Batch))
		} else {
			e.generates = true
		}
	}
	e.maxEmbed = min(e.maxEmbed, int(p.Model.HParams.Ctx))
	for _, b := range p.Buffers {
		if b.Kind == plans.BufIO && b.Role == "embeddings" && len(b.Shape) == 2 {
			e.embedDim = int(b.Shape[0])
		}
	}
}

// embedKVBudget bounds the KV cache that a model's embedding calls pack
// their inputs into: each input of a replay takes a sequence slot of the
// plan's whole context (akunu embed loads with the same bound).
const embedKVBudget = 1 << 30

// seqsOf is the KV sequence slots to load p with: parallel for its
// generations and, when it embeds, as many more as one embedding replay
// packs inputs into (what parallel leaves of the plan's max_seqs), within
// embedKVBudget, at least one for an embedding model. A model that
// generates on every slot of its plan embeds in the slots its idle
// generations lend (engine.embedStep).
func seqsOf(p *plans.Plan, parallel int, embeds bool) int {
	if !embeds {
		return parallel
	}
	var slot uint64
	for _, b := range p.Buffers {
		if b.Kind == plans.BufKV {
			slot += b.Size
		}
	}
	spare := int(p.Header.Target.Tuning.Seqs()) - parallel
	if slot > 0 {
		spare = min(spare, int(embedKVBudget/slot))
	}
	if parallel == 0 {
		spare = max(spare, 1)
	}
	return parallel + max(spare, 0)
}

// memoryOf estimates the bytes a model holds when loaded with seqs slots:
// every buffer of the plan, the KV cache's once per slot.
func memoryOf(p *plans.Plan, seqs int) int64 {
	var n int64
	for _, b := range p.Buffers {
		if b.Kind == plans.BufKV {
			n += int64(b.Size) * int64(seqs)
		} else {
			n += int64(b.Size)
		}
	}
	return n
}

// find resolves a model id: exactly, then case-insensitively; "" names
// the only model when there is one.
func (r *registry) find(id string) *entry {
	if id == "" && len(r.entries) == 1 {
		return r.entries[0]
	}
	for _, e := range r.entries {
		if e.id == id {
			return e
		}
	}
	for _, e := range r.entries {
		if strings.EqualFold(e.id, id) {
			return e
		}
	}
	return nil
}

// errNoMemory: a model does not fit beside the busy ones.
var errNoMemory = errors.New("the memory budget is taken by models that are busy")

// acquire returns e's engine, loading the model first when it is not
// loaded (and unloading idle models when the memory budget needs it).
func (r *registry) acquire(ctx context.Context, e *entry) (*engine, error) {
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return nil, errClosed
		}
		if e.eng != nil && !e.eng.isClosed() {
			e.used = time.Now()
			eng := e.eng
			r.mu.Unlock()
			return eng, nil
		}
		if wait := e.loading; wait != nil {
			r.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			r.mu.Lock()
			err := e.loadErr
			r.mu.Unlock()
			if err != nil {
				return nil, err
			}
			continue
		}
		victims, err := r.makeRoom(e)
		if err != nil {
			r.mu.Unlock()
			return nil, err
		}
		e.loading, e.loadErr = make(chan struct{}), nil
		r.mu.Unlock()
		for _, v := range victims {
			r.log("unloading %s to make room for %s (memory budget %d bytes)", v.id, e.id, r.cfg.MemoryBudget)
			v.close(context.Background())
			r.met.loaded(v.id, true)
		}
		r.load(e)
	}
}

// makeRoom picks the idle loaded models to unload, least recently used
// first, so that e fits in the memory budget; they leave the registry at
// once (under mu).
func (r *registry) makeRoom(e *entry) ([]*engine, error) {
	if r.cfg.MemoryBudget == 0 {
		return nil, nil
	}
	used := int64(0)
	var idle []*entry
	for _, o := range r.entries {
		if o.eng == nil && o.loading == nil {
			continue
		}
		used += o.memory
		if o.eng != nil {
			if ok, _ := o.eng.idle(); ok {
				idle = append(idle, o)
			}
		}
	}
	sort.Slice(idle, func(i, j int) bool { return idle[i].used.Before(idle[j].used) })
	var victims []*engine
	for used+e.memory > r.cfg.MemoryBudget {
		if len(idle) == 0 {
			return nil, fmt.Errorf("%w: %s needs %d bytes and %d of %d are in use", errNoMemory, e.id, e.memory, used, r.cfg.MemoryBudget)
		}
		v := idle[0]
		idle = idle[1:]
		victims = append(victims, v.eng)
		v.eng = nil
		used -= v.memory
	}
	return victims, nil
}

// load loads e's model and starts its engine (the loading channel is
// closed when it is done).
func (r *registry) load(e *entry) {
	start := time.Now()
	eng, err := r.start(e)
	r.mu.Lock()
	e.eng, e.loadErr = eng, err
	close(e.loading)
	e.loading = nil
	e.used = time.Now()
	closed := r.closed
	r.mu.Unlock()
	if err != nil {
		r.log("loading %s failed: %v", e.id, err)
		return
	}
	r.met.loaded(e.id, false)
	slots := fmt.Sprintf("%d slots", e.parallel)
	if e.embeds {
		slots += fmt.Sprintf(", %d for embeddings", e.seqs-e.parallel)
	}
	r.log("loaded %s (%s, %s, context %d) in %s", e.id, e.model, slots, e.ctx, time.Since(start).Round(time.Millisecond))
	if closed {
		eng.close(context.Background())
	}
}

// start loads a model on the shared backend (made at the first load).
func (r *registry) start(e *entry) (*engine, error) {
	r.lock.Lock()
	defer r.lock.Unlock()
	if r.be == nil {
		mk := r.cfg.Backend
		if mk == nil {
			mk = func() (runtime.Backend, error) { return runtime.NewCPU(r.cfg.Threads), nil }
		}
		be, err := mk()
		if err != nil {
			return nil, err
		}
		r.be = be
	}
	m, err := runtime.New(e.plan, runtime.Options{Model: e.model, Backend: r.be, Seqs: e.seqs, VerifyWeights: r.cfg.VerifyWeights})
	if err != nil {
		return nil, err
	}
	if !m.WeightsChecked() {
		r.log("%s: %s", e.id, m.WeightCheck)
	}
	var spec *speculation
	if sp, ok := r.cfg.specFor(e.path); ok && e.generates {
		if spec, err = newSpeculation(sp, m, e.parallel); err != nil {
			m.Close()
			return nil, fmt.Errorf("server: %s: %w", e.id, err)
		}
	}
	return newEngine(e.id, m, &r.lock, e.parallel, r.cfg.MaxQueue, r.cfg.PrefillRows, r.cfg.BusyPrefillRows, spec)
}

// unload unloads e's model once its requests finish (ctx ending first
// cancels them); false when it was not loaded.
func (r *registry) unload(ctx context.Context, e *entry) bool {
	r.mu.Lock()
	eng := e.eng
	e.eng = nil
	r.mu.Unlock()
	if eng == nil {
		return false
	}
	eng.close(ctx)
	r.met.loaded(e.id, true)
	r.log("unloaded %s", e.id)
	return true
}

// sweep unloads the models idle for longer than the idle limit.
func (r *registry) sweep(limit time.Duration) {
	r.mu.Lock()
	var victims []*entry
	for _, e := range r.entries {
		if e.eng == nil {
			continue
		}
		if ok, last := e.eng.idle(); ok && time.Since(last) >= limit {
			victims = append(victims, e)
		}
	}
	r.mu.Unlock()
	for _, e := range victims {
		r.mu.Lock()
		still := e.eng != nil
		if still {
			ok, last := e.eng.idle()
			still = ok && time.Since(last) >= limit
		}
		r.mu.Unlock()
		if still {
			r.log("%s idle for %s: unloading", e.id, limit)
			r.unload(context.Background(), e)
		}
	}
}

// gauges are every model's state now.
func (r *registry) gauges() map[string]gauge {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]gauge{}
	for _, e := range r.entries {
		g := gauge{}
		if e.eng != nil {
			q, run := e.eng.load()
			g = gauge{Loaded: true, Slots: e.parallel, SlotsBusy: run, Queued: q, MemoryBytes: e.memory}
		}
		out[e.id] = g
	}
	return out
}

// loadingAny reports whether a model is loading.
func (r *registry) loadingAny() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.entries {
		if e.loading != nil {
			return true
		}
	}
	return false
}

// close unloads every model (draining until ctx ends) and closes the
// backend.
func (r *registry) close(ctx context.Context) {
	r.mu.Lock()
	r.closed = true
	var engs []*engine
	for _, e := range r.entries {
		if e.eng != nil {
			engs = append(engs, e.eng)
			e.eng = nil
		}
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, eng := range engs {
		wg.Go(func() { eng.close(ctx) })
	}
	wg.Wait()
	// A load in flight closes its engine itself when it ends.
	for r.loadingAny() {
		time.Sleep(10 * time.Millisecond)
	}
	r.lock.Lock()
	if r.be != nil {
		r.be.Close()
		r.be = nil
	}
	r.lock.Unlock()
}
