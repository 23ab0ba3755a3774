package synth_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/compiler/synth"
	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/specs"
)

func registry(t *testing.T) *specs.Registry {
	t.Helper()
	reg, err := specs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func write(t *testing.T, o synth.Options) (string, *synth.Plan) {
	t.Helper()
	p, err := synth.Build(registry(t), o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := p.Write(path, o.Seed); err != nil {
		t.Fatal(err)
	}
	return path, p
}

// small is a shape every architecture and every block size accepts.
func small(arch string, dt dtype.Type) synth.Options {
	return synth.Options{Arch: arch, Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, FFN: 512, DType: dt, Seed: 7}
}

func TestTheSameSeedGivesTheSameFile(t *testing.T) {
	a, _ := write(t, small("llama", dtype.Q4_0))
	b, _ := write(t, small("llama", dtype.Q4_0))
	o := small("llama", dtype.Q4_0)
	o.Seed = 8
	c, _ := write(t, o)
	ba, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	bc, _ := os.ReadFile(c)
	if !bytes.Equal(ba, bb) {
		t.Error("two files of the same options and seed differ")
	}
	if bytes.Equal(ba, bc) {
		t.Error("files of different seeds are equal")
	}
}

func TestTheFileResolvesToTheShapeAskedFor(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "phi3"} {
		t.Run(arch, func(t *testing.T) {
			o := small(arch, dtype.F16)
			o.HeadDim = 128 // not dim/heads: the key must be written
			path, _ := write(t, o)
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			a, err := registry(t).ForArchitecture(f.Architecture())
			if err != nil {
				t.Fatal(err)
			}
			hp, err := a.Resolve(specs.GGUFMetadata(f))
			if err != nil {
				t.Fatal(err)
			}
			got := [...]int{hp.Dim, hp.Layers, hp.Heads, hp.KVHeads, hp.HeadDim, hp.FFN}
			want := [...]int{256, 2, 4, 2, 128, 512}
			if got != want {
				t.Errorf("dim, layers, heads, kv heads, head dim, ffn = %v, want %v", got, want)
			}
		})
	}
}

func TestSparseFilesHoldZerosAndLittleDisk(t *testing.T) {
	o := synth.Options{Arch: "llama", Dim: 2048, Layers: 4, Heads: 16, KVHeads: 8, FFN: 8192, DType: dtype.Q4_0, Sparse: true}
	path, p := write(t, o)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, tt := range p.Tensors {
		total += tt.Bytes
	}
	if st.Size() < total {
		t.Fatalf("file is %d bytes, its tensors %d", st.Size(), total)
	}
	m, err := gguf.Map(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ti, _ := m.File.Tensor("blk.3.ffn_down.weight")
	for i, b := range m.Data(ti) {
		if b != 0 {
			t.Fatalf("byte %d of a sparse tensor is %d", i, b)
		}
	}
}

func TestBadOptionsSayWhat(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    synth.Options
	}{
		{"unknown architecture", synth.Options{Arch: "llamma", Dim: 64, Layers: 1, Heads: 2}},
		{"no shape", synth.Options{Arch: "llama"}},
		{"heads not a multiple of kv heads", synth.Options{Arch: "llama", Dim: 64, Layers: 1, Heads: 6, KVHeads: 4}},
		{"row not a multiple of the block", synth.Options{Arch: "llama", Dim: 64, Layers: 1, Heads: 2, DType: dtype.Q4_K}},
		{"dtype without a quantizer", synth.Options{Arch: "llama", Dim: 256, Layers: 1, Heads: 2, DType: dtype.IQ2_XS}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := synth.Build(registry(t), tc.o)
			if !errors.Is(err, synth.ErrOptions) {
				t.Fatalf("err = %v, want ErrOptions", err)
			}
			t.Log(err)
		})
	}
}

// TestLlamaCppLoadsAndRunsEveryArchitecture holds the writer and the specs'
// metadata to the reference: llama.cpp loads the file of every architecture
// and dtype, and a forward pass gives finite logits.
func TestLlamaCppLoadsAndRunsEveryArchitecture(t *testing.T) {
	lib := llamacpp.Require(t)
	cases := []struct {
		arch string
		dt   dtype.Type
		tied bool
	}{
		{"llama", dtype.F32, false}, {"llama", dtype.Q4_0, true}, {"llama", dtype.Q4_K, false},
		{"qwen2", dtype.Q8_0, false}, {"qwen3", dtype.Q6_K, true}, {"qwen3", dtype.BF16, false},
		{"gemma", dtype.F16, true}, {"gemma2", dtype.Q5_0, true}, {"gemma3", dtype.Q5_K, true},
		{"phi3", dtype.Q4_1, false}, {"phi3", dtype.Q5_1, false},
	}
	for _, tc := range cases {
		t.Run(tc.arch+"/"+tc.dt.String(), func(t *testing.T) {
			o := small(tc.arch, tc.dt)
			o.Tied = tc.tied
			path, _ := write(t, o)
			m, err := lib.LoadModel(path)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			ctx, err := m.NewContext(64, 64, 2)
			if err != nil {
				t.Fatal(err)
			}
			defer ctx.Close()
			toks, _, err := ctx.GreedyGenerate([]int32{0, 40, 41, 42}, 4)
			if err != nil {
				t.Fatal(err)
			}
			if len(toks) != 4 {
				t.Fatalf("generated %d tokens, want 4", len(toks))
			}
			ctx.ClearKV()
			if err := ctx.Decode([]int32{0, 50, 60}, 0); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				for j, x := range ctx.Logits(i) {
					if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
						t.Fatalf("logit %d of token %d is %v", j, i, x)
					}
				}
			}
		})
	}
}

