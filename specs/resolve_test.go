package specs_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/specs"
)

// stories260K is the metadata of ../shared/models/stories260K.gguf (a real
// llama), without the tokenizer's contents.
// stories260KAs is stories260K's metadata as an architecture of another
// name: its llama.* keys copied under arch.
func stories260KAs(arch string) *specs.MapMetadata {
	md := stories260K()
	md.KV["general.architecture"] = specs.StringValue(arch)
	for k, v := range md.KV {
		if rest, ok := strings.CutPrefix(k, "llama."); ok {
			md.KV[arch+"."+rest] = v
		}
	}
	return md
}

func stories260K() *specs.MapMetadata {
	return specs.NewMapMetadata(map[string]specs.Value{
		"general.architecture":                   specs.StringValue("llama"),
		"llama.embedding_length":                 specs.IntValue(64),
		"llama.block_count":                      specs.IntValue(5),
		"llama.attention.head_count":             specs.IntValue(8),
		"llama.attention.head_count_kv":          specs.IntValue(4),
		"llama.feed_forward_length":              specs.IntValue(172),
		"llama.context_length":                   specs.IntValue(2048),
		"llama.rope.dimension_count":             specs.IntValue(8),
		"llama.attention.layer_norm_rms_epsilon": specs.FloatValue(1e-5),
		"tokenizer.ggml.tokens":                  specs.ArrayValue(specs.KindString, 512, nil),
	}, "output.weight")
}

func resolve(t *testing.T, md specs.Metadata) (*specs.Arch, *specs.HParams) {
	t.Helper()
	v, _ := md.Lookup("general.architecture")
	a, err := builtin(t).ForArchitecture(v.Str)
	if err != nil {
		t.Fatal(err)
	}
	hp, err := a.Resolve(md)
	if err != nil {
		t.Fatal(err)
	}
	return a, hp
}

