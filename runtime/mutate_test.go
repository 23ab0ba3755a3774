package runtime

// The mutation harness (issue 18, part 2): a compiled plan, damaged one
// field at a time and resealed (Encode recomputes the checksum, as anyone
// can), must be refused at load with one clean error, or run; it must never
// crash the process. A damaged plan can fail in ways recover cannot catch
// (a write into the read-only mapping of the model file is a SIGSEGV, a
// huge allocation a fatal out-of-memory), so the cases run in a child
// process, the test binary itself re-executed (TestPlanMutationChild): the
// child reports each case on its stdout before and after it runs it, and
// when it dies the parent records the case it was in and starts another
// child after it.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/plans"
)

// mutation is one targeted edit of a plan.
type mutation struct {
	name string
	edit func(p *plans.Plan)
}

// representative reports whether command c is one whose mutations are
// worth trying: the first of each (pipeline, label with the layer number
// taken out) in its program, so that 8 layers of the same command cost one.
var layerNum = regexp.MustCompile(`^L[0-9]+\.`)

// mutations lists the targeted edits of plan p: every field a kernel, the
// binder or the allocator relies on, each set to values that break it.
// The list depends only on p, so a parent and its child build the same.
func mutations(p *plans.Plan) []mutation {
	var ms []mutation
	add := func(name string, edit func(p *plans.Plan)) { ms = append(ms, mutation{name, edit}) }
	u32s := []struct {
		name string
		f    func(x uint32) uint32
	}{
		{"0", func(uint32) uint32 { return 0 }},
		{"1", func(uint32) uint32 { return 1 }},
		{"-1", func(uint32) uint32 { return 0xffffffff }},
		{"2^30", func(uint32) uint32 { return 1 << 30 }},
		{"2^24", func(uint32) uint32 { return 1 << 24 }},
		{"+1", func(x uint32) uint32 { return x + 1 }},
		{"x2", func(x uint32) uint32 { return x * 2 }},
		{"^bit8", func(x uint32) uint32 { return x ^ 1<<8 }},
		{"^bit20", func(x uint32) uint32 { return x ^ 1<<20 }},
	}
	// Weights, constants and a scratch buffer to rebind to.
	var weight, constant, scratch, kv, io = -1, -1, -1, -1, -1
	for i, b := range p.Buffers {
		switch {
		case b.Kind == plans.BufWeight && weight < 0:
			weight = i
		case (b.Kind == plans.BufConstant || b.Kind == plans.BufDerived) && constant < 0:
			constant = i
		case b.Kind == plans.BufScratch && (scratch < 0 || b.Size < p.Buffers[scratch].Size):
			scratch = i // the smallest
		case b.Kind == plans.BufKV && kv < 0:
			kv = i
		case b.Kind == plans.BufIO && b.Role == "tokens":
			io = i
		}
	}
	for pi := range p.Programs {
		pr := &p.Programs[pi]
		seen := map[string]bool{}
		for ci := range pr.Commands {
			c := &pr.Commands[ci]
			key := fmt.Sprint(c.Pipeline, layerNum.ReplaceAllString(c.Label, "L."))
			if seen[key] {
				continue
			}
			seen[key] = true
			at := fmt.Sprintf("%s[%d] %s", pr.Name, ci, c.Label)
			cmd := func(p *plans.Plan) *plans.Command { return &p.Programs[pi].Commands[ci] }
			for w := 0; w+4 <= len(c.Params); w += 4 {
				for _, v := range u32s {
					add(fmt.Sprintf("%s: param word %d = %s", at, w/4, v.name), func(p *plans.Plan) {
						b := cmd(p).Params
						binary.LittleEndian.PutUint32(b[w:], v.f(binary.LittleEndian.Uint32(b[w:])))
					})
				}
			}
			if len(c.Params) > 0 {
				add(at+": params short by 4", func(p *plans.Plan) { c := cmd(p); c.Params = c.Params[:len(c.Params)-4] })
			}
			add(at+": params long by 4", func(p *plans.Plan) { c := cmd(p); c.Params = append(c.Params, 0, 0, 0, 0) })
			add(at+": pipeline + 1", func(p *plans.Plan) {
				c := cmd(p)
				c.Pipeline = (c.Pipeline + 1) % uint32(len(p.Pipelines))
			})
			for bi := range c.Bindings {
				bat := fmt.Sprintf("%s: binding %d (slot %d)", at, bi, c.Bindings[bi].Slot)
				bd := func(p *plans.Plan) *plans.Binding { return &cmd(p).Bindings[bi] }
				for _, t := range []struct {
					name string
					buf  int
				}{{"a weight", weight}, {"a constant", constant}, {"the smallest scratch", scratch}, {"a KV buffer", kv}, {"the tokens", io}} {
					if t.buf >= 0 && uint32(t.buf) != c.Bindings[bi].Buffer {
						add(bat+": buffer = "+t.name, func(p *plans.Plan) { b := bd(p); b.Buffer, b.Length = uint32(t.buf), 0 })
					}
				}
				add(bat+": offset + 4", func(p *plans.Plan) { bd(p).Offset += 4 })
				add(bat+": offset = size - 4", func(p *plans.Plan) {
					b := bd(p)
					b.Offset, b.Length = p.Buffers[b.Buffer].Size-4, 0
				})
				add(bat+": length 0", func(p *plans.Plan) { bd(p).Length = 0 })
				add(bat+": slot + 1", func(p *plans.Plan) { bd(p).Slot++ })
			}
			if len(c.Bindings) > 0 {
				add(at+": last binding dropped", func(p *plans.Plan) { c := cmd(p); c.Bindings = c.Bindings[:len(c.Bindings)-1] })
			}
			for d := range 3 {
				add(fmt.Sprintf("%s: grid[%d] x2", at, d), func(p *plans.Plan) { cmd(p).Grid[d] *= 2 })
				add(fmt.Sprintf("%s: grid[%d] = 2^20", at, d), func(p *plans.Plan) { cmd(p).Grid[d] = 1 << 20 })
				add(fmt.Sprintf("%s: threadgroup[%d] = 1", at, d), func(p *plans.Plan) { cmd(p).Threadgroup[d] = 1 })
				add(fmt.Sprintf("%s: threadgroup[%d] x2", at, d), func(p *plans.Plan) { cmd(p).Threadgroup[d] *= 2 })
			}
			if c.Grid[0] > 1 {
				add(at+": grid[0] / 2", func(p *plans.Plan) { cmd(p).Grid[0] /= 2 })
			}
			add(at+": threadgroup memory 2^17", func(p *plans.Plan) { cmd(p).ThreadgroupMemory = 1 << 17 })
			add(at+": dispatch threads flipped", func(p *plans.Plan) { c := cmd(p); c.DispatchThreads = !c.DispatchThreads })
			for k := range c.Patches {
				pat := fmt.Sprintf("%s: patch %d (%s)", at, k, c.Patches[k].Kind)
				pt := func(p *plans.Plan) *plans.Patch { return &cmd(p).Patches[k] }
				for kind := plans.PatchToken; kind <= plans.PatchOutCount; kind++ {
					if kind != c.Patches[k].Kind {
						add(fmt.Sprintf("%s: kind = %s", pat, kind), func(p *plans.Plan) { pt(p).Kind = kind })
					}
				}
				add(pat+": at + 4", func(p *plans.Plan) { pt(p).At += 4 })
				add(pat+": at = 0", func(p *plans.Plan) { pt(p).At = 0 })
				add(pat+": stride x2", func(p *plans.Plan) { pt(p).Stride = 2*pt(p).Stride + 1 })
				add(pat+": base + 4", func(p *plans.Plan) { pt(p).Base += 4 })
				add(pat+": target flipped", func(p *plans.Plan) {
					t := pt(p)
					if t.Target == plans.PatchParam {
						t.Target, t.Width = plans.PatchBinding, 0
					} else {
						t.Target, t.Width = plans.PatchParam, 4
					}
				})
			}
		}
	}
	for bi := range p.Buffers {
		b := &p.Buffers[bi]
		at := fmt.Sprintf("buffer %d %q", bi, b.Name)
		buf := func(p *plans.Plan) *plans.Buffer { return &p.Buffers[bi] }
		add(at+": size / 2", func(p *plans.Plan) { buf(p).Size /= 2 })
		add(at+": size - 4", func(p *plans.Plan) { buf(p).Size -= 4 })
		add(at+": size x2", func(p *plans.Plan) { buf(p).Size *= 2 })
		add(at+": size 2^39", func(p *plans.Plan) { buf(p).Size = 1 << 39 })
		if len(b.Shape) > 0 {
			add(at+": shape[0] x2 and size x2", func(p *plans.Plan) { b := buf(p); b.Shape[0] *= 2; b.Size *= 2 })
		}
		if b.Kind == plans.BufKV {
			add(at+": positions / 2, size / 2", func(p *plans.Plan) { b := buf(p); b.Shape[1] /= 2; b.Size /= 2 })
			add(at+": layer + 1", func(p *plans.Plan) { buf(p).Layer++ })
		}
		if b.Kind == plans.BufWeight {
			add(at+": offset + 4", func(p *plans.Plan) { buf(p).Offset += 4 })
		}
		if b.Kind == plans.BufIO {
			add(at+": role cleared", func(p *plans.Plan) { buf(p).Role = "x" })
		}
	}
	hp := func(name string, f func(h *plans.HParams)) {
		add("hparams."+name, func(p *plans.Plan) { f(&p.Model.HParams) })
	}
	hp("ctx = 2^24", func(h *plans.HParams) { h.Ctx = 1 << 24 })
	hp("ctx x2", func(h *plans.HParams) { h.Ctx *= 2 })
	hp("ctx / 2", func(h *plans.HParams) { h.Ctx /= 2 })
	hp("ctx = 4", func(h *plans.HParams) { h.Ctx = 4 })
	hp("vocab x2", func(h *plans.HParams) { h.Vocab *= 2 })
	hp("vocab / 2", func(h *plans.HParams) { h.Vocab /= 2 })
	hp("dim x2", func(h *plans.HParams) { h.Dim *= 2 })
	hp("layers + 1", func(h *plans.HParams) { h.Layers++ })
	hp("heads x2", func(h *plans.HParams) { h.Heads *= 2 })
	hp("kv_heads = heads", func(h *plans.HParams) { h.KVHeads = h.Heads })
	hp("head_dim x2", func(h *plans.HParams) { h.HeadDim *= 2 })
	tu := func(name string, f func(t *plans.Tuning)) {
		add("tuning."+name, func(p *plans.Plan) { f(&p.Header.Target.Tuning) })
	}
	tu("max_seqs = 4096", func(t *plans.Tuning) { t.MaxSeqs = plans.MaxSeqs })
	tu("max_seqs = 1", func(t *plans.Tuning) { t.MaxSeqs = 1 })
	tu("max_seqs = 0", func(t *plans.Tuning) { t.MaxSeqs = 0 })
	tu("out_rows = 65536", func(t *plans.Tuning) { t.OutRows = plans.MaxBatch })
	tu("out_rows = 0", func(t *plans.Tuning) { t.OutRows = 0 })
	tu("prefill_chunk = 65536", func(t *plans.Tuning) { t.PrefillChunk = plans.MaxBatch })
	tu("prefill_chunk = 1", func(t *plans.Tuning) { t.PrefillChunk = 1 })
	tu("chain_chunk = 4096", func(t *plans.Tuning) { t.ChainChunk = plans.MaxChainChunk })
	tu("chain_chunk = 1", func(t *plans.Tuning) { t.ChainChunk = 1 })
	for pi := range p.Programs {
		pr := &p.Programs[pi]
		at := fmt.Sprintf("program %q", pr.Name)
		prog := func(p *plans.Plan) *plans.Program { return &p.Programs[pi] }
		rename := func(pr *plans.Program) {
			if pr.KindOf() == plans.KindBatch {
				pr.Name = plans.BatchName(pr.Batch)
			}
		}
		add(at+": batch x2", func(p *plans.Plan) { pr := prog(p); pr.Batch *= 2; rename(pr) })
		add(at+": batch + 1", func(p *plans.Plan) { pr := prog(p); pr.Batch++; rename(pr) })
		if pr.Batch > 1 {
			add(at+": batch - 1", func(p *plans.Plan) { pr := prog(p); pr.Batch--; rename(pr); pr.OutRows = min(pr.OutRows, pr.Batch) })
		}
		add(at+": out_rows + 1", func(p *plans.Plan) { prog(p).OutRows++ })
		add(at+": out_rows = 1", func(p *plans.Plan) { prog(p).OutRows = 1 })
		add(at+": kind = decode", func(p *plans.Plan) { prog(p).Kind = plans.KindDecode })
		add(at+": kind = sampled", func(p *plans.Plan) { prog(p).Kind = plans.KindSampled })
	}
	for i := range p.Pipelines {
		at := fmt.Sprintf("pipeline %d %q", i, p.Pipelines[i].Kernel)
		for j := range p.Pipelines[i].Constants {
			add(fmt.Sprintf("%s: constant %d flipped", at, j), func(p *plans.Plan) {
				pl := &p.Pipelines[i]
				c := &pl.Constants[j]
				if c.Type == plans.ConstBool {
					c.Value ^= 1
				} else {
					c.Value *= 2
				}
				pl.Key = plans.CacheKey(pl.Kernel, pl.Constants)
			})
		}
	}
	return ms
}