// TestQ4KMRecipe: the q4_k_m mix gives Q6_K where llama.cpp's recipe
// does (the tied embedding, attn_v and ffn_down of layers 0, 1, 4, 7, 10,
// 13, 14, 15 of 16) and Q4_K elsewhere.
func TestQ4KMRecipe(t *testing.T) {
	p, err := synth.Build(registry(t), synth.Options{Arch: "qwen3", Dim: 256, Layers: 16, Heads: 4, KVHeads: 2, HeadDim: 64,
		FFN: 512, Tied: true, DType: dtype.Q4_K, Recipe: "q4_k_m", Sparse: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"token_embd.weight": true}
	for _, l := range []int{0, 1, 4, 7, 10, 13, 14, 15} {
		want[fmt.Sprintf("blk.%d.attn_v.weight", l)] = true
		want[fmt.Sprintf("blk.%d.ffn_down.weight", l)] = true
	}
	n := 0
	for _, ts := range p.Tensors {
		if ts.Type == dtype.F32 {
			continue
		}
		wantT := dtype.Q4_K
		if want[ts.Name] {
			wantT = dtype.Q6_K
			n++
		}
		if ts.Type != wantT {
			t.Errorf("%s: %v, want %v", ts.Name, ts.Type, wantT)
		}
	}
	if n != len(want) {
		t.Errorf("%d Q6_K tensors, want %d", n, len(want))
	}
	if _, err := synth.Build(registry(t), synth.Options{Arch: "qwen3", Dim: 256, Layers: 2, Heads: 4, DType: dtype.Q8_0, Recipe: "q4_k_m"}); err == nil {
		t.Error("q4_k_m over q8_0 built")
	}
}

// TestQ3KMRecipe: the q3_k_m mix follows llama.cpp's Q3_K_M: Q6_K for
// the tied embedding, attn_v Q5_K in layers 0 and 1 and Q4_K after,
// ffn_down Q5_K in the first sixteenth (layer 0 of 16) and Q4_K after,
// attn_output Q4_K, Q3_K elsewhere.
func TestQ3KMRecipe(t *testing.T) {
	p, err := synth.Build(registry(t), synth.Options{Arch: "qwen3", Dim: 256, Layers: 16, Heads: 4, KVHeads: 2, HeadDim: 64,
		FFN: 512, Tied: true, DType: dtype.Q3_K, Recipe: "q3_k_m", Sparse: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]dtype.Type{"token_embd.weight": dtype.Q6_K}
	for l := range 16 {
		want[fmt.Sprintf("blk.%d.attn_v.weight", l)] = dtype.Q4_K
		want[fmt.Sprintf("blk.%d.ffn_down.weight", l)] = dtype.Q4_K
		want[fmt.Sprintf("blk.%d.attn_output.weight", l)] = dtype.Q4_K
	}
	want["blk.0.attn_v.weight"], want["blk.1.attn_v.weight"], want["blk.0.ffn_down.weight"] = dtype.Q5_K, dtype.Q5_K, dtype.Q5_K
	counts := map[dtype.Type]int{}
	for _, ts := range p.Tensors {
		if ts.Type == dtype.F32 {
			continue
		}
		wantT, ok := want[ts.Name]
		if !ok {
			wantT = dtype.Q3_K
		}
		if ts.Type != wantT {
			t.Errorf("%s: %v, want %v", ts.Name, ts.Type, wantT)
		}
		counts[ts.Type]++
	}
	if counts[dtype.Q5_K] != 3 || counts[dtype.Q6_K] != 1 || counts[dtype.Q4_K] != 45 || counts[dtype.Q3_K] != 4*16 {
		t.Errorf("dtype counts %v", counts)
	}
	if _, err := synth.Build(registry(t), synth.Options{Arch: "qwen3", Dim: 256, Layers: 2, Heads: 4, DType: dtype.Q4_K, Recipe: "q3_k_m"}); err == nil {
		t.Error("q3_k_m over q4_k built")
	}
}

// A copier is refused where its construction cannot hold: a tied output
// (the logits would read the current token's code), heads too narrow for
// its codes, a residual too narrow for its subspaces, an architecture
// with tensors it does not set (qwen3's head norms), a sparse file.
func TestCopierOptionsAreChecked(t *testing.T) {
	ok := synth.Options{Arch: "llama", Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 512, Copier: true, Seed: 1}
	if _, err := synth.Build(registry(t), ok); err != nil {
		t.Fatalf("a copier of a llama shape: %v", err)
	}
	for name, edit := range map[string]func(*synth.Options){
		"tied":        func(o *synth.Options) { o.Tied = true },
		"one layer":   func(o *synth.Options) { o.Layers = 1 },
		"one head":    func(o *synth.Options) { o.Heads, o.KVHeads = 1, 1 },
		"head_dim 32": func(o *synth.Options) { o.HeadDim = 32 },
		"dim 128":     func(o *synth.Options) { o.Dim = 128 },
		"qwen3":       func(o *synth.Options) { o.Arch = "qwen3" },
		"sparse":      func(o *synth.Options) { o.Sparse = true },
	} {
		o := ok
		edit(&o)
		if _, err := synth.Build(registry(t), o); !errors.Is(err, synth.ErrOptions) {
			t.Errorf("%s: %v, want ErrOptions", name, err)
		}
	}
}
