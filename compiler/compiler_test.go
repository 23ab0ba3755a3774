package compiler

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/compiler/synth"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/specs"
)

func TestCompileIsDeterministic(t *testing.T) {
	path := llama8BPath(t, 2)
	for _, c := range []string{"m4-pro", "m1", "cpu-avx2:8"} {
		a := compile(t, path, Options{Chip: chip(t, c)})
		b := compile(t, path, Options{Chip: chip(t, c)})
		ea, eb := plans.Encode(a), plans.Encode(b)
		if !bytes.Equal(ea, eb) {
			t.Errorf("%s: two compilations differ (%d and %d bytes)", c, len(ea), len(eb))
		}
	}
}

// layerKernels lists the kernels of layer l's commands in a program.
func layerKernels(p *plans.Plan, prog string, l int) (labels, ks []string) {
	prefix := fmt.Sprintf("L%d.", l)
	for _, c := range p.Program(prog).Commands {
		if strings.HasPrefix(c.Label, prefix) {
			labels = append(labels, c.Label)
			ks = append(ks, p.Pipelines[c.Pipeline].Kernel)
		}
	}
	return labels, ks
}

func commandOf(p *plans.Plan, prog, label string) *plans.Command {
	for i, c := range p.Program(prog).Commands {
		if c.Label == label {
			return &p.Program(prog).Commands[i]
		}
	}
	return nil
}

// constant is the value of constant name of the pipeline that command
// label of program prog runs (-1 where it has none).
func constant(t *testing.T, p *plans.Plan, prog, label, name string) int {
	t.Helper()
	c := commandOf(p, prog, label)
	if c == nil {
		t.Fatalf("no command %s in %s", label, prog)
	}
	pl := p.Pipelines[c.Pipeline]
	k, ok := kernels.Lookup(pl.Kernel)
	if !ok {
		t.Fatalf("%s: no kernel %s", label, pl.Kernel)
	}
	for _, kc := range k.Constants {
		if kc.Name == name {
			for _, pc := range pl.Constants {
				if pc.Index == uint32(kc.Index) {
					return int(pc.Value)
				}
			}
		}
	}
	return -1
}

