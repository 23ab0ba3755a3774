package runtime

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/plans"
)

// stepLog is one generated step: the token and the logits it came from.
type stepLog struct {
	tok    int32
	logits []float32
}

// ours generates n tokens greedily from prompt, one step per submission so
// that every step's logits are seen.
func ours(t testing.TB, m *Model, prompt []int32, n int) []stepLog {
	t.Helper()
	var logs []stepLog
	s := sess(t, m)
	res, err := s.Generate(bg, prompt, GenerateOptions{MaxTokens: n, IgnoreEOS: true,
		Logits: func(_ int, l []float32) { logs = append(logs, stepLog{logits: slices.Clone(l)}) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tokens) != n || len(logs) != n {
		t.Fatalf("generated %d tokens and %d logit rows, want %d (stop %s)", len(res.Tokens), len(logs), n, res.Stop)
	}
	for i := range logs {
		logs[i].tok = res.Tokens[i]
	}
	return logs
}

func maxAbs(xs []float32) float64 {
	var m float64
	for _, x := range xs {
		m = max(m, math.Abs(float64(x)))
	}
	return m
}

// margin is the gap between the best and the second-best logit.
func margin(l []float32) float64 {
	a, b := math.Inf(-1), math.Inf(-1)
	for _, x := range l {
		v := float64(x)
		if v > a {
			a, b = v, a
		} else if v > b {
			b = v
		}
	}
	return a - b
}

// parity holds our greedy generation to llama.cpp's: identical tokens for n
// steps and logits within tol·max|logit|, except that where llama.cpp's
// top-2 margin is below the tolerance the two may part, and only there.
// It returns the steps compared and the largest relative logit delta.
func parity(t *testing.T, plan, model string, prompt string, n int, tol float64) (int, float64) {
	t.Helper()
	return parityOn(t, load(t, plan, model, 2), model, prompt, n, tol)
}

// parityOn is parity for a model already loaded (on any backend).
func parityOn(t *testing.T, m *Model, model string, prompt string, n int, tol float64) (int, float64) {
	t.Helper()
	return parityWith(t, m, model, prompt, n, tol, nil)
}

// parityWith is parityOn against a llama.cpp context of the parameters
// tune sets (nil: NewContext's).
func parityWith(t *testing.T, m *Model, model string, prompt string, n int, tol float64, tune func(*llamacpp.ContextParams)) (int, float64) {
	t.Helper()
	lib := llamacpp.Require(t)
	lm, err := lib.LoadModel(model)
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	ids := m.Tokenizer.Tokenize(prompt, true, false)
	ref, err := lm.Tokenize(prompt, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, ref) {
		t.Fatalf("prompt tokens: ours %v, llama.cpp %v", ids, ref)
	}
	var ctx *llamacpp.Context
	if tune == nil {
		ctx, err = lm.NewContext(len(ids)+n+8, 512, 1) // one thread: no spin-waits on a busy CI machine
	} else {
		p := lib.DefaultContextParams()
		p.NCtx, p.NBatch, p.NUbatch, p.NSeqMax = uint32(len(ids)+n+8), 512, 512, 1
		p.NThreads, p.NThreadsBatch, p.NoPerf = 1, 1, true
		tune(&p)
		ctx, err = lm.NewContextWith(p)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	rtoks, rlogits, err := ctx.GreedyGenerate(ids, n)
	if err != nil {
		t.Fatal(err)
	}
	got := ours(t, m, ids, n)
	var worst float64
	for i := range n {
		scale := maxAbs(rlogits[i])
		var d float64
		for j, x := range got[i].logits {
			d = max(d, math.Abs(float64(x)-float64(rlogits[i][j])))
		}
		worst = max(worst, d/scale)
		if os.Getenv("AKUNU_PARITY_STEPS") != "" {
			t.Logf("step %d: %.3g (scale %.3g)", i, d/scale, scale)
		}
		if d > tol*scale {
			t.Errorf("step %d: max |Δlogit| %.3g > %.3g·%.3g (tokens ours %d, llama.cpp %d)", i, d, tol, scale, got[i].tok, rtoks[i])
			return i, worst
		}
		if got[i].tok != rtoks[i] {
			if mg := margin(rlogits[i]); mg > tol*scale {
				t.Errorf("step %d: token %d, llama.cpp %d, with a top-2 margin of %.3g > the tolerance %.3g", i, got[i].tok, rtoks[i], mg, tol*scale)
			} else {
				t.Logf("step %d: a near-tie (margin %.3g ≤ %.3g) parts the sequences; compared %d steps", i, mg, tol*scale, i+1)
			}
			return i + 1, worst
		}
	}
	return n, worst
}

func TestGreedyParityStories260K(t *testing.T) {
	model := stories(t)
	plan := compile(t, model, "cpu-avx2:2")
	steps, d := parity(t, plan, model, "Once upon a time", 64, 1e-3)
	if steps < 64 {
		t.Errorf("only %d steps agree", steps)
	}
	t.Logf("stories260K f32: %d steps, max |Δ|/max|logit| = %.2g", steps, d)
}

// Tolerances, relative to max|logit|. F32 and F16 weights: 1e-3, the
// issue's bound. Measured: ≤ 5e-5 (F32) and ≤ 4.5e-4 (F16) on the synthetic
// models, 2.9e-4 on stories260K, once the CPU's attention follows ggml's
// non-flash path (q rounded to the F16 cache's type, the softmax normalized
// and each weight rounded to F16 before V is summed) and the reference
// context runs that path (internal/llamacpp turns flash attention off).
//
// Quantized weights: 2e-2, the measured worst (1.5e-2) with a third to
// spare. runtime/cpu quantizes each activation to the weight type's ggml
// vec_dot_type as ggml-cpu's x86 build does (ADR 0008), and the two agree to
// 1e-7 until a float32-level difference upstream (FMA use, summation order)
// meets a .5 rounding boundary of that int8 quantization: one flipped int8
// moves a dot product by the two block scales' product, ~5e-4 of an output
// at K = 256, and flips compound through layers and the KV cache to ~1e-2
// (docs/runtime.md has the measurements).
var parityTol = map[dtype.Type]float64{
	dtype.F32: 1e-3, dtype.F16: 1e-3, dtype.Q8_0: 2e-2, dtype.Q4_0: 2e-2, dtype.Q4_K: 2e-2, dtype.Q6_K: 2e-2,
	dtype.Q2_K: 2e-2, dtype.Q3_K: 2e-2, dtype.IQ4_NL: 2e-2, dtype.IQ4_XS: 2e-2,
}

func TestGreedyParitySynthetic(t *testing.T) {
	for _, arch := range []string{"llama", "qwen3", "gemma3"} {
		for _, dt := range []dtype.Type{dtype.F32, dtype.F16, dtype.Q8_0, dtype.Q4_0, dtype.Q4_K, dtype.Q6_K} {
			t.Run(fmt.Sprintf("%s %s matches llama.cpp", arch, dt), func(t *testing.T) {
				model := synthModel(t, arch, dt)
				plan := compile(t, model, "cpu-avx2:2")
				steps, d := parity(t, plan, model, "Hello world, this is a test", 32, parityTol[dt])
				t.Logf("%s %s: %d steps, max |Δ|/max|logit| = %.2g", arch, dt, steps, d)
			})
		}
	}
}

// holdToReference compares a generation (its tokens and each step's
// logits) with llama.cpp's under the parity rule: logits within
// tol·max|logit| and the same tokens, except that where llama.cpp's top-2
// margin is within the tolerance the two may part, and only there. It
// returns the steps compared and the largest relative logit delta.
func holdToReference(t *testing.T, name string, got []int32, gotLogits [][]float32, ref []int32, refLogits [][]float32, tol float64) (int, float64) {
	t.Helper()
	var worst float64
	for i := range min(len(got), len(ref)) {
		scale := maxAbs(refLogits[i])
		var d float64
		for j, x := range gotLogits[i] {
			d = max(d, math.Abs(float64(x)-float64(refLogits[i][j])))
		}
		worst = max(worst, d/scale)
		if d > tol*scale {
			t.Errorf("%s: step %d: max |Δlogit| %.3g > %.3g·%.3g", name, i, d, tol, scale)
			return i, worst
		}
		if got[i] != ref[i] {
			if mg := margin(refLogits[i]); mg > tol*scale {
				t.Errorf("%s: step %d: token %d, llama.cpp %d, with a top-2 margin of %.3g > the tolerance %.3g", name, i, got[i], ref[i], mg, tol*scale)
			}
			return i + 1, worst
		}
	}
	return min(len(got), len(ref)), worst
}

// Several prompts prefilled in one batch and decoded together, one row
// each per step, against llama.cpp generating each alone.
func TestBatchedParityWithLlamaCpp(t *testing.T) {
	lib := llamacpp.Require(t)
	type model struct {
		name, path string
		tol        float64
	}
	models := []model{{"stories260K", stories(t), 1e-3}}
	for _, c := range []struct {
		arch string
		dt   dtype.Type
	}{{"llama", dtype.Q8_0}, {"qwen3", dtype.Q4_K}, {"gemma3", dtype.F16}, {"qwen3", dtype.Q4_0}} {
		models = append(models, model{c.arch + " " + c.dt.String(), synthModel(t, c.arch, c.dt), parityTol[c.dt]})
	}
	const n = 16
	for _, md := range models {
		t.Run(md.name, func(t *testing.T) {
			lm, err := lib.LoadModel(md.path)
			if err != nil {
				t.Fatal(err)
			}
			defer lm.Close()
			m := load(t, compile(t, md.path, "cpu-avx2:2"), md.path, 2)
			b := m.NewBatcher()
			gens := make([]*Gen, len(batchPrompts))
			logits := make([][][]float32, len(batchPrompts))
			for i, p := range batchPrompts {
				ids := m.Tokenizer.Tokenize(p, true, false)
				if gens[i], err = b.Add(bg, sess(t, m), ids, GenerateOptions{MaxTokens: n, IgnoreEOS: true, Logits: stepLogits(&logits[i])}); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Step(bg); err != nil { // every prompt in one batch
				t.Fatal(err)
			}
			for i, g := range gens {
				if len(g.Result().Tokens) != 1 {
					t.Fatalf("prompt %d: %d tokens after the first step; the prompts were not prefilled together", i, len(g.Result().Tokens))
				}
			}
			if err := b.Run(bg); err != nil {
				t.Fatal(err)
			}
			for i, p := range batchPrompts {
				ids := m.Tokenizer.Tokenize(p, true, false)
				ctx, err := lm.NewContext(len(ids)+n+8, 512, 1)
				if err != nil {
					t.Fatal(err)
				}
				rtoks, rlogits, err := ctx.GreedyGenerate(ids, n)
				ctx.Close()
				if err != nil {
					t.Fatal(err)
				}
				steps, d := holdToReference(t, fmt.Sprintf("prompt %d", i), gens[i].Result().Tokens, logits[i], rtoks, rlogits, md.tol)
				t.Logf("prompt %d: %d steps, max |Δ|/max|logit| = %.2g", i, steps, d)
			}
		})
	}
}

// The low-bit types (Q2_K, Q3_K), the I-quants without a codebook (IQ4_NL,
// IQ4_XS) and llama.cpp's Q3_K_M mix (Q3_K with Q4_K, Q5_K and Q6_K), each
// whole model against llama.cpp.
func TestLowBitParityWithLlamaCpp(t *testing.T) {
	for _, arch := range []string{"llama", "qwen3"} {
		for _, c := range []struct {
			dt     dtype.Type
			recipe string
		}{{dtype.Q2_K, ""}, {dtype.Q3_K, ""}, {dtype.IQ4_NL, ""}, {dtype.IQ4_XS, ""}, {dtype.Q3_K, "q3_k_m"}} {
			name := c.recipe
			if name == "" {
				name = c.dt.String()
			}
			t.Run(fmt.Sprintf("%s %s matches llama.cpp", arch, name), func(t *testing.T) {
				model := synthMix(t, arch, c.dt, c.recipe)
				plan := compile(t, model, "cpu-avx2:2")
				steps, d := parity(t, plan, model, "Hello world, this is a test", 32, parityTol[c.dt])
				t.Logf("%s %s: %d steps, max |Δ|/max|logit| = %.2g", arch, name, steps, d)
			})
		}
	}
}

// A target that repacks Q4_0, Q8_0, Q4_K and Q6_K (cpu-avx512: the x16
// layouts and kernels, in decode and batches alike) holds to llama.cpp as
// GGUF's layout does.
func TestRepackedParityWithLlamaCpp(t *testing.T) {
	for _, dt := range []dtype.Type{dtype.Q4_0, dtype.Q8_0, dtype.Q4_K, dtype.Q6_K} {
		layout := strings.ToLower(dt.String()) + "x16"
		for _, arch := range []string{"llama", "qwen3", "gemma3"} {
			t.Run(arch+" "+layout+" matches llama.cpp", func(t *testing.T) {
				model := synthModel(t, arch, dt)
				plan := compile(t, model, "cpu-avx512:2")
				p, err := plans.ReadFile(plan)
				if err != nil {
					t.Fatal(err)
				}
				repacked := 0
				for _, b := range p.Buffers {
					if b.Recipe == "repack:"+layout {
						repacked++
					}
				}
				if repacked == 0 {
					t.Fatal("the plan repacks nothing")
				}
				steps, d := parity(t, plan, model, "Hello world, this is a test", 32, parityTol[dt])
				t.Logf("%s %s, %d repacked weights: %d steps, max |Δ|/max|logit| = %.2g", arch, layout, repacked, steps, d)
			})
		}
	}
}

// NVIDIA plans fuse around their planar GEMVs: the gate|up GEMV gates in
// its own epilogue (glu_fold: the gate and up rows interleaved, no
// silu_gate command), the residual norms fold into the GEMVs around them
// (tuning.fold_norms_max_dim: gemv_*_res, gemv_*_norm), and the decode
// attention rotates q and k itself (tuning.rope_in_attention). Replayed on the CPU
// (its twins give the unfused bits, or the norm's within float rounding)
// they hold to llama.cpp as a GPU plan does (cudaLlamaTol).
func TestFusedGEMVPlansParityWithLlamaCpp(t *testing.T) {
	for _, arch := range []string{"llama", "qwen3"} {
		t.Run(arch+" q4_0 h100-sxm matches llama.cpp", func(t *testing.T) {
			model := synthModel(t, arch, dtype.Q4_0)
			plan := compile(t, model, "h100-sxm")
			p, err := plans.ReadFile(plan)
			if err != nil {
				t.Fatal(err)
			}
			glu, folded, rope := 0, 0, 0
			for _, c := range p.Program("decode").Commands {
				k := p.Pipelines[c.Pipeline].Kernel
				if strings.Contains(k, "_planar_glu") {
					glu++
				}
				if strings.HasPrefix(k, "gemv_") && (strings.HasSuffix(k, "_norm") || strings.HasSuffix(k, "_res")) {
					folded++
				}
				if strings.HasPrefix(k, "flash_attention_decode_rope") {
					rope++
				}
			}
			if glu == 0 || folded == 0 || rope == 0 {
				t.Fatalf("the plan gates %d gate|up GEMVs, folds norms into %d GEMVs and rotates in %d attentions; want all three", glu, folded, rope)
			}
			steps, d := parity(t, plan, model, "Hello world, this is a test", 32, cudaLlamaTol(dtype.Q4_0))
			t.Logf("%s: %d _glu, %d folded GEMVs, %d rotating attentions a step: %d steps, max |Δ|/max|logit| = %.2g", arch, glu, folded, rope, steps, d)
		})
	}
}

// NVIDIA plans read Q4_0 and Q6_K weights in the planar layout (tuning.repack
// q4_0_planar, q6_k_planar); replayed on the CPU (each planar row put back
// in the file's layout, the same dot products) they hold to llama.cpp as a
// GPU plan does (cudaLlamaTol: F16 activations between commands; the same
// plan without the Q6_K layout measured the same 2.4e-2 and 2.1e-2).
func TestPlanarPlansParityWithLlamaCpp(t *testing.T) {
	for _, arch := range []string{"llama", "qwen3"} {
		t.Run(arch+" q4_k_m h100-sxm matches llama.cpp", func(t *testing.T) {
			model := synthMix(t, arch, dtype.Q4_K, "q4_k_m")
			plan := compile(t, model, "h100-sxm")
			p, err := plans.ReadFile(plan)
			if err != nil {
				t.Fatal(err)
			}
			planar := 0
			for _, b := range p.Buffers {
				if b.Recipe == "repack:q6_k_planar" {
					planar++
				}
			}
			if planar == 0 {
				t.Fatal("the plan has no Q6_K planar buffer")
			}
			steps, d := parity(t, plan, model, "Hello world, this is a test", 32, cudaLlamaTol(dtype.Q4_K))
			t.Logf("%s: %d Q6_K planar buffers: %d steps, max |Δ|/max|logit| = %.2g", arch, planar, steps, d)
		})
	}
}

// The copier (synth.Options.Copier) is a llama of hand-set weights;
// llama.cpp runs it to the same tokens and logits, so the copy is the
// architecture's, not something of akunu's kernels.
func TestCopierParityWithLlamaCpp(t *testing.T) {
	model := synthCopier(t, dtype.Q8_0)
	plan := compile(t, model, "cpu-avx2:2")
	steps, d := parity(t, plan, model, passage, 32, parityTol[dtype.Q8_0])
	t.Logf("copier q8_0: %d steps, max |Δ|/max|logit| = %.2g", steps, d)
}
