package runtime

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/cpu"
)

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// storiesCopy is a copy of stories260K in a temporary folder, its plan
// compiled from the copy, and the copy's tensor table.
func storiesCopy(t *testing.T) (model, plan string, f *gguf.File) {
	t.Helper()
	model = filepath.Join(t.TempDir(), "stories260K.gguf")
	copyFile(t, stories(t), model)
	plan = compile(t, model, "cpu-avx2:2")
	f, err := gguf.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	return model, plan, f
}

// damage rewrites the bytes of a copy of model in place.
func damage(t *testing.T, model string, fn func(data []byte)) string {
	t.Helper()
	data, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	fn(data)
	out := filepath.Join(t.TempDir(), filepath.Base(model))
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

func tensorBytes(t *testing.T, f *gguf.File, data []byte, name string) []byte {
	t.Helper()
	ti, ok := f.Tensor(name)
	if !ok {
		t.Fatalf("no tensor %s", name)
	}
	return data[ti.FileOffset : ti.FileOffset+ti.Size]
}

// TestDamagedWeightsAreRefused damages copies of stories260K behind an
// intact header, each in one way a plan must not replay silently: the
// sampled check of every load refuses the whole-tensor rewrites, naming the
// tensors; a single byte between the sampled blocks passes it (what the
// sampled check gives up), and the full check, verify-model and
// --verify-weights, refuses it.
func TestDamagedWeightsAreRefused(t *testing.T) {
	model, plan, f := storiesCopy(t)
	if m, err := Load(plan, Options{Model: model, Threads: 2}); err != nil {
		t.Fatalf("the intact copy: %v", err)
	} else {
		if !strings.HasPrefix(m.WeightCheck, "weights checked: the sampled sums of") {
			t.Errorf("WeightCheck %q", m.WeightCheck)
		}
		m.Close()
	}
	if r, err := VerifyModel(plan, model); err != nil || r.Tensors != len(f.Tensors) || r.Bytes == 0 {
		t.Fatalf("verify-model of the intact copy: %+v, %v", r, err)
	}

	middle := func(data []byte) (int64, []byte) {
		b := tensorBytes(t, f, data, "output.weight")
		// A byte in no sampled block.
		spans := gguf.SampleSpans(int64(len(b)))
		off := (spans[0][1] + spans[1][0]) / 2
		if len(spans) < 2 || off <= spans[0][1] || off >= spans[1][0] {
			t.Fatalf("output.weight (%d bytes) has no byte between sampled blocks: %v", len(b), spans)
		}
		return off, b
	}
	tests := []struct {
		name    string
		fn      func(data []byte)
		sampled bool   // the sampled check of a load refuses it
		names   string // what the error names
	}{
		{"every sign of output.weight flipped", func(data []byte) {
			b := tensorBytes(t, f, data, "output.weight")
			for i := 0; i+4 <= len(b); i += 4 {
				binary.LittleEndian.PutUint32(b[i:], binary.LittleEndian.Uint32(b[i:])^1<<31)
			}
		}, true, `1 of 48 tensors differ (sampled blocks): "output.weight"`},
		{"the data section zeroed", func(data []byte) {
			clear(data[f.DataOffset:])
		}, true, `48 of 48 tensors differ (sampled blocks): "token_embd.weight", "output_norm.weight", "output.weight" and 45 more`},
		{"two tensors' data swapped", func(data []byte) {
			q := tensorBytes(t, f, data, "blk.0.attn_q.weight")
			o := tensorBytes(t, f, data, "blk.0.attn_output.weight")
			tmp := append([]byte(nil), q...)
			copy(q, o)
			copy(o, tmp)
		}, true, `2 of 48 tensors differ (sampled blocks): "blk.0.attn_q.weight", "blk.0.attn_output.weight"`},
		{"one byte in the middle of output.weight", func(data []byte) {
			off, b := middle(data)
			b[off] ^= 0x40
		}, false, `1 of 48 tensors differ (every byte): "output.weight"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := damage(t, model, tt.fn)
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, plans.ErrPlanMismatch) {
					t.Fatalf("%s: got %v, want a plan mismatch", what, err)
				}
				if msg := err.Error(); !strings.Contains(msg, tt.names) || strings.Contains(msg, "\n") ||
					!strings.Contains(msg, "recompile with: akunuc compile stories260K.gguf") {
					t.Errorf("%s: message %q does not name %s in one line with the recompile hint", what, msg, tt.names)
				}
			}
			m, err := Load(plan, Options{Model: bad, Threads: 2})
			if tt.sampled {
				check("load", err)
			} else {
				if err != nil {
					t.Fatalf("the sampled check was expected to miss a byte between its blocks: %v", err)
				}
				m.Close()
				_, err := Load(plan, Options{Model: bad, Threads: 2, VerifyWeights: true})
				check("load --verify-weights", err)
			}
			_, err = VerifyModel(plan, bad)
			tt.names = strings.Replace(tt.names, "sampled blocks", "every byte", 1)
			check("verify-model", err)
		})
	}
}

// TestAPlanWithoutSumsLoadsUnchecked: a plan compiled before weight sums
// (format 1 of the compat corpus) still loads, its weights unchecked and
// said so; verify-model refuses it with a line saying why.
func TestAPlanWithoutSumsLoadsUnchecked(t *testing.T) {
	model := stories(t)
	const old = "testdata/stories260K.format1.plan.bin"
	m, err := Load(old, Options{Model: model, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !strings.HasPrefix(m.WeightCheck, "weights not checked: ") || !strings.Contains(m.WeightCheck, "records no weight sums") {
		t.Errorf("WeightCheck %q", m.WeightCheck)
	}
	if _, err := VerifyModel(old, model); !errors.Is(err, plans.ErrNoWeightSums) {
		t.Errorf("verify-model of a format-1 plan: %v", err)
	}
	if _, err := Load(old, Options{Model: model, Threads: 2, VerifyWeights: true}); !errors.Is(err, plans.ErrNoWeightSums) {
		t.Errorf("--verify-weights on a format-1 plan: %v", err)
	}
}

// TestAModelTruncatedWhileMappedIsAnError truncates the model under a
// loaded plan: the next replay and the full check end with an error, not a
// SIGBUS.
func TestAModelTruncatedWhileMappedIsAnError(t *testing.T) {
	model, plan, f := storiesCopy(t)
	m, err := Load(plan, Options{Model: model, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.CheckFile(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(model, f.DataOffset+100); err != nil {
		t.Fatal(err)
	}
	if err := m.CheckFile(); !errors.Is(err, gguf.ErrTruncated) {
		t.Errorf("CheckFile: %v", err)
	}
	if _, err := m.VerifyWeights(); !errors.Is(err, gguf.ErrTruncated) {
		t.Errorf("VerifyWeights: %v", err)
	}
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Generate(bg, []int32{1, 2, 3}, GenerateOptions{MaxTokens: 4}); !errors.Is(err, gguf.ErrTruncated) {
		t.Errorf("Generate: %v", err)
	}
}

// TestAPlanInAnotherFolderFindsItsModel compiles a model in one folder into
// a plan in a second and loads it from a third working directory: the
// recorded path finds it. Identity still holds: a same-named file of
// another size next to the plan is passed over, and with the model gone
// the error lists every place looked.
func TestAPlanInAnotherFolderFindsItsModel(t *testing.T) {
	model, built, _ := storiesCopy(t)
	plan := filepath.Join(t.TempDir(), "m.plan")
	copyFile(t, built, plan)
	t.Chdir(t.TempDir())

	m, err := Load(plan, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if m.ModelPath != model {
		t.Errorf("mapped %s, want %s", m.ModelPath, model)
	}
	m.Close()

	decoy := filepath.Join(filepath.Dir(plan), "stories260K.gguf")
	if err := os.WriteFile(decoy, []byte("GGUF not this one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := FindModel(plan, m.Plan); err != nil || got != model {
		t.Errorf("with a decoy next to the plan: %s, %v; want %s", got, err, model)
	}
	if err := os.Remove(model); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(plan, Options{Threads: 2}); !errors.Is(err, plans.ErrPlanMismatch) {
		t.Errorf("only the decoy left: %v", err)
	}
	if err := os.Remove(decoy); err != nil {
		t.Fatal(err)
	}
	_, err = Load(plan, Options{Threads: 2})
	if !errors.Is(err, ErrModelFile) {
		t.Fatalf("no model anywhere: %v", err)
	}
	for _, want := range []string{"next to the plan (" + decoy + ")", "at the path recorded at compile time (" + model + ")", "in the working directory ("} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not list %q: %v", want, err)
		}
	}
}

// TestAKernelFaultIsAnError truncates the model under a loaded plan and
// replays a decode step past the checks that come before a replay: the CPU
// kernels touch the lost pages, and the fault is an error from Wait, not a
// SIGBUS (runtime/cpu/fault.go).
func TestAKernelFaultIsAnError(t *testing.T) {
	if goruntime.GOOS != "linux" && goruntime.GOOS != "darwin" {
		t.Skip("the model is read into memory here, not mapped: nothing can fault")
	}
	model, plan, f := storiesCopy(t)
	m, err := Load(plan, Options{Model: model, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := sess(t, m)
	gen(t, s, []int32{1, 2, 3}, GenerateOptions{MaxTokens: 2})
	if err := os.Truncate(model, f.DataOffset); err != nil {
		t.Fatal(err)
	}
	if err := s.chain(m.decode, 2); !errors.Is(err, cpu.ErrFault) {
		t.Fatalf("a decode over a truncated model: %v", err)
	}
	if err := s.chain(m.decode, 1); !errors.Is(err, cpu.ErrFault) {
		t.Fatalf("the next decode: %v", err)
	}
}