func TestLlama8BDecodeForm(t *testing.T) {
	path := llama8BPath(t, 2)
	m4 := compile(t, path, Options{Chip: chip(t, "m4-pro")})
	m1 := compile(t, path, Options{Chip: chip(t, "m1")})

	t.Run("m4-pro fuses QKV, gate|up, SiLU+down, RoPE+KV and the residual norms: 8 commands a layer", func(t *testing.T) {
		for l := range 2 {
			labels, ks := layerKernels(m4, "decode", l)
			want := []string{"rmsnorm_f16", "gemv_q4_0_l", "rope_qkv_write_f16", "flash_attention_decode_fast_f16",
				"gemv_q4_0_l", "residual_rmsnorm_f16", "gemv_q4_0_l", "gemv_q4_0_l_silu"}
			if l > 0 {
				want[0] = "residual_rmsnorm_f16"
			}
			if !slices.Equal(ks, want) {
				t.Errorf("L%d: kernels\n%v\nwant\n%v\n(labels %v)", l, ks, want, labels)
			}
			wantLabels := []string{"attn.norm", "attn.qkv", "attn.rope_kv", "attn.attention", "attn.output", "ffn.norm", "ffn.gate_up", "ffn.down"}
			for i := range wantLabels {
				wantLabels[i] = fmt.Sprintf("L%d.%s", l, wantLabels[i])
			}
			if !slices.Equal(labels, wantLabels) {
				t.Errorf("L%d: labels %v, want %v", l, labels, wantLabels)
			}
			// The engine's form: 8 dispatches a layer (the norm that opens a
			// layer is the previous layer's "next norm").
			if len(ks) != 8 {
				t.Errorf("L%d: %d commands, want 8", l, len(ks))
			}
		}
	})
	t.Run("a context past the chip's threshold splits attention over the cache, then reduces", func(t *testing.T) {
		long := compile(t, path, Options{Chip: chip(t, "m4-pro"), Ctx: 8192})
		_, ks := layerKernels(long, "decode", 1)
		if !slices.Contains(ks, "flash_attention_decode_parallel_f16") || !slices.Contains(ks, "flash_attention_decode_reduce_f16") {
			t.Errorf("ctx 8192 on m4-pro: %v, want the parallel attention and its reduce", ks)
		}
	})
	t.Run("the logit projection takes the wide GEMV (N = 128256 > 32768)", func(t *testing.T) {
		for _, p := range []*plans.Plan{m4, m1} {
			c := commandOf(p, "decode", "logits")
			if k := p.Pipelines[c.Pipeline].Kernel; k != "gemv_wide_q4_0" {
				t.Errorf("%s: logits kernel %s", p.Header.Target.Chip, k)
			}
		}
	})
	t.Run("K-projections with K ≥ the chip's threshold take the large-K variant", func(t *testing.T) {
		for _, p := range []*plans.Plan{m4, m1} {
			th := p.Header.Target.Tuning.Q4LargeKThreshold
			for _, c := range p.Program("decode").Commands {
				k := p.Pipelines[c.Pipeline].Kernel
				if !strings.HasPrefix(k, "gemv_q4_0") {
					continue
				}
				K := uint32(4096)
				if strings.HasSuffix(c.Label, "ffn.down") {
					K = 14336
				}
				if (K >= th) != strings.Contains(k, "_l") {
					t.Errorf("%s %s: K=%d threshold %d kernel %s", p.Header.Target.Chip, c.Label, K, th, k)
				}
			}
		}
	})
	t.Run("h100-sxm splits SiLU from the down projection (tuning.split_silu), reads Q4_0 planar (tuning.repack), gates gate|up in its GEMV (glu_fold), rotates q and k in the attention (tuning.rope_in_attention) and folds its 4096-wide residual norms into the GEMVs (tuning.fold_norms_max_dim): 6 commands a layer", func(t *testing.T) {
		h := compile(t, path, Options{Chip: chip(t, "h100-sxm")})
		labels, ks := layerKernels(h, "decode", 1)
		want := []string{"gemv_q4_0_planar_norm", "flash_attention_decode_rope_f16",
			"flash_attention_decode_reduce_f16", "gemv_q4_0_planar_res", "gemv_q4_0_planar_glu_norm", "gemv_q4_0_planar_res"}
		if !slices.Equal(ks, want) {
			t.Errorf("kernels\n%v\nwant\n%v\n(labels %v)", ks, want, labels)
		}
		// rows of 4096 and more prefetch into L2 (tuning.gemv_preload_max_k)
		for _, l := range []string{"L1.attn.qkv", "L1.attn.output", "L1.ffn.gate_up", "L1.ffn.down", "logits"} {
			if v := constant(t, h, "decode", l, "preload"); v != 0 {
				t.Errorf("%s: preload %d, want 0", l, v)
			}
		}
		// 8 rows a threadgroup from 2^24 weights (kernels.planarShape): the
		// 4096 × 4096 output projection in 512 threadgroups, one wave
		for l, want := range map[string]uint32{"L1.attn.qkv": 768, "L1.attn.output": 512, "L1.ffn.gate_up": 3584, "L1.ffn.down": 512} {
			if g := commandOf(h, "decode", l).Grid[0]; g != want {
				t.Errorf("%s: %d threadgroups, want %d", l, g, want)
			}
		}
		// the GEMVs read planar buffers, the fused ones stacked from their
		// tensors; the prefill GEMMs read the file's layout
		reads := map[string]string{}
		for _, pr := range h.Programs {
			for _, c := range pr.Commands {
				k := h.Pipelines[c.Pipeline].Kernel
				if strings.HasPrefix(c.Label, "L1.") && (strings.HasPrefix(k, "gemv") || strings.HasPrefix(k, "simd_gemm")) {
					reads[k+" "+c.Label] = h.Buffers[c.Bindings[0].Buffer].Name // w: slot 0
				}
			}
		}
		for kl, want := range map[string]string{"gemv_q4_0_planar_norm L1.attn.qkv": "L1.attn.qkv.planar", "gemv_q4_0_planar_res L1.ffn.down": "blk.1.ffn_down.weight.planar",
			"simd_gemm_q4_0 L1.attn.qkv": "L1.attn.qkv.weight", "simd_gemm_q4_0 L1.ffn.down": "blk.1.ffn_down.weight"} {
			if reads[kl] != want {
				t.Errorf("%s reads %q, want %q", kl, reads[kl], want)
			}
		}
		for _, b := range h.Buffers {
			if b.Name == "L1.attn.qkv.planar" && (b.Recipe != "repack:q4_0_planar" || len(b.Sources) != 3) {
				t.Errorf("%s: recipe %q from %d sources, want repack:q4_0_planar from Q, K and V", b.Name, b.Recipe, len(b.Sources))
			}
			if b.Name == "L1.ffn.gate_up.planar" && (b.Recipe != "repack:q4_0_planar_pairs" || len(b.Sources) != 2) {
				t.Errorf("%s: recipe %q from %d sources, want repack:q4_0_planar_pairs from gate and up", b.Name, b.Recipe, len(b.Sources))
			}
		}
	})
	t.Run("m1 keeps Q, K, V and gate, up as separate GEMVs", func(t *testing.T) {
		labels, ks := layerKernels(m1, "decode", 1)
		want := []string{"residual_rmsnorm_f16", "gemv_q4_0_l", "gemv_q4_0_l", "gemv_q4_0_l", "rope_qkv_write_f16",
			"flash_attention_decode_fast_f16", "gemv_q4_0_l",
			"residual_rmsnorm_f16", "gemv_q4_0_l", "gemv_q4_0_l", "gemv_q4_0_l_silu"}
		if !slices.Equal(ks, want) {
			t.Errorf("kernels\n%v\nwant\n%v\n(labels %v)", ks, want, labels)
		}
		for _, b := range m1.Buffers {
			if b.Kind == plans.BufDerived {
				t.Errorf("m1 plan has derived buffer %s", b.Name)
			}
		}
	})
	t.Run("plans.Diff reports exactly the fusion and tuning differences", func(t *testing.T) {
		var b bytes.Buffer
		if err := plans.WriteDiff(&b, plans.DiffWith(m1, m4, plans.RenderOptions{Params: kernels.ParamFields})); err != nil {
			t.Fatal(err)
		}
		golden(t, "llama8b-2l.diff.m1.m4-pro.txt", b.Bytes())
	})
	t.Run("decode sequence", func(t *testing.T) {
		var b bytes.Buffer
		for _, p := range []*plans.Plan{m4, m1} {
			fmt.Fprintf(&b, "%s decode:\n", p.Header.Target.Chip)
			for i, c := range p.Program("decode").Commands {
				fmt.Fprintf(&b, "  %2d %-18s %s\n", i, c.Label, p.Pipelines[c.Pipeline].Kernel)
			}
		}
		golden(t, "llama8b-2l.decode.txt", b.Bytes())
	})
}

