package compiler

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/synth"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/specs"
)

// goldenChips are the targets every golden model is compiled for (h100-sxm:
// the NVIDIA plans, with their planar layouts and folds); the CPU
// target's core count is fixed so that goldens do not depend on the machine.
var goldenChips = []string{"m1", "m3-pro", "m4-max", "cpu-avx2:8", "h100-sxm"}

// goldenProgram keeps a golden short: decode, sampled and the batch (or
// embedding) bucket of 8 rows; the other buckets differ from it only in
// rows and in the kernels that depend on them (TestBatchBuckets covers
// those).
func goldenProgram(name string) bool {
	return name == plans.ProgDecode || name == plans.ProgSampled || name == plans.BatchName(8) || name == plans.EmbedName(8)
}

func TestGoldenPlans(t *testing.T) {
	dir := t.TempDir()
	models := []struct {
		name string
		path func() string
	}{
		{"stories260K", func() string { return sharedFile(t, "models", "stories260K.gguf") }},
		{"llama-q8_0", func() string {
			return synthModel(t, dir, synth.Options{Arch: "llama", Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, FFN: 512, DType: dtype.Q8_0, Seed: 7})
		}},
		{"qwen3-f16", func() string {
			return synthModel(t, dir, synth.Options{Arch: "qwen3", Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 512, DType: dtype.F16, Tied: true, Seed: 7})
		}},
		{"gemma3-q4_0", func() string {
			return synthModel(t, dir, synth.Options{Arch: "gemma3", Dim: 256, Layers: 2, Heads: 4, KVHeads: 1, HeadDim: 64, FFN: 512, DType: dtype.Q4_0, Tied: true, Seed: 7})
		}},
		{"qwen3moe-q4_0", func() string {
			return synthModel(t, dir, synth.Options{Arch: "qwen3moe", Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 512, DType: dtype.Q4_0, Tied: true, Seed: 7,
				Set: map[string]specs.Value{"expert_count": specs.IntValue(8), "expert_used": specs.IntValue(2), "expert_ffn": specs.IntValue(128)}})
		}},
		{"bert-f16", func() string {
			return synthModel(t, dir, synth.Options{Arch: "bert", Dim: 256, Layers: 2, Heads: 4, FFN: 512, DType: dtype.F16, Seed: 7})
		}},
	}
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) {
			path := m.path()
			for _, c := range goldenChips {
				p := compile(t, path, Options{Chip: chip(t, c), Ctx: 256})
				short := *p
				short.Header.Model.Path = "" // where the test's model lies: not the plan's business
				short.Programs = nil
				for _, pr := range p.Programs {
					if goldenProgram(pr.Name) {
						short.Programs = append(short.Programs, pr)
					}
				}
				var b bytes.Buffer
				var names []string
				for _, pr := range short.Programs {
					names = append(names, pr.Name)
				}
				fmt.Fprintf(&b, "# %s compiled for %s, ctx 256; programs %s of %d\n", m.name, c, strings.Join(names, ", "), len(p.Programs))
				if err := short.RenderWith(&b, plans.RenderOptions{Params: kernels.ParamFields}); err != nil {
					t.Fatal(err)
				}
				golden(t, fmt.Sprintf("%s.%s.txt", m.name, strings.ReplaceAll(c, ":", "-")), b.Bytes())
			}
		})
	}
}

func TestBatchBuckets(t *testing.T) {
	path := llama8BPath(t, 2)
	p := compile(t, path, Options{Chip: chip(t, "m4-pro")})
	var got []string
	for _, pr := range p.Programs {
		if pr.Kind != plans.KindBatch {
			continue
		}
		qkv := commandOf(p, pr.Name, "L0.attn.qkv")
		att := commandOf(p, pr.Name, "L0.attn.attention")
		lm := commandOf(p, pr.Name, "logits")
		got = append(got, fmt.Sprintf("%s out %d: %s %s %s", pr.Name, pr.OutRows, p.Pipelines[qkv.Pipeline].Kernel,
			p.Pipelines[att.Pipeline].Kernel, p.Pipelines[lm.Pipeline].Kernel))
	}
	// The LM head runs over the output rows only: up to 8 the small GEMM.
	want := []string{
		"batch.4 out 4: simd_gemm_small_q4_0 flash_attention_prefill_rows_f16 simd_gemm_small_q4_0",
		"batch.8 out 8: simd_gemm_small_q4_0 flash_attention_prefill_rows_f16 simd_gemm_small_q4_0",
		"batch.16 out 16: simd_gemm_q4_0 flash_attention_prefill_rows_f16 simd_gemm_q4_0",
		"batch.32 out 32: simd_gemm_q4_0 flash_attention_prefill_rows_f16 simd_gemm_q4_0",
		"batch.128 out 32: simd_gemm_q4_0 flash_attention_prefill_v2_rows_f16 simd_gemm_q4_0",
		"batch.512 out 32: simd_gemm_q4_0 flash_attention_prefill_v2_rows_f16 simd_gemm_q4_0",
		"batch.2048 out 32: simd_gemm_q4_0 flash_attention_prefill_v2_rows_f16 simd_gemm_q4_0",
		"batch.4096 out 32: simd_gemm_q4_0 flash_attention_prefill_v2_rows_f16 simd_gemm_q4_0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("batch programs:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func BenchmarkCompile8B(b *testing.B) {
	path := llama8BPath(b, 32)
	o := Options{Chip: chip(b, "m4-pro")}
	if _, err := Compile(path, o); err != nil { // warm the spec registry
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := Compile(path, o); err != nil {
			b.Fatal(err)
		}
	}
}