// outcome is how a mutated plan fared.
type outcome string

const (
	outError outcome = "error" // refused with an error
	outSame  outcome = "same"  // ran, with the unmutated plan's tokens
	outDiff  outcome = "diff"  // ran, with other tokens
	outPanic outcome = "panic" // a panic (recovered, or one that killed the child)
	outFatal outcome = "fatal" // a fatal error recover cannot catch (SIGSEGV, out of memory)
	outHang  outcome = "hang"  // no answer within the case timeout
)

// runPlan loads p over model and runs a greedy generation (a short
// prefill, then decode steps) and a sampled one; it returns their tokens.
func runPlan(p *plans.Plan, model string) (toks []int32, err error) {
	m, err := New(p, Options{Model: model, Threads: 1, Seqs: 2})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	for _, smp := range []Sampling{{}, {Temperature: 0.8, Seed: 3}} {
		s, err := m.NewSession()
		if err != nil {
			return nil, err
		}
		res, err := s.Generate(context.Background(), []int32{1, 20, 30, 40, 50, 60}, GenerateOptions{MaxTokens: 4, IgnoreEOS: true, Sampling: smp})
		s.Close()
		if err != nil {
			return nil, err
		}
		toks = append(toks, res.Tokens...)
	}
	return toks, nil
}