func TestCompileErrors(t *testing.T) {
	dir := t.TempDir()
	m4 := Options{Chip: chip(t, "m4-pro")}
	t.Run("a weight type without a kernel names the tensor and wraps ErrNoKernel", func(t *testing.T) {
		path := unsupportedModel(t, dir)
		_, err := Compile(path, m4)
		if !errors.Is(err, kernels.ErrNoKernel) {
			t.Fatalf("err = %v, want ErrNoKernel", err)
		}
		if !strings.Contains(err.Error(), "blk.0.attn_q.weight: IQ2_XS has no GEMV kernel for m4-pro-20") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("an unknown architecture fails with ErrUnknownArch", func(t *testing.T) {
		b := gguf.NewBuilder()
		b.SetString("general.architecture", "mamba9")
		path := filepath.Join(dir, "mamba.gguf")
		if err := b.WriteFile(path, false); err != nil {
			t.Fatal(err)
		}
		_, err := Compile(path, m4)
		if !errors.Is(err, specs.ErrUnknownArch) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a missing tensor fails naming it", func(t *testing.T) {
		path := llamaWithout(t, dir, "blk.1.ffn_up.weight")
		_, err := Compile(path, m4)
		if !errors.Is(err, specs.ErrMissingTensor) || !strings.Contains(err.Error(), "blk.1.ffn_up.weight") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a context beyond the format's limit fails with ErrOptions", func(t *testing.T) {
		path := synthModel(t, t.TempDir(), synth.Options{Arch: "llama", Dim: 64, Layers: 1, Heads: 2, DType: dtype.F16, Seed: 1})
		_, err := Compile(path, Options{Chip: m4.Chip, Ctx: plans.MaxCtx + 1})
		if !errors.Is(err, ErrOptions) {
			t.Fatalf("err = %v", err)
		}
	})
}

// craft rewrites a synthetic llama's header with gguf.Builder: the same
// metadata, each tensor as zeros of the type retype gives it, those drop
// names left out.
func craft(t *testing.T, dir, name string, retype func(string, dtype.Type) dtype.Type, drop string) string {
	t.Helper()
	src := synthModel(t, t.TempDir(), synth.Options{Arch: "llama", Dim: 256, Layers: 2, Heads: 4, DType: dtype.Q8_0, Seed: 1})
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	b := gguf.NewBuilder()
	for _, kv := range f.KVs {
		if kv.Key != "general.alignment" {
			b.Set(kv.Key, kv.Value)
		}
	}
	for _, ti := range f.Tensors {
		if ti.Name == drop {
			continue
		}
		b.AddZeroTensor(ti.Name, retype(ti.Name, ti.Type), ti.Dims)
	}
	path := filepath.Join(dir, name)
	if err := b.WriteFile(path, true); err != nil {
		t.Fatal(err)
	}
	return path
}

func unsupportedModel(t *testing.T, dir string) string {
	return craft(t, dir, "iq2.gguf", func(name string, dt dtype.Type) dtype.Type {
		if strings.HasPrefix(name, "blk.") && dt == dtype.Q8_0 {
			return dtype.IQ2_XS
		}
		return dt
	}, "")
}

func llamaWithout(t *testing.T, dir, tensor string) string {
	return craft(t, dir, "missing.gguf", func(_ string, dt dtype.Type) dtype.Type { return dt }, tensor)
}

// golden compares got with testdata/plans/name, rewriting it when
// UPDATE_GOLDEN is set.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "testdata", "plans", name)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `make plans` to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s drifted from what the compiler emits; review and run `make plans` (UPDATE_GOLDEN=1 go test ./compiler/)\n%s", path, firstDiff(string(want), string(got)))
	}
}

