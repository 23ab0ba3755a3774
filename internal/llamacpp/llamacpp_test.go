package llamacpp_test

import (
	"math"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/internal/llamacpp"
)

// TestStructLayouts holds the Go mirrors to the offsets a C compiler gives
// for include/llama.h on 64-bit targets (gcc, x86-64 and arm64 agree).
func TestStructLayouts(t *testing.T) {
	var mp llamacpp.ModelParams
	var cp llamacpp.ContextParams
	checks := []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof(llama_model_params)", unsafe.Sizeof(mp), 80},
		{"llama_model_params.n_gpu_layers", unsafe.Offsetof(mp.NGPULayers), 16},
		{"llama_model_params.main_gpu", unsafe.Offsetof(mp.MainGPU), 32},
		{"llama_model_params.tensor_split", unsafe.Offsetof(mp.TensorSplit), 40},
		{"llama_model_params.kv_overrides", unsafe.Offsetof(mp.KVOverrides), 64},
		{"llama_model_params.vocab_only", unsafe.Offsetof(mp.VocabOnly), 72},
		{"llama_model_params.load_mtp", unsafe.Offsetof(mp.LoadMTP), 77},
		{"sizeof(llama_context_params)", unsafe.Sizeof(cp), 160},
		{"llama_context_params.n_threads_batch", unsafe.Offsetof(cp.NThreadsBatch), 32},
		{"llama_context_params.ctx_type", unsafe.Offsetof(cp.CtxType), 36},
		{"llama_context_params.pooling_type", unsafe.Offsetof(cp.PoolingType), 44},
		{"llama_context_params.attention_type", unsafe.Offsetof(cp.AttentionType), 48},
		{"llama_context_params.flash_attn_type", unsafe.Offsetof(cp.FlashAttnType), 52},
		{"llama_context_params.rope_freq_base", unsafe.Offsetof(cp.RopeFreqBase), 56},
		{"llama_context_params.yarn_orig_ctx", unsafe.Offsetof(cp.YarnOrigCtx), 80},
		{"llama_context_params.defrag_thold", unsafe.Offsetof(cp.DefragThold), 84},
		{"llama_context_params.cb_eval", unsafe.Offsetof(cp.CbEval), 88},
		{"llama_context_params.type_k", unsafe.Offsetof(cp.TypeK), 104},
		{"llama_context_params.abort_callback", unsafe.Offsetof(cp.AbortCallback), 112},
		{"llama_context_params.embeddings", unsafe.Offsetof(cp.Embeddings), 128},
		{"llama_context_params.kv_unified", unsafe.Offsetof(cp.KVUnified), 133},
		{"llama_context_params.samplers", unsafe.Offsetof(cp.Samplers), 136},
		{"llama_context_params.n_samplers", unsafe.Offsetof(cp.NSamplers), 144},
		{"llama_context_params.ctx_other", unsafe.Offsetof(cp.CtxOther), 152},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, C says %d", c.name, c.got, c.want)
		}
	}
}

// TestDefaultParamsCrossTheABI checks that structs returned by value arrive
// intact: the defaults are what llama.cpp's own C callers see.
func TestDefaultParamsCrossTheABI(t *testing.T) {
	l := llamacpp.Require(t)
	mp := l.DefaultModelParams()
	if mp.SplitMode != 1 || mp.LoadMode != llamacpp.LoadModeAuto || mp.LazyMode != 1 || !mp.UseExtraBufts || mp.VocabOnly {
		t.Errorf("model defaults look shifted: %+v", mp)
	}
	cp := l.DefaultContextParams()
	if cp.NCtx != 512 || cp.NBatch != 2048 || cp.NUbatch != 512 || cp.NSeqMax != 1 ||
		cp.FlashAttnType != llamacpp.FlashAttnAuto || cp.YarnExtFactor != -1 ||
		cp.PoolingType != llamacpp.PoolingUnspecified || cp.AttentionType != llamacpp.AttentionUnspecified || cp.Embeddings ||
		cp.TypeK != int32(dtype.F16) || cp.TypeV != int32(dtype.F16) ||
		!cp.OffloadKQV || !cp.NoPerf || cp.KVUnified || cp.Samplers != 0 {
		t.Errorf("context defaults look shifted: %+v", cp)
	}
}

func TestGGMLTypeTableMatchesOurRegistry(t *testing.T) {
	l := llamacpp.Require(t)
	live := map[dtype.Type]bool{}
	for _, ty := range dtype.All() {
		live[ty] = true
		if got, want := l.TypeName(ty), ty.Lookup; got != func() string { in, _ := want(); return in.Name }() {
			t.Errorf("%v: ggml names it %q", ty, got)
		}
		if got := l.BlockSize(ty); got != ty.BlockSize() {
			t.Errorf("%v: ggml block size %d, ours %d", ty, got, ty.BlockSize())
		}
		if got := l.TypeSize(ty); got != ty.BlockBytes() {
			t.Errorf("%v: ggml block bytes %d, ours %d", ty, got, ty.BlockBytes())
		}
	}
	for code := dtype.Type(0); code < 43; code++ {
		if !live[code] && l.BlockSize(code) != 0 {
			t.Errorf("code %d is live in ggml (%s) but not in our registry", code, l.TypeName(code))
		}
	}
}

