package compiler

import (
	"errors"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/synth"
)

// --kv-type: each KV buffer says its type in the plan's lower-case dtype
// names (what the runtime and akunu verify read), is sized for it, and the
// KV writes and attention take the matching variant; GPU plans, unknown
// types and heads that are not whole Q8_0 blocks are refused.
func TestKVTypeOption(t *testing.T) {
	model := synthModel(t, t.TempDir(), synth.Options{Arch: "qwen3", Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 512,
		DType: dtype.Q8_0, Tied: true, Seed: 7})
	for _, c := range []struct {
		kv, dtype, suffix string
		row               uint64 // bytes of a 64-element row
	}{{"", "f16", "_f32", 128}, {"f16", "f16", "_f32", 128}, {"q8_0", "q8_0", "_kvq8_0_f32", 68}, {"F32", "f32", "_kvf32_f32", 256}} {
		p := compile(t, model, Options{Chip: chip(t, "cpu-avx2"), Ctx: 300, KVType: c.kv})
		kvs := 0
		for _, b := range p.Buffers {
			if !strings.HasPrefix(b.Name, "kv.") {
				continue
			}
			kvs++
			if b.DType != c.dtype || b.Size != c.row*300*2 {
				t.Errorf("--kv-type %q: %s is %s of %d bytes, want %s of %d", c.kv, b.Name, b.DType, b.Size, c.dtype, c.row*300*2)
			}
		}
		attn := 0
		for _, pl := range p.Pipelines {
			if strings.Contains(pl.Kernel, "attention") && !strings.Contains(pl.Kernel, "reduce") || strings.Contains(pl.Kernel, "kv_write") {
				attn++
				plain := !strings.Contains(pl.Kernel, "_kvq8_0") && !strings.Contains(pl.Kernel, "_kvf32")
				if !strings.HasSuffix(pl.Kernel, c.suffix) || (c.suffix == "_f32") != plain {
					t.Errorf("--kv-type %q: pipeline %s", c.kv, pl.Kernel)
				}
			}
		}
		if kvs != 4 || attn == 0 {
			t.Errorf("--kv-type %q: %d KV buffers, %d attention and KV-write pipelines", c.kv, kvs, attn)
		}
	}
	for _, c := range []struct {
		chip, kv string
		model    string
		is       error
	}{{"m1", "q8_0", model, ErrOptions}, {"h100-sxm", "f32", model, ErrOptions}, {"cpu-avx2", "q4_0", model, ErrOptions},
		{"cpu-avx2", "q8_0", sharedFile(t, "models", "stories260K.gguf"), ErrUnsupported}} {
		if _, err := Compile(c.model, Options{Chip: chip(t, c.chip), Ctx: 300, KVType: c.kv}); !errors.Is(err, c.is) {
			t.Errorf("--kv-type %s for %s: %v, want %v", c.kv, c.chip, err, c.is)
		}
	}
}