func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(la), len(lb))
}

// On a target that repacks Q4_0, Q8_0, Q4_K and Q6_K (cpu-avx512), every
// matmul of those types reads a repacked copy through the x16 kernels,
// decode and batch alike, except a Q6_K LM head (kernels.RepackOneRow);
// the embedding lookup keeps the tensor, a tied LM head reads the copy.
func TestRepackedWhereTheTargetAsks(t *testing.T) {
	for _, dt := range []dtype.Type{dtype.Q4_0, dtype.Q8_0, dtype.Q4_K, dtype.Q6_K} {
		name := strings.ToLower(dt.String())
		path := synthModel(t, t.TempDir(), synth.Options{Arch: "qwen3", Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 512,
			DType: dt, Tied: true, Seed: 7})
		for _, tc := range []struct {
			chip string
			x16  bool
		}{{"cpu-avx512:2", true}, {"cpu-avx2:2", false}, {"m1", false}} {
			p := compile(t, path, Options{Chip: chip(t, tc.chip)})
			repacked := map[uint32]bool{}
			for i, b := range p.Buffers {
				if b.Recipe == "repack:"+name+"x16" {
					repacked[uint32(i)] = true
					if src := p.Buffers[b.Sources[0]]; b.Name != src.Name+".x16" || b.Size != src.Size || b.DType != name {
						t.Errorf("%s %s: %s repacks %s", name, tc.chip, b.Name, src.Name)
					}
				}
			}
			if (len(repacked) > 0) != tc.x16 {
				t.Fatalf("%s %s: %d repacked buffers", name, tc.chip, len(repacked))
			}
			for _, pr := range p.Programs {
				for _, c := range pr.Commands {
					k := p.Pipelines[c.Pipeline].Kernel
					isMat := strings.HasPrefix(k, "gemv_") || strings.HasPrefix(k, "simd_gemm")
					if !isMat || !strings.Contains(k, name) {
						if strings.Contains(k, "x16") {
							t.Errorf("%s %s %s: %s", name, pr.Name, c.Label, k)
						}
						if strings.HasPrefix(k, "embedding") && repacked[c.Bindings[0].Buffer] {
							t.Errorf("%s %s: the embedding reads the repacked copy", name, pr.Name)
						}
						continue
					}
					want := tc.x16 && (c.Label != "logits" || dt != dtype.Q6_K)
					if strings.Contains(k, "_x16") != want || want != repacked[c.Bindings[0].Buffer] {
						t.Errorf("%s %s %s[%s]: kernel %s over %s", name, tc.chip, pr.Name, c.Label, k, p.Buffers[c.Bindings[0].Buffer].Name)
					}
				}
			}
			minRT := uint32(2)
			if dt != dtype.Q4_0 {
				minRT = 6
			}
			if tc.x16 && p.RequiredRuntime() != minRT {
				t.Errorf("%s: a plan with repacked weights needs runtime %d, want %d", name, p.RequiredRuntime(), minRT)
			}
		}
	}
}

