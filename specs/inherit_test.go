package specs_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/specs"
)

func TestInheritanceOverridesByName(t *testing.T) {
	files := builtinFiles(t)
	files["archs/child.yaml"] = []byte(`inherit: llama
architectures: [child]
doc: a llama with a post-attention norm block and no ffn
hparams:
  norm_eps: {key: attention.layer_norm_rms_epsilon, type: float, default: 1e-6}
tensors:
  ffn_gate: ~
  post: blk.{layer}.post_attention_norm.weight [dim]
require:
  - check: layers < 100
    message: too deep
layer:
  ffn: ~
  post:
    - x = rmsnorm(x, post)
`)
	r, err := specs.Load(files)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := r.ForArchitecture("child")
	if got, want := a.Chain, []string{"child", "llama", "base"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Chain = %v, want %v", got, want)
	}
	if got, want := a.Blocks(), []string{"attn", "post"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Blocks = %v, want %v (parent order, deletions, new ones appended)", got, want)
	}
	if a.RopeStyle() != specs.RopeInterleaved {
		t.Errorf("RopeStyle = %s, inherited from llama", a.RopeStyle())
	}
	md := stories260K()
	md.KV["general.architecture"] = specs.StringValue("child")
	for k, v := range md.KV {
		if rest, ok := strings.CutPrefix(k, "llama."); ok {
			md.KV["child."+rest] = v
		}
	}
	delete(md.KV, "child.attention.layer_norm_rms_epsilon")
	hp, err := a.Resolve(md)
	if err != nil {
		t.Fatal(err)
	}
	if hp.NormEps != 1e-6 {
		t.Errorf("NormEps = %g: the child's default applies", hp.NormEps)
	}
	ts, _ := a.Tensors(hp)
	names := map[string]bool{}
	for _, tn := range ts {
		names[tn.Logical] = true
	}
	if names["ffn_gate"] || names["ffn_up"] || !names["post"] || !names["attn_q"] {
		t.Errorf("tensors %v: ffn ones gone (deleted or unused), post and attn_q present", names)
	}
	// Requirements accumulate: the parent's still apply.
	md.KV["child.expert_count"] = specs.IntValue(8) // and no expert_used_count
	if _, err := a.Resolve(md); !errors.Is(err, specs.ErrConstraint) || !strings.Contains(err.Error(), "experts used per token") {
		t.Errorf("llama's requirement is lost: %v", err)
	}
}

func TestAnErrorInAParentIsReportedOnce(t *testing.T) {
	files := builtinFiles(t)
	files["archs/parent.yaml"] = []byte(`inherit: llama
architectures: [parent]
layer:
  ffn:
    - x = add(x, matmull(x, ffn_down))
`)
	files["archs/kid1.yaml"] = []byte("inherit: parent\narchitectures: [kid1]\n")
	files["archs/kid2.yaml"] = []byte("inherit: parent\narchitectures: [kid2]\n")
	_, err := specs.Load(files)
	want := `archs/parent.yaml:5:18: layer.ffn[0]: unknown op "matmull" (did you mean matmul?)`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}

func TestHParamKeysSayHowToWriteEachValue(t *testing.T) {
	a, err := builtin(t).ForArchitecture("gemma3")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]specs.HParamKey{}
	for _, k := range a.HParamKeys() {
		keys[k.Name] = k
	}
	checks := []struct {
		name string
		want specs.HParamKey
	}{
		{"dim", specs.HParamKey{Name: "dim", Type: specs.Type{Kind: specs.KindInt}, Key: "embedding_length", Relative: true, Standard: true}},
		{"vocab", specs.HParamKey{Name: "vocab", Type: specs.Type{Kind: specs.KindInt}, Key: "tokenizer.ggml.tokens", Len: true, Standard: true,
			Doc: "the vocabulary is the length of the token list"}},
		{"swa_pattern", specs.HParamKey{Name: "swa_pattern", Type: specs.Type{Kind: specs.KindInt}, Key: "attention.sliding_window_pattern", Relative: true, Default: "6"}},
		{"sliding", specs.HParamKey{Name: "sliding", Type: specs.Type{Kind: specs.KindBool}, PerLayer: true, Standard: true,
			Expr: "swa_window > 0 && (swa_pattern == 0 || layer % swa_pattern < swa_pattern - 1)"}},
	}
	for _, c := range checks {
		got := keys[c.name]
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
	if k := keys["dim"]; !k.Required() || k.FullKey("gemma3") != "gemma3.embedding_length" {
		t.Errorf("dim: required %v, full key %s", k.Required(), k.FullKey("gemma3"))
	}
	if k := keys["swa_pattern"]; k.Required() {
		t.Error("swa_pattern has a default, so it is not required")
	}
	if _, err := a.MetadataFor("gemma3", map[string]specs.Value{"sliding": specs.BoolValue(true)}); err == nil {
		t.Error("a derived hparam cannot be written")
	}
	if _, err := a.MetadataFor("gemma3", map[string]specs.Value{"dimm": specs.IntValue(1)}); err == nil || !strings.Contains(err.Error(), "did you mean dim?") {
		t.Errorf("unknown hparam: %v", err)
	}
}