// tryMutation applies ms[i] to the plan encoded in base, reseals it, and
// decodes, loads and runs it, recovering a panic.
func tryMutation(base []byte, model string, ms []mutation, i int, want []int32) (out outcome, detail string) {
	defer func() {
		if r := recover(); r != nil {
			out, detail = outPanic, fmt.Sprint(r)
			if os.Getenv("AKUNU_MUTATION_STACK") != "" {
				detail += string(debug.Stack())
			}
		}
	}()
	p, err := plans.Decode("", base)
	if err != nil {
		return outError, "base: " + err.Error()
	}
	ms[i].edit(p)
	p, err = plans.Decode("mutated.plan", plans.Encode(p)) // Encode reseals
	if err == nil {
		var got []int32
		if got, err = runPlan(p, model); err == nil {
			if slices.Equal(got, want) {
				return outSame, ""
			}
			return outDiff, fmt.Sprint(got)
		}
	}
	return outError, strings.ReplaceAll(err.Error(), "\n", " | ")
}

// mutationTarget is a model and the chip its plan is compiled for.
// A plain test run tries every sample-th of its cases (0: none).
type mutationTarget struct {
	name, chip string
	model      func(t testing.TB) string
	sample     int
}

var mutationTargets = []mutationTarget{
	{"stories260K", "cpu-avx2:2", stories, 29},
	// Q4_0 weights: the CPU's repacked x16 GEMV and GEMM; an Apple plan's
	// F16 kernels, replayed on the CPU.
	{"synth-q4_0", "cpu-avx2:2", func(t testing.TB) string { return synthModel(t, "llama", dtype.Q4_0) }, 61},
	{"synth-q4_0-m1", "m1", func(t testing.TB) string { return synthModel(t, "llama", dtype.Q4_0) }, 0},
}