func TestStories260KResolvesToItsHyperparameters(t *testing.T) {
	a, hp := resolve(t, stories260K())
	checks := []struct {
		name      string
		got, want any
	}{
		{"Spec", hp.Spec, "llama"},
		{"Dim", hp.Dim, 64},
		{"Layers", hp.Layers, 5},
		{"Heads", hp.Heads, 8},
		{"KVHeads", hp.KVHeads, 4},
		{"HeadDim", hp.HeadDim, 8},
		{"HeadDimV", hp.HeadDimV, 8},
		{"FFN", hp.FFN, 172},
		{"Vocab", hp.Vocab, 512},
		{"CtxTrain", hp.CtxTrain, 2048},
		{"NormEps", hp.NormEps, 1e-5},
		{"NormKind", hp.NormKind, specs.NormRMS},
		{"RopeStyle", hp.RopeStyle, specs.RopeInterleaved},
		{"RopeBase", hp.RopeBase, 10000.0},
		{"RopeDim", hp.RopeDim, 8},
		{"RopeScaling.Type", hp.RopeScaling.Type, specs.ScalingNone},
		{"RopeScaling.Factor", hp.RopeScaling.Factor, 1.0},
		{"SlidingWindow", hp.SlidingWindow, 0},
		{"SlidingLayers", hp.SlidingLayers, []bool{false, false, false, false, false}},
		{"AttnSoftcap", hp.AttnSoftcap, 0.0},
		{"FinalSoftcap", hp.FinalSoftcap, 0.0},
		{"EmbedScale", hp.EmbedScale, 1.0},
		{"AttnScale", hp.AttnScale, 1 / math.Sqrt(8)},
		{"TiedOutput", hp.TiedOutput, false},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}

	ts, err := a.Tensors(hp)
	if err != nil {
		t.Fatal(err)
	}
	required := 0
	for _, tn := range ts {
		if !tn.Optional {
			required++
		}
	}
	if required != 2+5*9 {
		t.Errorf("%d required tensors, want 47 (token_embd, output_norm + 9 per layer)", required)
	}
	want := map[string]specs.Tensor{
		"token_embd.weight":        {Logical: "token_embd", Layer: -1, Shape: []int64{64, 512}, Role: specs.RoleEmbedding},
		"output.weight":            {Logical: "output", Layer: -1, Shape: []int64{64, 512}, Optional: true, Role: specs.RoleWeight},
		"blk.3.attn_k.weight":      {Logical: "attn_k", Layer: 3, Shape: []int64{64, 32}, Role: specs.RoleWeight},
		"blk.4.ffn_down.weight":    {Logical: "ffn_down", Layer: 4, Shape: []int64{172, 64}, Role: specs.RoleWeight},
		"blk.0.attn_norm.weight":   {Logical: "attn_norm", Layer: 0, Shape: []int64{64}, Role: specs.RoleNorm},
		"blk.2.attn_q.bias":        {Logical: "attn_q_b", Layer: 2, Shape: []int64{64}, Optional: true, Role: specs.RoleBias},
		"rope_freqs.weight":        {Logical: "rope_freqs", Layer: -1, Shape: []int64{4}, Optional: true, Role: specs.RoleRopeFactors},
		"blk.1.attn_output.bias":   {Logical: "attn_output_b", Layer: 1, Shape: []int64{64}, Optional: true, Role: specs.RoleBias},
		"blk.1.attn_output.weight": {Logical: "attn_output", Layer: 1, Shape: []int64{64, 64}, Role: specs.RoleWeight},
	}
	for _, tn := range ts {
		w, ok := want[tn.Name]
		if !ok {
			continue
		}
		delete(want, tn.Name)
		if tn.Logical != w.Logical || tn.Layer != w.Layer || !reflect.DeepEqual(tn.Shape, w.Shape) || tn.Optional != w.Optional || tn.Role != w.Role {
			t.Errorf("%s = %+v, want %+v", tn.Name, tn, w)
		}
	}
	for name := range want {
		t.Errorf("%s is not listed", name)
	}
	for _, tn := range ts {
		if tn.Optional && tn.Present != (tn.Name == "output.weight") {
			t.Errorf("%s: Present = %v", tn.Name, tn.Present)
		}
	}
}

func TestATiedModelUsesTheEmbeddingTableForLogits(t *testing.T) {
	md := stories260K()
	delete(md.Tensors, "output.weight")
	a, hp := resolve(t, md)
	if !hp.TiedOutput {
		t.Error("TiedOutput = false without output.weight")
	}
	p, err := a.Program(hp)
	if err != nil {
		t.Fatal(err)
	}
	last := p.Epilogue[len(p.Epilogue)-1]
	if last.Kind != specs.OpMatmul || last.Weight != "token_embd.weight" {
		t.Errorf("logits from %v %s, want matmul with token_embd.weight", last.Kind, last.Weight)
	}
	if p.Logits != last.Out[0] || p.Values[p.Logits].Width != 512 {
		t.Errorf("logits %d (width %d)", p.Logits, p.Values[p.Logits].Width)
	}
}

// gemma3Like is a small Gemma 3 with a sliding window and the default
// pattern (every sixth layer global).
func gemma3Like(window int64) *specs.MapMetadata {
	kv := map[string]specs.Value{
		"general.architecture":                    specs.StringValue("gemma3"),
		"gemma3.embedding_length":                 specs.IntValue(64),
		"gemma3.block_count":                      specs.IntValue(8),
		"gemma3.attention.head_count":             specs.IntValue(4),
		"gemma3.attention.head_count_kv":          specs.IntValue(1),
		"gemma3.attention.key_length":             specs.IntValue(32),
		"gemma3.attention.value_length":           specs.IntValue(32),
		"gemma3.feed_forward_length":              specs.IntValue(128),
		"gemma3.context_length":                   specs.IntValue(32768),
		"gemma3.attention.layer_norm_rms_epsilon": specs.FloatValue(1e-6),
		"gemma3.rope.freq_base":                   specs.FloatValue(1e6),
		"gemma3.rope.scaling.type":                specs.StringValue("linear"),
		"gemma3.rope.scaling.factor":              specs.FloatValue(8),
		"tokenizer.ggml.tokens":                   specs.ArrayValue(specs.KindString, 256, nil),
	}
	if window > 0 {
		kv["gemma3.attention.sliding_window"] = specs.IntValue(window)
	}
	return specs.NewMapMetadata(kv)
}