func TestReferenceQuantizerRoundTrip(t *testing.T) {
	l := llamacpp.Require(t)
	src := make([]float32, 64)
	for i := range src {
		src[i] = float32(math.Sin(float64(i)))
	}
	q, err := l.QuantizeRef(dtype.Q8_0, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(q) != 2*34 {
		t.Fatalf("Q8_0 of 64 values is %d bytes", len(q))
	}
	back, err := l.Dequantize(dtype.Q8_0, q, len(src))
	if err != nil {
		t.Fatal(err)
	}
	for i := range src {
		if d := math.Abs(float64(back[i] - src[i])); d > 0.01 {
			t.Fatalf("element %d: %g came back as %g", i, src[i], back[i])
		}
	}
	if _, err := l.Dequantize(dtype.Q8_0, q[:10], len(src)); err == nil {
		t.Error("a short source was accepted")
	}
	if _, err := l.Dequantize(dtype.F32, make([]byte, 8), 2); err == nil {
		t.Error("F32 has no to_float in ggml, but Dequantize did not say so")
	}
}

func stories(t *testing.T) (*llamacpp.Lib, *llamacpp.Model) {
	t.Helper()
	l := llamacpp.Require(t)
	path, err := llamacpp.SharedPath("models", "stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the reference model is missing: %v", err)
	}
	m, err := l.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return l, m
}

func TestStories260KHyperparameters(t *testing.T) {
	_, m := stories(t)
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"n_embd", m.NEmbd(), 64},
		{"n_layer", m.NLayer(), 5},
		{"n_head", m.NHead(), 8},
		{"n_head_kv", m.NHeadKV(), 4},
		{"n_vocab", m.NVocab(), 512},
		{"rope type", m.RopeType(), llamacpp.RopeTypeNorm},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if arch, ok := m.Meta("general.architecture"); !ok || arch != "llama" {
		t.Errorf("general.architecture = %q, %v", arch, ok)
	}
	if _, ok := m.Meta("no.such.key"); ok {
		t.Error("a missing key was found")
	}
	if s := m.RopeFreqScaleTrain(); s != 1 {
		t.Errorf("rope_freq_scale_train = %g", s)
	}
	if m.NCtxTrain() <= 0 {
		t.Errorf("n_ctx_train = %d", m.NCtxTrain())
	}
}

func TestStories260KGreedyDecodeIsPlausible(t *testing.T) {
	_, m := stories(t)
	toks, err := m.Tokenize("Once upon a time", true, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(toks) < 2 || toks[0] != m.BOS() {
		t.Fatalf("tokens %v do not start with BOS %d", toks, m.BOS())
	}
	var prompt strings.Builder
	for _, tk := range toks[1:] {
		prompt.WriteString(m.TokenToPiece(tk, false))
	}
	if got := strings.TrimSpace(prompt.String()); got != "Once upon a time" {
		t.Errorf("pieces of the prompt join to %q", got)
	}

	ctx, err := m.NewContext(128, 64, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	gen, logits, err := ctx.GreedyGenerate(toks, 16)
	if err != nil {
		t.Fatal(err)
	}
	if len(gen) != 16 || len(logits) != 16 {
		t.Fatalf("got %d tokens and %d logit rows", len(gen), len(logits))
	}
	var text strings.Builder
	for i, tk := range gen {
		if len(logits[i]) != 512 {
			t.Fatalf("step %d: %d logits", i, len(logits[i]))
		}
		for _, x := range logits[i] {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("step %d: logit %g", i, x)
			}
		}
		text.WriteString(m.TokenToPiece(tk, false))
	}
	out := text.String()
	t.Logf("greedy continuation: %q", out)
	words := strings.Fields(out)
	if len(words) < 3 {
		t.Errorf("continuation %q has too few words", out)
	}
	for _, w := range words {
		if strings.ContainsFunc(w, func(r rune) bool { return r < ' ' || r == '\uFFFD' }) {
			t.Errorf("continuation %q has odd text", out)
		}
	}

	// The same run again gives the same tokens (the KV cache was cleared).
	again, _, err := ctx.GreedyGenerate(toks, 16)
	if err != nil {
		t.Fatal(err)
	}
	for i := range gen {
		if gen[i] != again[i] {
			t.Fatalf("second run diverged at %d: %v vs %v", i, gen, again)
		}
	}

	// Decode of the whole prompt keeps every position's logits, and the
	// last one agrees with the first greedy step.
	ctx.ClearKV()
	if err := ctx.Decode(toks, 0); err != nil {
		t.Fatal(err)
	}
	for i := range toks {
		if ctx.Logits(i) == nil {
			t.Fatalf("no logits for prompt token %d", i)
		}
	}
	if got := llamacpp.Argmax(ctx.Logits(len(toks) - 1)); int32(got) != gen[0] {
		t.Errorf("argmax after the prompt = %d, greedy said %d", got, gen[0])
	}
	if s, err := m.Detokenize(append(toks[1:], gen...), false, false); err != nil || !strings.HasPrefix(s, "Once upon a time") {
		t.Errorf("detokenize = %q, %v", s, err)
	}
}