// The child's environment: the plan and model files, the first case, and
// how many cases to skip between two it runs.
const (
	envMutPlan  = "AKUNU_MUTATION_PLAN"
	envMutModel = "AKUNU_MUTATION_MODEL"
	envMutFrom  = "AKUNU_MUTATION_FROM"
	envMutEvery = "AKUNU_MUTATION_EVERY"
)

// TestPlanMutationChild runs mutation cases in a child process (see the
// file's comment); it does nothing in a plain test run.
func TestPlanMutationChild(t *testing.T) {
	planPath := os.Getenv(envMutPlan)
	if planPath == "" {
		t.Skip("runs as the child of TestPlanMutations")
	}
	limitMemory()
	debug.SetMemoryLimit(2 << 30)
	base, err := os.ReadFile(planPath)
	if err != nil {
		t.Fatal(err)
	}
	model := os.Getenv(envMutModel)
	p, err := plans.Decode("", base)
	if err != nil {
		t.Fatal(err)
	}
	want, err := runPlan(p, model)
	if err != nil {
		t.Fatal(err)
	}
	ms := mutations(p)
	from, _ := strconv.Atoi(os.Getenv(envMutFrom))
	every, _ := strconv.Atoi(os.Getenv(envMutEvery))
	w := bufio.NewWriter(os.Stdout)
	for i := from; i < len(ms); i += max(every, 1) {
		fmt.Fprintf(w, "START %d\n", i)
		w.Flush()
		out, detail := tryMutation(base, model, ms, i, want)
		fmt.Fprintf(w, "RESULT %d %s %s\n", i, out, detail)
		w.Flush()
	}
	fmt.Fprintln(w, "DONE")
	w.Flush()
}

