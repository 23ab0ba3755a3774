package runtime

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/cuda"
	"github.com/akunu-dev/akunu/runtime/sampling"
)

// These tests run where an NVIDIA driver loads (the device machine) and
// skip, saying why in one line, elsewhere: CI has no GPU. What CI proves
// of the CUDA path is that its source type-checks (kernels/gpu) and that
// the backend builds.

var (
	cudaOnce sync.Once
	cudaBE   *cuda.Backend
	cudaErr  error
)

// cudaBackend is one CUDA backend shared by the test binary (one context).
func cudaBackend(t *testing.T) *cuda.Backend {
	t.Helper()
	cudaOnce.Do(func() { cudaBE, cudaErr = cuda.New(cuda.Options{}) })
	if errors.Is(cudaErr, cuda.ErrUnavailable) {
		proof.Elsewhere(t, "the CUDA backend is not checked (go test -run CUDA ./runtime on a machine with an NVIDIA GPU)", cudaErr.Error())
	}
	if cudaErr != nil {
		t.Fatal(cudaErr)
	}
	return cudaBE
}

func loadOnCUDA(t *testing.T, be Backend, plan, model string) *Model {
	t.Helper()
	m, err := Load(plan, Options{Model: model, Backend: be, Seqs: testSeqs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// cudaLongPrompt is past 8 tokens, so that prefill runs the tiled GEMM (the
// tile primitive), not only the small-batch one.
const cudaLongPrompt = "The quick brown fox jumps over the lazy dog while the five boxing wizards jump quickly, and a sphinx of black quartz judges my vow."

// cudaTol is how far the CUDA logits may be from the CPU's replay of the
// same plan, relative to max|logit|. Both keep F16 activations with float
// accumulation, in different orders: measured ≤ 1.4e-3 for F32 and F16
// weights, ≤ 4.8e-3 for BF16. Quantized weights differ more, and by
// design: the CPU quantizes each activation row to the weight type's ggml
// vec_dot_type before the dot product (as llama.cpp's CPU backend does,
// ADR 0008), the GPU kernels multiply the dequantized weights by the F16
// activations as they are (as llama.cpp's GPU backends' GEMVs do);
// measured 1.0e-2 to 1.4e-2 at the first step and up to 2.7e-2 after 16
// steps through the KV cache (the two roundings compound), so 4e-2.
func cudaTol(dt dtype.Type) float64 {
	switch dt {
	case dtype.F32, dtype.F16, dtype.BF16:
		return 1e-2
	}
	return 4e-2
}

// cudaLlamaTol is the tolerance against llama.cpp's CPU backend, which
// quantizes activations to 8 bits for quantized weights as our CPU does:
// our CPU meets 2e-2 (parityTol); the F16-activation GPU kernels measured
// up to 2.1e-2 (Q4_K), so 3e-2. F16 weights: 1e-2 (measured 1.1e-3).
func cudaLlamaTol(dt dtype.Type) float64 {
	if dt == dtype.F16 || dt == dtype.F32 {
		return 1e-2
	}
	return 3e-2
}

// compareRuns holds got to ref step by step (holdToReference's rule).
func compareRuns(t *testing.T, name string, got, ref []stepLog, tol float64) (int, float64) {
	t.Helper()
	var gt, rt []int32
	var gl, rl [][]float32
	for i := range got {
		gt, gl = append(gt, got[i].tok), append(gl, got[i].logits)
	}
	for i := range ref {
		rt, rl = append(rt, ref[i].tok), append(rl, ref[i].logits)
	}
	return holdToReference(t, name, gt, gl, rt, rl, tol)
}

// A plan compiled for an NVIDIA GPU, replayed on CUDA, generates what the
// CPU backend's replay of the same plan does: every kernel of the plans of
// the synthetic architecture × dtype suite, in prefill (both GEMMs) and in
// chained decode.
func TestCUDAMatchesTheCPU(t *testing.T) {
	be := cudaBackend(t)
	every := kernels.WeightTypes()
	some := []dtype.Type{dtype.F16, dtype.Q8_0, dtype.Q4_0, dtype.Q4_K, dtype.Q6_K}
	// qwen2 adds the QKV biases, gemma2 soft-capping, GELU and the
	// sliding window, phi3 its fused projections.
	for _, arch := range []string{"llama", "qwen3", "gemma3", "qwen2", "gemma2", "phi3"} {
		dts := some
		if arch == "llama" {
			dts = every // every weight type's GEMV, GEMM and embedding kernels
		}
		for _, dt := range dts {
			name := fmt.Sprintf("%s %s", arch, dt)
			t.Run(name, func(t *testing.T) {
				model := synthModel(t, arch, dt)
				plan := compile(t, model, "h100-sxm")
				g := loadOnCUDA(t, be, plan, model)
				c := load(t, plan, model, 0)
				for _, prompt := range []string{"Hello world", cudaLongPrompt} {
					ids := c.Tokenizer.Tokenize(prompt, true, false)
					steps, d := compareRuns(t, name, ours(t, g, ids, 16), ours(t, c, ids, 16), cudaTol(dt))
					t.Logf("%s, %d prompt tokens: %d steps agree, max |Δ|/max|logit| = %.2g", name, len(ids), steps, d)
				}
			})
		}
	}
}

// The plans TestCUDAMatchesTheCPU replays compile, and replay on the CPU,
// where no NVIDIA driver loads (CI): the compiler's NVIDIA forms (the
// rotating attention, the folded norms) for every architecture it covers.
func TestNVIDIAPlansRunOnTheCPU(t *testing.T) {
	for _, arch := range []string{"llama", "qwen3", "gemma3", "qwen2", "gemma2", "phi3"} {
		t.Run(arch, func(t *testing.T) {
			model := synthModel(t, arch, dtype.Q4_0)
			c := load(t, compile(t, model, "h100-sxm"), model, 0)
			steps := ours(t, c, c.Tokenizer.Tokenize(cudaLongPrompt, true, false), 8)
			if len(steps) != 8 {
				t.Fatalf("%d steps, want 8", len(steps))
			}
			for i, st := range steps { // the plan's argmax is the largest of the logits it hands the host
				for j, v := range st.logits {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Fatalf("step %d: logit %d is %v", i, j, v)
					}
				}
				if best := sampling.Argmax(st.logits); st.tok != best {
					t.Errorf("step %d: token %d, the largest logit is %d's", i, st.tok, best)
				}
			}
		})
	}
}

// Plans compiled for Apple chips use the same kernel bodies as Metal:
// replayed on CUDA they give the CPU's tokens.
func TestCUDARunsApplePlans(t *testing.T) {
	be := cudaBackend(t)
	model := stories(t)
	ids := []int32(nil)
	for _, chip := range []string{"m1", "m4-max", "h100-sxm"} {
		plan := compile(t, model, chip)
		g := loadOnCUDA(t, be, plan, model)
		c := load(t, plan, model, 0)
		if ids == nil {
			ids = c.Tokenizer.Tokenize("Once upon a time", true, false)
		}
		steps, d := compareRuns(t, chip, ours(t, g, ids, 64), ours(t, c, ids, 64), cudaTol(dtype.F32))
		if steps < 64 {
			t.Errorf("%s: %d of 64 steps agree", chip, steps)
		}
		t.Logf("stories260K %s on CUDA: %d steps agree with the CPU, max |Δ|/max|logit| = %.2g", chip, steps, d)
	}
}

// The CUDA replay against llama.cpp itself, under the parity rule: the
// logits within the tolerance the F16-activation plans meet on the CPU.
func TestCUDAParityWithLlamaCpp(t *testing.T) {
	be := cudaBackend(t)
	model := stories(t)
	plan := compile(t, model, "h100-sxm")
	steps, d := parityOn(t, loadOnCUDA(t, be, plan, model), model, "Once upon a time", 64, 1e-2)
	t.Logf("stories260K h100-sxm on CUDA vs llama.cpp: %d steps, max |Δ|/max|logit| = %.2g", steps, d)
	for _, arch := range []string{"llama", "qwen3"} {
		for _, dt := range []dtype.Type{dtype.F16, dtype.Q8_0, dtype.Q4_0, dtype.Q4_K} {
			t.Run(fmt.Sprintf("%s %s", arch, dt), func(t *testing.T) {
				model := synthModel(t, arch, dt)
				plan := compile(t, model, "h100-sxm")
				steps, d := parityOn(t, loadOnCUDA(t, be, plan, model), model, "Hello world, this is a test", 32, cudaLlamaTol(dt))
				t.Logf("%s %s on CUDA vs llama.cpp: %d steps, max |Δ|/max|logit| = %.2g", arch, dt, steps, d)
			})
		}
	}
}

// Sampling runs on the GPU (gumbel_topk, then argmax, in the chain): with
// a fixed seed it draws the CPU's tokens, the noise being the same counter
// hash on both.
func TestCUDASamplingMatchesTheCPU(t *testing.T) {
	be := cudaBackend(t)
	model := stories(t)
	plan := compile(t, model, "h100-sxm")
	g := loadOnCUDA(t, be, plan, model)
	c := load(t, plan, model, 0)
	p := c.Tokenizer.Tokenize("Once upon a time", true, false)
	knobs := Sampling{Temperature: 0.9, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 42}
	a := genNew(t, g, p, GenerateOptions{MaxTokens: 40, IgnoreEOS: true, Sampling: knobs}).Tokens
	b := genNew(t, c, p, GenerateOptions{MaxTokens: 40, IgnoreEOS: true, Sampling: knobs}).Tokens
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	t.Logf("sampled: %d of 40 tokens agree before the first difference", n)
	if n < 16 {
		t.Errorf("CUDA %v\nCPU  %v", a, b)
	}
	if again := genNew(t, g, p, GenerateOptions{MaxTokens: 40, IgnoreEOS: true, Sampling: knobs}).Tokens; !slices.Equal(a, again) {
		t.Errorf("a fixed seed sampled different tokens twice on CUDA:\n%v\n%v", a, again)
	}
}

// On CUDA, whose chains are a captured graph a step, the host reads the
// last step's logits after a chain, bit for bit a host loop's (the hold
// for a backend that copies them for the host in a chain's last step
// only, as branch hostonly-cuda's does; main's copies them every step).
func TestCUDAChainEndsWithItsLastStepsLogits(t *testing.T) {
	be := cudaBackend(t)
	model := stories(t)
	m := loadOnCUDA(t, be, compile(t, model, "h100-sxm"), model)
	for range 2 { // the first captures the graphs, the second replays them
		chainEndsWithItsLastLogits(t, m)
	}
}

// The per-token path on CUDA allocates nothing either: a chain's patches,
// parameter upload, launches and hand-off.
func TestCUDADecodeStepDoesNotAllocate(t *testing.T) {
	be := cudaBackend(t)
	model := stories(t)
	m := loadOnCUDA(t, be, compile(t, model, "h100-sxm"), model)
	s := sess(t, m)
	gen(t, s, m.Tokenizer.Tokenize("Once", true, false), GenerateOptions{MaxTokens: 1})
	n := len(s.steps)
	// The first chain of a length grows the parameter memory and captures
	// its steps' graphs.
	for range 4 {
		s.chain(m.decode, n)
	}
	if a := testing.AllocsPerRun(20, func() { s.chain(m.decode, n) }); a != 0 {
		t.Fatalf("a chain of %d decode steps allocates %v times", n, a)
	}
	s.setSampling(Sampling{Temperature: 1, Seed: 1}.params(uint32(m.Vocab())))
	for range 4 {
		s.chain(m.sampled, n)
	}
	if a := testing.AllocsPerRun(20, func() { s.chain(m.sampled, n) }); a != 0 {
		t.Fatalf("a chain of %d sampled steps allocates %v times", n, a)
	}
	if a := testing.AllocsPerRun(20, func() { s.launch(m.decode, s.Pos(), n, 1); m.be.WaitOldest() }); a != 0 {
		t.Fatalf("an overlapped chain of %d decode steps and its hand-off allocate %v times", n, a)
	}
}

// Embedding programs on the GPU: the h100-sxm plan and an Apple plan (the
// Metal kernels' bodies) replayed on CUDA against the CPU's replay of the
// same plan and against llama.cpp, cosine ≥ 0.9999 for every input; 40
// inputs, so that replays pack many inputs and the last holds the rest.
func TestCUDAEmbedMatchesTheCPUAndLlamaCpp(t *testing.T) {
	be := cudaBackend(t)
	var texts []string
	for i := range 40 {
		texts = append(texts, fmt.Sprintf("%s (%d)", embedTexts[i%len(embedTexts)], i))
	}
	for _, c := range []struct {
		arch    string
		dt      dtype.Type
		pooling int
	}{{"bert", dtype.F16, 1}, {"bert", dtype.Q8_0, 1}, {"bert", dtype.F16, 2}, {"qwen3", dtype.F16, 3}} {
		model := synthEmbedder(t, c.arch, c.dt, c.pooling)
		for _, chip := range []string{"h100-sxm", "m4-max"} {
			t.Run(fmt.Sprintf("%s %v pooling %d %s", c.arch, c.dt, c.pooling, chip), func(t *testing.T) {
				plan := compile(t, model, chip)
				g := loadOnCUDA(t, be, plan, model)
				cpu := load(t, plan, model, 0)
				var inputs [][]int32
				for _, s := range texts {
					inputs = append(inputs, g.Tokenizer.Tokenize(s, true, false))
				}
				got, err := g.Embed(bg, inputs)
				if err != nil {
					t.Fatal(err)
				}
				want, err := cpu.Embed(bg, inputs)
				if err != nil {
					t.Fatal(err)
				}
				ref := embedRef(t, model, inputs)
				worstCPU, worstRef, worstD := 1.0, 1.0, 0.0
				for i := range inputs {
					cc, cr := Cosine(got[i], want[i]), Cosine(got[i], ref[i])
					for j := range got[i] {
						worstD = max(worstD, math.Abs(float64(got[i][j]-want[i][j])))
					}
					worstCPU, worstRef = min(worstCPU, cc), min(worstRef, cr)
					if cc < 0.9999 || cr < 0.9999 {
						t.Errorf("input %d: cosine %.7f against the CPU, %.7f against llama.cpp (want ≥ 0.9999)", i, cc, cr)
					}
				}
				t.Logf("%d inputs: worst cosine %.8f (CPU), %.8f (llama.cpp); max |Δ| against the CPU %.3g", len(inputs), worstCPU, worstRef, worstD)
			})
		}
	}
}

// Mixture-of-experts models on CUDA: the h100-sxm plan and an Apple plan
// (the Metal kernels' bodies) against the CPU's replay of the same plan,
// in prefill (gemv_id over a batch's rows) and chained decode, and the
// h100-sxm plan against llama.cpp.
func TestCUDAMoEMatchesTheCPUAndLlamaCpp(t *testing.T) {
	be := cudaBackend(t)
	for _, arch := range []string{"qwen3moe", "llama"} {
		for _, dt := range []dtype.Type{dtype.F16, dtype.Q8_0, dtype.Q4_0, dtype.Q4_K} {
			model := synthMoE(t, arch, dt)
			for _, chip := range []string{"h100-sxm", "m4-max"} {
				name := fmt.Sprintf("%s MoE %s %s", arch, dt, chip)
				t.Run(name, func(t *testing.T) {
					plan := compile(t, model, chip)
					g := loadOnCUDA(t, be, plan, model)
					c := load(t, plan, model, 0)
					for _, prompt := range []string{"Hello world", cudaLongPrompt} {
						ids := c.Tokenizer.Tokenize(prompt, true, false)
						steps, d := compareRuns(t, name, ours(t, g, ids, 16), ours(t, c, ids, 16), cudaTol(dt))
						t.Logf("%s, %d prompt tokens: %d steps agree, max |Δ|/max|logit| = %.2g", name, len(ids), steps, d)
					}
					if chip == "h100-sxm" {
						steps, d := parityOn(t, g, model, "Hello world, this is a test of the experts", 32, cudaLlamaTol(dt))
						t.Logf("%s against llama.cpp: %d steps, max |Δ|/max|logit| = %.2g", name, steps, d)
					}
				})
			}
		}
	}
}

// A few sequences decoding together on CUDA step as decode steps, a
// sequence at a time (cuda.Options.DecodeRows), each through graphs
// captured for its own KV slot: each sequence's tokens and every step's
// logits are what the same rows give it alone, bit for bit (the same
// decode program; a graph of another sequence's slot would read another
// cache), and once every sequence's graphs exist a step allocates
// nothing.
func TestCUDAFewSequencesStepAsDecode(t *testing.T) {
	be := cudaBackend(t)
	path := synthModel(t, "qwen3", dtype.Q8_0) // its batch programs' GEMMs over the file's layout
	plan := compile(t, path, "h100-sxm")
	p, err := plans.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	if n := be.DecodeRows(p); n < 3 {
		t.Fatalf("the CUDA backend replays %d sequences' rows of a Q8_0 plan as decode steps; the test wants 3", n)
	}
	m := loadOnCUDA(t, be, plan, path)
	togetherIsAlone(t, m)
	batchedStepAllocs(t, m)
}

// togetherIsAlone holds the decode rows of 3 sequences in one Forward to
// the same rows of each sequence alone, logits bit for bit, 10 greedy
// steps.
func togetherIsAlone(t *testing.T, m *Model) {
	const seqs, steps = 3, 10
	type row struct{ seq, pos, tok int32 }
	start := make([]row, seqs)
	for i := range start {
		s := sess(t, m)
		gen(t, s, m.Tokenizer.Tokenize(batchPrompts[i], true, false), GenerateOptions{MaxTokens: 1})
		h := s.History()
		start[i] = row{int32(s.Seq()), int32(len(h) - 1), h[len(h)-1]}
	}
	// decode feeds rows of the given sequences (indexes into start) for
	// steps steps, greedy, and returns each sequence's logits by step.
	decode := func(idx ...int) [][][]float32 {
		cur := make([]row, len(idx))
		for k, i := range idx {
			cur[k] = start[i]
			m.Rewind(int(cur[k].seq), int(cur[k].pos))
		}
		out := make([][][]float32, len(idx))
		var b Batch
		for range steps {
			b.Reset()
			for _, r := range cur {
				b.Add(r.tok, r.pos, r.seq, true)
			}
			b.ReadLogits = true
			if err := m.Forward(bg, &b); err != nil {
				t.Fatal(err)
			}
			for k := range cur {
				out[k] = append(out[k], slices.Clone(m.OutputLogits(k)))
				cur[k].tok, cur[k].pos = m.OutputToken(k), cur[k].pos+1
			}
		}
		return out
	}
	together := decode(0, 1, 2)
	for i := range seqs {
		alone := decode(i)[0]
		for k := range alone {
			if !slices.Equal(together[i][k], alone[k]) {
				t.Fatalf("sequence %d, step %d: its logits beside others differ from its logits alone", i, k)
			}
		}
	}
}

// The batch programs' small GEMMs over the decode program's planar
// buffers on CUDA (simd_gemm_small_q4_0_planar[_glu]): a sequence's rows
// through a batch program give plain decode's logits on CUDA within the
// rounding of the norms decode folds (as on the CPU,
// TestPlanarBatchRowsAgreeWithDecode).
func TestCUDAPlanarBatchRowsAgreeWithDecode(t *testing.T) {
	be := cudaBackend(t)
	for _, arch := range []string{"llama", "qwen3"} {
		t.Run(arch, func(t *testing.T) {
			model := synthModel(t, arch, dtype.Q4_0)
			planarRowsAgree(t, loadOnCUDA(t, be, compile(t, model, "h100-sxm"), model), cudaTol(dtype.Q4_0))
		})
	}
}
