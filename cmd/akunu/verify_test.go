package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/synth"
	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/cuda"
	"github.com/akunu-dev/akunu/specs"
	"github.com/akunu-dev/akunu/specs/chips"
)

func storiesPlan(t *testing.T, chip string) (plan, model string) {
	t.Helper()
	model = proof.Shared(t, "models", "stories260K.gguf")
	prof, err := chips.Resolve(chip, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := compiler.Compile(model, compiler.Options{Chip: prof})
	if err != nil {
		t.Fatal(err)
	}
	plan = filepath.Join(t.TempDir(), "stories260K."+strings.ReplaceAll(chip, ":", "-")+".plan")
	if err := plans.WriteFile(plan, p); err != nil {
		t.Fatal(err)
	}
	return plan, model
}

// TestVerifyCPUSanity runs verify's CPU-against-CPU mode: what CI can run
// without a Mac, and what proves the command-by-command harness itself
// (prefill, chain decode across a chunk boundary, outputs and sync).
func TestVerifyCPUSanity(t *testing.T) {
	for _, chip := range []string{"m1", "cpu-avx2:2"} {
		t.Run("stories260K compiled for "+chip+" agrees with itself", func(t *testing.T) {
			plan, model := storiesPlan(t, chip)
			var out, errb bytes.Buffer
			code := run([]string{"verify", plan, "--backend", "cpu", "-n", "6", "--threads", "2", "--model", model}, &out, &errb)
			if code != 0 || !strings.Contains(out.String(), "cpu and cpu agree on all") {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
			}
			t.Log(strings.TrimSpace(out.String()))
		})
	}
}

func TestVerifyMetalElsewhere(t *testing.T) {
	if _, err := os.Stat("/System/Library/Frameworks/Metal.framework"); err == nil {
		t.Skip("a Mac: the Metal backend exists")
	}
	plan, model := storiesPlan(t, "m1")
	var out, errb bytes.Buffer
	code := run([]string{"verify", plan, "--backend", "metal", "--model", model}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "Metal is only available on macOS") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// Off a Mac verify holds CUDA to the CPU by default; without a driver it
// says so and fails, rather than comparing the CPU with itself.
func TestVerifyCUDAWithoutADriver(t *testing.T) {
	if _, err := os.Stat("/System/Library/Frameworks/Metal.framework"); err == nil {
		t.Skip("a Mac: verify's default is Metal")
	}
	if cuda.Available() {
		t.Skip("a CUDA driver loads here")
	}
	plan, model := storiesPlan(t, "h100-sxm")
	var out, errb bytes.Buffer
	code := run([]string{"verify", plan, "--model", model}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "no CUDA driver or GPU") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

func f16s(vs ...float32) []byte {
	b := make([]byte, 2*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint16(b[2*i:], dtype.Float16bits(v))
	}
	return b
}

func TestCompareValues(t *testing.T) {
	want := f16s(1, -2, 4, 0.001)
	for _, tc := range []struct {
		name string
		got  []byte
		ok   bool
	}{
		{"equal values agree", f16s(1, -2, 4, 0.001), true},
		{"a drift under 2e-3 of the largest magnitude agrees", f16s(1.005, -2, 4, 0.007), true},
		{"a drift over it differs", f16s(1.01, -2, 4, 0.001), false},
		{"a NaN differs", f16s(1, -2, float32(nan()), 0.001), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := compareValues(tc.got, want, "f16", relF16)
			if (d == "") != tc.ok {
				t.Fatalf("compareValues = %q", d)
			}
		})
	}
}

func nan() float64 { var z float64; return z / z }

// memBuffers are a model's buffers as plain bytes.
type memBuffers [][]byte

func (m memBuffers) ReadBuffer(i int) ([]byte, error) { return m[i], nil }

func TestCompareIDs(t *testing.T) {
	// Logits in buffer 0 (f16), ids in buffer 1.
	p := &plans.Plan{Buffers: []plans.Buffer{{Name: "act.x", DType: "f16"}, {Name: "io.tokens", DType: "u32"}}}
	cmd := &plans.Command{Bindings: []plans.Binding{{Slot: 0, Buffer: 0}, {Slot: 1, Buffer: 1}}}
	ids := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	t.Run("a different id over a near tie agrees", func(t *testing.T) {
		ref := f16s(0, 3.000, 2.999, -1)
		if d := compareIDs(ids(1), ids(2), toleranceFor(argmaxKernel(t), plans.ProgDecode), p, cmd, ref); d != "" {
			t.Fatal(d)
		}
	})
	t.Run("a different id over distinct logits differs", func(t *testing.T) {
		ref := f16s(0, 3, 2, -1)
		if d := compareIDs(ids(1), ids(2), toleranceFor(argmaxKernel(t), plans.ProgDecode), p, cmd, ref); d == "" {
			t.Fatal("agreed")
		}
	})
	t.Run("after sampling, even a near tie must pick the same id", func(t *testing.T) {
		ref := f16s(0, 3.000, 2.999, -1)
		if d := compareIDs(ids(1), ids(2), toleranceFor(argmaxKernel(t), plans.ProgSampled), p, cmd, ref); d == "" {
			t.Fatal("agreed")
		}
	})
}

// TestVerifyNamesTheCommand corrupts one output of the tested side and
// expects verify's report to name the program, index and label.
func TestVerifyNamesTheCommand(t *testing.T) {
	plan, _ := storiesPlan(t, "m1")
	p, err := plans.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	prog := p.Program(plans.ProgDecode)
	ci := -1
	for i, c := range prog.Commands {
		if strings.HasPrefix(c.Label, "L2.") && p.Pipelines[c.Pipeline].Kernel == "rmsnorm_f16" || strings.Contains(c.Label, "L2.attn.norm") {
			ci = i
			break
		}
	}
	if ci < 0 {
		t.Fatal("no L2.attn.norm in decode")
	}
	a := make(memBuffers, len(p.Buffers))
	ref := make(memBuffers, len(p.Buffers))
	for i, b := range p.Buffers {
		a[i], ref[i] = make([]byte, b.Size), make([]byte, b.Size)
	}
	outs, _ := outputs(p, &prog.Commands[ci])
	if len(outs) == 0 {
		t.Fatal("no outputs")
	}
	o := outs[0]
	copy(a[o.binding.Buffer][o.start:], f16s(1, 2, 3))
	copy(ref[o.binding.Buffer][o.start:], f16s(1, 2, 3.5))
	m, err := compareCommand(p, prog, ci, plans.Step{Batch: 1}, a, ref)
	if err != nil || m == nil {
		t.Fatal("no mismatch")
	}
	rep := &verifyReport{Mismatch: m}
	var out bytes.Buffer
	rep.print(&out, "metal")
	if !strings.Contains(out.String(), "differ at decode[") || !strings.Contains(out.String(), prog.Commands[ci].Label) {
		t.Fatal(out.String())
	}
	t.Log(out.String())
}

// An embedding model's plan has no decode program: verify runs the prompt
// as one input of an embedding program, command by command.
func TestVerifyAnEmbeddingPlan(t *testing.T) {
	plan := bertPlan(t)
	var out, errb bytes.Buffer
	code := run([]string{"verify", plan, "--backend", "cpu", "--threads", "2"}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "cpu and cpu agree on all") || !strings.Contains(out.String(), "the embedding of") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
	t.Log(strings.TrimSpace(out.String()))
}

// A mixture-of-experts plan: the route's ids are compared exactly and its
// gate weights as floats, over the rows the step ran.
func TestVerifyAMoEPlan(t *testing.T) {
	plan := synthCPUPlan(t, synth.Options{Arch: "qwen3moe", Dim: 64, Layers: 1, Heads: 2, KVHeads: 2, HeadDim: 32, FFN: 128, CtxTrain: 256,
		DType: dtype.F16, Seed: 3, Set: map[string]specs.Value{"expert_count": specs.IntValue(8), "expert_used": specs.IntValue(2), "expert_ffn": specs.IntValue(64)}}, 256)
	var out, errb bytes.Buffer
	code := run([]string{"verify", plan, "--backend", "cpu", "-n", "4", "--threads", "2", "-p", "Hello there, experts of the world"}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "cpu and cpu agree on all") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
	t.Log(strings.TrimSpace(out.String()))
}

func argmaxKernel(t *testing.T) *kernels.Kernel {
	t.Helper()
	k, err := kernels.Find(kernels.Spec{Op: kernels.OpArgmax, Act: dtype.F16})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A matrix product over quantized weights is held to the 8-bit
// activations' tolerance, over float weights (and every other kernel) to
// f16's.
func TestToleranceByWeightType(t *testing.T) {
	for _, c := range []struct {
		spec kernels.Spec
		rel  float64
	}{
		{kernels.Spec{Op: kernels.OpGEMV, DType: dtype.Q4_K, Act: dtype.F16}, relQuantized},
		{kernels.Spec{Op: kernels.OpGEMM, DType: dtype.Q8_0, Act: dtype.F16}, relQuantized},
		{kernels.Spec{Op: kernels.OpGEMVID, DType: dtype.Q4_0, Act: dtype.F16}, relQuantized},
		{kernels.Spec{Op: kernels.OpGEMV, DType: dtype.F16, Act: dtype.F16}, relF16},
		{kernels.Spec{Op: kernels.OpEmbedding, DType: dtype.Q8_0, Act: dtype.F16}, relF16},
		{kernels.Spec{Op: kernels.OpRMSNorm, Act: dtype.F16}, relF16},
	} {
		k, err := kernels.Find(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := toleranceFor(k, plans.ProgDecode); got.rel != c.rel || got.kind != tolValues {
			t.Errorf("%s: tolerance %+v, want values within %g", k.Name, got, c.rel)
		}
	}
}