// caseResult is one case's outcome as the parent saw it.
type caseResult struct {
	name   string
	out    outcome
	detail string
}

// runMutations runs every every-th case of target in child processes and
// returns their results by case index.
func runMutations(t *testing.T, tg mutationTarget, every int) (map[int]caseResult, []mutation) {
	model := tg.model(t)
	planPath := compile(t, model, tg.chip)
	base, err := os.ReadFile(planPath)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plans.Decode("", base)
	if err != nil {
		t.Fatal(err)
	}
	ms := mutations(p)
	results := map[int]caseResult{}
	from := 0
	for from < len(ms) {
		next, done := runChild(t, planPath, model, from, every, ms, results)
		if done {
			break
		}
		from = next
	}
	return results, ms
}

// caseTimeout is how long one case may take before it counts as a hang.
const caseTimeout = 20 * time.Second

// runChild runs cases from `from` in one child until it finishes (done) or
// dies; next is the case after the one it died in.
func runChild(t *testing.T, planPath, model string, from, every int, ms []mutation, results map[int]caseResult) (next int, done bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPlanMutationChild$", "-test.count=1", "-test.v=false")
	cmd.Env = append(os.Environ(), envMutPlan+"="+planPath, envMutModel+"="+model,
		envMutFrom+"="+strconv.Itoa(from), envMutEvery+"="+strconv.Itoa(every), "GOTRACEBACK=single")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	current := -1
	timer := time.NewTimer(caseTimeout)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				cmd.Wait()
				if current < 0 {
					t.Fatalf("mutation child from case %d died outside a case: %s", from, tail(stderr.String()))
				}
				results[current] = caseResult{ms[current].name, crashKind(stderr.String()), tail(stderr.String())}
				return current + max(every, 1), false
			}
			f := strings.SplitN(line, " ", 4)
			switch f[0] {
			case "START":
				current, _ = strconv.Atoi(f[1])
				timer.Reset(caseTimeout)
			case "RESULT":
				i, _ := strconv.Atoi(f[1])
				detail := ""
				if len(f) > 3 {
					detail = f[3]
				}
				results[i] = caseResult{ms[i].name, outcome(f[2]), detail}
				current = -1
			case "DONE":
				for range lines {
				}
				if err := cmd.Wait(); err != nil && current < 0 {
					t.Logf("mutation child: %v", err)
				}
				return 0, true
			}
		case <-timer.C:
			if current < 0 {
				t.Fatalf("mutation child from case %d: no answer in %v", from, caseTimeout)
			}
			cancel()
			for range lines {
			}
			cmd.Wait()
			results[current] = caseResult{ms[current].name, outHang, ""}
			return current + max(every, 1), false
		}
	}
}