func TestGemma3SlidesOnFiveLayersOfSix(t *testing.T) {
	a, hp := resolve(t, gemma3Like(512))
	wantSliding := []bool{true, true, true, true, true, false, true, true}
	if !reflect.DeepEqual(hp.SlidingLayers, wantSliding) {
		t.Errorf("SlidingLayers = %v, want %v", hp.SlidingLayers, wantSliding)
	}
	if hp.SlidingWindow != 512 || hp.RopeBase != 1e6 || hp.RopeBaseSWA != 10000 {
		t.Errorf("window %d, rope base %g, local %g", hp.SlidingWindow, hp.RopeBase, hp.RopeBaseSWA)
	}
	if hp.EmbedScale != 8 || hp.AttnScale != 1/math.Sqrt(32) || hp.FinalSoftcap != 0 || hp.AttnSoftcap != 0 {
		t.Errorf("embed scale %g, attn scale %g, softcaps %g %g", hp.EmbedScale, hp.AttnScale, hp.AttnSoftcap, hp.FinalSoftcap)
	}
	if hp.RopeScaling.Type != specs.ScalingLinear || hp.RopeScaling.Factor != 8 {
		t.Errorf("rope scaling %+v", hp.RopeScaling)
	}
	if !hp.TiedOutput {
		t.Error("no output.weight, but TiedOutput is false")
	}
	p, err := a.Program(hp)
	if err != nil {
		t.Fatal(err)
	}
	for l, ops := range p.Layers {
		var bases []float64
		var scales []float64
		window := -1
		for _, op := range ops {
			switch op.Kind {
			case specs.OpRope:
				bases = append(bases, op.RopeBase)
				scales = append(scales, op.RopeFreqScale)
				if op.HeadDim != 32 || op.RopeStyle != specs.RopeNeox {
					t.Errorf("L%d rope: head_dim %d, style %s", l, op.HeadDim, op.RopeStyle)
				}
			case specs.OpAttention:
				window = op.Window
				if op.Heads != 4 || op.KVHeads != 1 || op.Scale != 1/math.Sqrt(32) || op.KVLayer != l {
					t.Errorf("L%d attention: %+v", l, op)
				}
			}
		}
		base, scale, w := 10000.0, 1.0, 512
		if !wantSliding[l] {
			base, scale, w = 1e6, 1.0/8, 0
		}
		if !reflect.DeepEqual(bases, []float64{base, base}) || !reflect.DeepEqual(scales, []float64{scale, scale}) || window != w {
			t.Errorf("L%d: rope bases %v scales %v, window %d; want %g, %g, %d", l, bases, scales, window, base, scale, w)
		}
	}
	for _, op := range p.Epilogue {
		if op.Kind == specs.OpSoftcap {
			t.Error("gemma3 without final_logit_softcapping has a softcap op")
		}
	}
}

func TestGemma3WithoutAWindowSlidesNowhere(t *testing.T) {
	_, hp := resolve(t, gemma3Like(0))
	for l, s := range hp.SlidingLayers {
		if s {
			t.Errorf("layer %d slides", l)
		}
	}
}

func TestGemma3TakesThePatternFromMetadata(t *testing.T) {
	md := gemma3Like(512)
	md.KV["gemma3.attention.sliding_window_pattern"] = specs.IntValue(2)
	_, hp := resolve(t, md)
	want := []bool{true, false, true, false, true, false, true, false}
	if !reflect.DeepEqual(hp.SlidingLayers, want) {
		t.Errorf("SlidingLayers = %v, want %v", hp.SlidingLayers, want)
	}
}