// NVIDIA plans fold the residual norms of models up to 2048 wide into the
// planar GEMVs around them (tuning.fold_norms_max_dim: measured faster on
// the 0.6B and 1B shapes, slower on the 8B's 4096); the 4096-wide 8B keeps
// them as commands (TestLlama8BDecodeForm).
func TestNVIDIAFoldsTheNormsOfNarrowModels(t *testing.T) {
	v, err := synth.VocabFromGGUF(sharedFile(t, "vocab", "ggml-vocab-llama-bpe.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	p := synthModel(t, t.TempDir(), synth.Options{Arch: "llama", Dim: 2048, Layers: 2, Heads: 32, KVHeads: 8, FFN: 8192,
		CtxTrain: 8192, DType: dtype.Q4_0, Vocab: v, Sparse: true, Seed: 1})
	h := compile(t, p, Options{Chip: chip(t, "h100-sxm")})
	labels, ks := layerKernels(h, "decode", 1)
	want := []string{"gemv_q4_0_planar_norm", "flash_attention_decode_rope_f16",
		"flash_attention_decode_reduce_f16", "gemv_q4_0_planar_res", "gemv_q4_0_planar_glu_norm", "gemv_q4_0_planar_res"}
	if !slices.Equal(ks, want) {
		t.Errorf("kernels\n%v\nwant\n%v\n(labels %v)", ks, want, labels)
	}
	// rows of at most 3072 elements load their blocks before waiting
	// (tuning.gemv_preload_max_k), the 8192-long down projection's do not
	for l, want := range map[string]int{"L1.attn.qkv": 1, "L1.attn.output": 1, "L1.ffn.gate_up": 1, "L1.ffn.down": 0, "logits": 1} {
		if v := constant(t, h, "decode", l, "preload"); v != want {
			t.Errorf("%s: preload %d, want %d", l, v, want)
		}
	}
	// the 2048 × 8192 down projection (2^24 weights, fewer than 4096 rows)
	// keeps 4 rows a group: 512 threadgroups (kernels.planarShape)
	if g := commandOf(h, "decode", "L1.ffn.down").Grid[0]; g != 512 {
		t.Errorf("L1.ffn.down: %d threadgroups, want 512", g)
	}
}