// crashKind reads a dead child's stderr: a panic, or a fatal error.
func crashKind(stderr string) outcome {
	if strings.Contains(stderr, "panic: ") && !strings.Contains(stderr, "fatal error:") {
		return outPanic
	}
	return outFatal
}

// tail is the first line of a crash report that says what happened.
func tail(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "unexpected fault") || strings.Contains(l, "signal") {
			return l
		}
	}
	if len(s) > 200 {
		s = s[len(s)-200:]
	}
	return s
}

// TestPlanMutations: every targeted edit of a real plan, resealed, is
// refused at load or runs; none crashes, hangs or panics. A plain run
// tries a sample of each target's cases (every sample-th: a few hundred,
// seconds); AKUNU_MUTATION_ALL=1 tries them all (minutes) and, with
// AKUNU_MUTATION_LOG=dir, writes each target's table there.
func TestPlanMutations(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	all := os.Getenv("AKUNU_MUTATION_ALL") != ""
	for _, tg := range mutationTargets {
		t.Run(tg.name, func(t *testing.T) {
			every := tg.sample
			if all {
				every = 1
			}
			if every == 0 {
				t.Skip("runs with AKUNU_MUTATION_ALL=1")
			}
			results, ms := runMutations(t, tg, every)
			count := map[outcome]int{}
			idx := make([]int, 0, len(results))
			for i := range results {
				idx = append(idx, i)
			}
			slices.Sort(idx)
			var log strings.Builder
			for _, i := range idx {
				r := results[i]
				count[r.out]++
				fmt.Fprintf(&log, "%5d %-5s %s: %s\n", i, r.out, r.name, r.detail)
				switch r.out {
				case outPanic, outFatal, outHang:
					t.Errorf("case %d %s: %s: %s", i, r.name, r.out, r.detail)
				}
			}
			if dir := os.Getenv("AKUNU_MUTATION_LOG"); dir != "" {
				os.WriteFile(filepath.Join(dir, tg.name+".txt"), []byte(log.String()), 0o644)
			}
			t.Logf("%s: %d of %d cases: %d errors, %d same, %d diff, %d panics, %d fatal, %d hangs", tg.name,
				len(results), len(ms), count[outError], count[outSame], count[outDiff], count[outPanic], count[outFatal], count[outHang])
		})
	}
}