func TestResolveReportsWhatTheModelLacks(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(md *specs.MapMetadata)
		is    error
		wants []string
	}{
		{"a required key is missing",
			func(md *specs.MapMetadata) { delete(md.KV, "llama.embedding_length") },
			specs.ErrMissingKey, []string{`archs/base.yaml:8:21: hparams.dim: the model has no metadata key "llama.embedding_length", and dim has no default`}},
		{"two required keys are missing",
			func(md *specs.MapMetadata) {
				delete(md.KV, "llama.embedding_length")
				delete(md.KV, "llama.feed_forward_length")
			},
			specs.ErrMissingKey, []string{`"llama.embedding_length"`, `"llama.feed_forward_length"`}},
		{"a key has the wrong type",
			func(md *specs.MapMetadata) { md.KV["llama.block_count"] = specs.StringValue("five") },
			specs.ErrBadValue, []string{`hparams.layers: llama.block_count is string ("five"), expected int`}},
		{"a requirement fails",
			func(md *specs.MapMetadata) { md.KV["llama.expert_count"] = specs.IntValue(8) },
			specs.ErrConstraint, []string{"archs/llama.yaml", "require[0]: a mixture-of-experts model needs 1 to min(32, expert_count) experts used per token"}},
		{"heads do not divide",
			func(md *specs.MapMetadata) { md.KV["llama.attention.head_count_kv"] = specs.IntValue(3) },
			specs.ErrConstraint, []string{"the query heads must be a multiple of the KV heads"}},
		{"a per-layer array that varies",
			func(md *specs.MapMetadata) {
				md.KV["llama.attention.head_count"], _ = specs.ValueOf([]uint32{8, 8, 4, 8, 8})
			},
			specs.ErrBadValue, []string{"differs between layers"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			md := stories260K()
			tc.edit(md)
			a, _ := builtin(t).ForArchitecture("llama")
			_, err := a.Resolve(md)
			if err == nil {
				t.Fatal("resolved")
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(%v) false for: %v", tc.is, err)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestAPerLayerArrayOfEqualValuesIsAccepted(t *testing.T) {
	md := stories260K()
	md.KV["llama.attention.head_count"], _ = specs.ValueOf([]uint32{8, 8, 8, 8, 8})
	_, hp := resolve(t, md)
	if hp.Heads != 8 {
		t.Errorf("Heads = %d", hp.Heads)
	}
}

func TestUnknownArchitectureListsTheKnownOnes(t *testing.T) {
	_, err := builtin(t).ForArchitecture("gemma4")
	if !errors.Is(err, specs.ErrUnknownArch) {
		t.Fatalf("err = %v", err)
	}
	want := `no spec for general.architecture "gemma4" (did you mean gemma?); known: bert, gemma, gemma2, gemma3, llama, phi3, qwen2, qwen3, qwen3moe`
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}

func TestCheckTensorTableNamesEachBadTensor(t *testing.T) {
	a, hp := resolve(t, stories260K())
	want, err := a.Tensors(hp)
	if err != nil {
		t.Fatal(err)
	}
	var have []specs.TensorInfo
	for _, w := range want {
		if w.Present {
			have = append(have, specs.TensorInfo{Name: w.Name, Shape: append([]int64(nil), w.Shape...)})
		}
	}
	if err := specs.CheckTensorTable(want, have); err != nil {
		t.Fatalf("the spec's own table fails: %v", err)
	}
	// ggml pads shapes with ones; that is not a difference.
	have[1].Shape = append(have[1].Shape, 1, 1)
	if err := specs.CheckTensorTable(want, have); err != nil {
		t.Fatalf("padded shape: %v", err)
	}
	var broken []specs.TensorInfo
	for _, h := range have {
		switch h.Name {
		case "blk.2.ffn_up.weight":
			continue
		case "blk.3.attn_k.weight":
			h.Shape = []int64{64, 64}
		}
		broken = append(broken, h)
	}
	broken = append(broken, specs.TensorInfo{Name: "blk.0.attn_gate.weight", Shape: []int64{64}})
	err = specs.CheckTensorTable(want, broken)
	for _, s := range []error{specs.ErrMissingTensor, specs.ErrShape, specs.ErrUnexpectedTens} {
		if !errors.Is(err, s) {
			t.Errorf("errors.Is(%v) false", s)
		}
	}
	got := fmt.Sprint(err)
	for _, w := range []string{
		`tensor "blk.2.ffn_up.weight" (ffn_up, declared at archs/llama.yaml:41:18) is missing`,
		`tensor "blk.3.attn_k.weight" has shape [64, 64], the spec wants [64, 32]`,
		`tensor "blk.0.attn_gate.weight" is not one the spec knows`,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in\n%s", w, got)
		}
	}
}

func TestProgramChecksWidthsAgainstTheTensors(t *testing.T) {
	files := builtinFiles(t)
	files["archs/odd.yaml"] = []byte(`inherit: llama
architectures: [odd]
tensors:
  attn_q: blk.{layer}.attn_q.weight [dim, heads * head_dim + 1]
`)
	r, err := specs.Load(files)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := r.ForArchitecture("odd")
	md := stories260KAs("odd")
	_, err = a.Resolve(md)
	if !errors.Is(err, specs.ErrShape) {
		t.Fatalf("err = %v", err)
	}
	want := "archs/llama.yaml:58:11: layer.attn[1] (layer 0): rope: x has 65, not a multiple of head_dim 8"
	if err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// The mixture-of-experts ops hold their arguments to what they mean: a
// route's result is read only by matmul_id and moe_sum, as their last
// argument; matmul_id's weight is [in, out, experts] and its x in or k·in
// wide; route's k is within the experts.
func TestMoEOpsCheckTheirArguments(t *testing.T) {
	for _, tc := range []struct {
		name, ffn, want string
	}{
		{"a route added to x", `
    - r = route(matmul(h, ffn_gate_inp), 2)
    - x = add(x, r)`, "add: argument 2 is a route's result"},
		{"matmul_id without a route", `
    - x = add(x, moe_sum(matmul_id(h, ffn_down_exps, h), h))`, "its last argument must be a route's result"},
		{"k past the experts", `
    - r = route(matmul(h, ffn_gate_inp), 9)
    - x = add(x, moe_sum(matmul_id(matmul_id(h, ffn_up_exps, r), ffn_down_exps, r), r))`, "k 9: want 1 to min(32, 4 experts)"},
		{"a 2-D weight", `
    - r = route(matmul(h, ffn_gate_inp), 2)
    - x = add(x, moe_sum(matmul_id(h, ffn_gate_inp, r), r))`, "not [in, out, experts]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := builtinFiles(t)
			files["archs/moe.yaml"] = []byte(`inherit: llama
architectures: [moe]
tensors:
  ffn_gate_inp:  blk.{layer}.ffn_gate_inp.weight [dim, 4]
  ffn_up_exps:   blk.{layer}.ffn_up_exps.weight [dim, ffn, 4]
  ffn_down_exps: blk.{layer}.ffn_down_exps.weight [ffn, dim, 4]
layer:
  ffn:
    - h = rmsnorm(x, ffn_norm)` + tc.ffn + "\n")
			r, err := specs.Load(files)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := r.ForArchitecture("moe")
			md := stories260KAs("moe")
			_, err = a.Resolve(md)
			if !errors.Is(err, specs.ErrShape) || !strings.Contains(fmt.Sprint(err), tc.want) {
				t.Errorf("err = %v\nwant %q", err, tc.want)
			}
		})
	}
}
