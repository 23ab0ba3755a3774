package compiler

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/specs"
)

func TestPassTableKeepsItsOrder(t *testing.T) {
	if err := checkPassOrder(passes); err != nil {
		t.Fatal(err)
	}
	swapped := slices.Clone(passes)
	swapped[3], swapped[4] = swapped[4], swapped[3] // select before layout
	if err := checkPassOrder(swapped); err == nil || !strings.Contains(err.Error(), "layout must run before select") {
		t.Errorf("swapped table: %v", err)
	}
	var names []string
	for _, p := range Passes() {
		names = append(names, p.Name)
	}
	if want := "lower fuse check layout select buffers emit weights validate"; strings.Join(names, " ") != want {
		t.Errorf("passes %v", names)
	}
}

func TestRulesFile(t *testing.T) {
	t.Run("the embedded file parses", func(t *testing.T) {
		if _, err := Rules(); err != nil {
			t.Fatal(err)
		}
	})
	for _, c := range []struct{ name, src, want string }{
		{"a shadowed rule is refused, naming both",
			"a: rmsnorm(add(x, d)) => residual_norm\nb: rmsnorm(add(y, e)) if dies(y) => residual_norm\n",
			"t.rules:2: rule b can never fire: rule a at t.rules:1"},
		{"a rule with fewer conditions after one with more is fine", "a: rmsnorm(add(x, d)) if dies(x) => residual_norm\nb: rmsnorm(add(x, d)) => residual_norm\n", ""},
		{"an unknown op", "a: rmsnrom(x) => residual_norm\n", `t.rules:1: a: unknown op "rmsnrom"`},
		{"an unknown condition", "a: rmsnorm(x) if fast => residual_norm\n", `unknown condition "fast"`},
		{"a condition on a variable the pattern lacks", "a: rmsnorm(x) if dies(y) => residual_norm\n", "y is not a variable"},
		{"an unknown result", "a: rmsnorm(x) => magic\n", `unknown result "magic"`},
		{"a syntax error", "a rmsnorm(x) => residual_norm\n", `t.rules:1: expected ":"`},
		{"a duplicate name", "a: rmsnorm(x) => residual_norm\na: layernorm(x) => residual_norm\n", "already defined at t.rules:1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseRules("t.rules", c.src)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrRules) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// tinyLlama is a hand-built graph of one llama layer (dim 64, 4 heads of
// 16, 2 KV heads, ffn 128) in form f, as lower makes it.
func tinyLlama(f Form) *Graph {
	g := &Graph{Form: f, Layers: 1}
	val := func(name string, w, layer int) ValueID {
		g.Values = append(g.Values, Value{Name: name, Width: w, Layer: layer})
		return ValueID(len(g.Values) - 1)
	}
	b := func(label string, in []ValueID, out ...ValueID) Base {
		return Base{Layer: 0, Label: "L0." + label, In: in, Out: out}
	}
	ids := func(v ...ValueID) []ValueID { return v }
	x0 := val("x", 64, -1)
	g.Nodes = append(g.Nodes, &Embed{Base: Base{Layer: -1, Label: "embed", Out: ids(x0)}, Table: "tok", Scale: 1})
	h := val("h", 64, 0)
	g.Nodes = append(g.Nodes, &Norm{Base: b("attn.norm", ids(x0), h), Weight: "an", Eps: 1e-5})
	mm := func(label, w string, in ValueID, n int) ValueID {
		o := val("", n, 0)
		g.Nodes = append(g.Nodes, &MatMul{Base: b(label, ids(in), o), Weights: []string{w}, Ns: []int{n}, K: g.Values[in].Width})
		return o
	}
	rope := func(in ValueID, heads int) ValueID {
		o := val("", g.Values[in].Width, 0)
		g.Nodes = append(g.Nodes, &Rope{Base: b("attn.rope", ids(in), o), RopeArgs: RopeArgs{Style: specs.RopeInterleaved, Base: 10000, FreqScale: 1, Dim: 16}, Heads: heads, HeadDim: 16})
		return o
	}
	q := rope(mm("attn.q", "wq", h, 64), 4)
	k := rope(mm("attn.k", "wk", h, 32), 2)
	v := mm("attn.v", "wv", h, 32)
	a := val("a", 64, 0)
	g.Nodes = append(g.Nodes, &Attention{Base: b("attn.attention", ids(q, k, v), a), Heads: 4, KVHeads: 2, HeadDim: 16, HeadDimV: 16, Scale: 0.25})
	o := mm("attn.output", "wo", a, 64)
	x1 := val("x", 64, 0)
	g.Nodes = append(g.Nodes, &Elementwise{Base: b("attn.add", ids(x0, o), x1), Op: EwAdd})
	h2 := val("h", 64, 0)
	g.Nodes = append(g.Nodes, &Norm{Base: b("ffn.norm", ids(x1), h2), Weight: "fn", Eps: 1e-5})
	gt := mm("ffn.gate", "wg", h2, 128)
	sg := val("", 128, 0)
	g.Nodes = append(g.Nodes, &Elementwise{Base: b("ffn.silu", ids(gt), sg), Op: EwSiLU})
	up := mm("ffn.up", "wu", h2, 128)
	m := val("", 128, 0)
	g.Nodes = append(g.Nodes, &Elementwise{Base: b("ffn.mul", ids(sg, up), m), Op: EwMul})
	d := mm("ffn.down", "wd", m, 64)
	x2 := val("x", 64, 0)
	g.Nodes = append(g.Nodes, &Elementwise{Base: b("ffn.add", ids(x1, d), x2), Op: EwAdd})
	xo := val("x", 64, -1)
	g.Nodes = append(g.Nodes, &Norm{Base: Base{Layer: -1, Label: "output_norm", In: ids(x2), Out: ids(xo)}, Weight: "on", Eps: 1e-5})
	return g
}

func kinds(g *Graph) string {
	var ks []string
	for _, n := range g.Nodes {
		ks = append(ks, n.Kind())
	}
	return strings.Join(ks, " ")
}

func fuseFor(t *testing.T, chipName string, g *Graph) map[string]int {
	t.Helper()
	rules, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	s := &state{opts: Options{Chip: chip(t, chipName)}, act: dtype.F16}
	s.tuning = s.opts.Chip.Tuning()
	s.tensors = map[string]*gguf.TensorInfo{}
	for _, w := range []string{"wq", "wk", "wv", "wo", "wg", "wu", "wd"} {
		s.tensors[w] = &gguf.TensorInfo{Name: w, Type: dtype.Q8_0}
	}
	n := fuse(s, g, rules)
	if err := g.verify(); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFusionRules(t *testing.T) {
	t.Run("decode on a fusing chip: qkv and gate|up concat, rope_kv, silu_down, residual norms", func(t *testing.T) {
		g := tinyLlama(FormDecode)
		fuseFor(t, "m3-pro", g)
		want := "embedding rmsnorm matmul rope_kv_write attention matmul residual_rmsnorm matmul matmul_silu residual_rmsnorm"
		if got := kinds(g); got != want {
			t.Errorf("kinds\n%s\nwant\n%s\n%s", got, want, g)
		}
		mm := g.Nodes[2].(*MatMul)
		if !mm.Concat || strings.Join(mm.Weights, ",") != "wq,wk,wv" || mm.Label != "L0.attn.qkv" || !strings.HasSuffix(mm.Rule, " qkv_concat") {
			t.Errorf("qkv: %+v", mm)
		}
		if r := g.Nodes[3].base().Rule; !strings.HasPrefix(r, "fusion.rules:") || !strings.HasSuffix(r, " rope_kv") {
			t.Errorf("rope_kv rule %q", r)
		}
	})
	t.Run("decode on m1: the same kernels, Q, K, V and gate, up separate under one label", func(t *testing.T) {
		g := tinyLlama(FormDecode)
		fuseFor(t, "m1", g)
		want := "embedding rmsnorm matmul matmul matmul rope_kv_write attention matmul residual_rmsnorm matmul matmul matmul_silu residual_rmsnorm"
		if got := kinds(g); got != want {
			t.Errorf("kinds\n%s\nwant\n%s", got, want)
		}
		for _, i := range []int{2, 3, 4} {
			if l := g.Nodes[i].base().Label; l != "L0.attn.qkv" {
				t.Errorf("node %d label %s", i, l)
			}
		}
	})
	t.Run("prefill: no SiLU-fused GEMM, so the gate is its own node", func(t *testing.T) {
		g := tinyLlama(FormBatch)
		fuseFor(t, "m3-pro", g)
		want := "embedding rmsnorm matmul rope_kv_write attention matmul residual_rmsnorm matmul silu_gate matmul residual_rmsnorm"
		if got := kinds(g); got != want {
			t.Errorf("kinds\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("different weight types are not concatenated", func(t *testing.T) {
		g := tinyLlama(FormDecode)
		rules, _ := Rules()
		s := &state{opts: Options{Chip: chip(t, "m3-pro")}, act: dtype.F16}
		s.tuning = s.opts.Chip.Tuning()
		s.tensors = map[string]*gguf.TensorInfo{"wk": {Type: dtype.Q4_K}}
		fuse(s, g, rules)
		if n := strings.Count(kinds(g), "matmul "); n != 5 {
			t.Errorf("%d matmuls:\n%s", n, g)
		}
	})
	t.Run("a residual read after the norm is not updated in place", func(t *testing.T) {
		g := tinyLlama(FormDecode)
		// The output norm reads x0 too: x0 does not die at the first add.
		last := g.Nodes[len(g.Nodes)-1].base()
		last.In = []ValueID{0}
		fuseFor(t, "m3-pro", g)
		// The first add keeps its own node; the second add no longer
		// feeds a norm.
		if got, want := kinds(g), "embedding rmsnorm matmul rope_kv_write attention matmul add rmsnorm matmul matmul_silu add rmsnorm"; got != want {
			t.Errorf("kinds\n%s\nwant\n%s", got, want)
		}
	})
}

func TestBufferPlan(t *testing.T) {
	g := tinyLlama(FormDecode)
	fuseFor(t, "m3-pro", g)
	sp := &scratchPlan{byName: map[string]*slot{}}
	st, err := sp.allocate(g, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sp.slots {
		got = append(got, s.name+"="+itoa(s.elems))
	}
	// x lives throughout; h, then the attention output and the down
	// projection, take act.h; the qkv row (128 = 64 + 32 + 32), then o and
	// the gate|up row (256), take act.qkv.
	if want := "act.x=64 act.h=64 act.qkv=256"; strings.Join(got, " ") != want {
		t.Errorf("slots %v, want %s\n%s", got, want, g)
	}
	qkv := g.Nodes[2].(*MatMul)
	if s := st[qkv.Out[2]]; s.col != 96 || s.stride != 128 {
		t.Errorf("v view: %+v", s)
	}
	// Batch rows scale every slot.
	g2 := tinyLlama(FormBatch)
	fuseFor(t, "m3-pro", g2)
	sp2 := &scratchPlan{byName: map[string]*slot{}}
	if _, err := sp2.allocate(g2, 8, 2); err != nil {
		t.Fatal(err)
	}
	if sp2.byName["act.x"].elems != 8*64 {
		t.Errorf("act.x holds %d elements for 8 rows", sp2.byName["act.x"].elems)
	}

}

func TestKVAndIOBuffersAreExact(t *testing.T) {
	p := compile(t, sharedFile(t, "models", "stories260K.gguf"), Options{Chip: chip(t, "m1"), Ctx: 300})
	for _, b := range p.Buffers {
		switch {
		case strings.HasPrefix(b.Name, "kv."):
			if b.Size != 2*8*300*4 { // f16 × head_dim × ctx × kv_heads
				t.Errorf("%s: %d bytes", b.Name, b.Size)
			}
		case b.Name == "io.tokens":
			if b.Size != 4*300 { // max(chain 64 + 1, the largest bucket: min(4096, 300))
				t.Errorf("io.tokens %d", b.Size)
			}
		case b.Name == "io.logits":
			if b.Size != 4*512*32 { // vocab × out rows
				t.Errorf("io.logits %d", b.Size)
			}
		case b.Name == "io.positions", b.Name == "io.seqs":
			if b.Size != 4*300 { // a row per row of the largest bucket
				t.Errorf("%s %d", b.Name, b.Size)
			}
		case b.Name == "io.out_rows", b.Name == "io.argmax":
			if b.Size != 4*32 { // tuning.out_rows
				t.Errorf("%s %d", b.Name, b.Size)
			}
		}
	}
	if got := batchBuckets(4096, 300); !slices.Equal(got, []int{4, 8, 16, 32, 128, 300}) {
		t.Errorf("buckets %v", got)
	}
	if got := batchBuckets(512, 4096); !slices.Equal(got, []int{4, 8, 16, 32, 128, 512}) {
		t.Errorf("cpu buckets %v", got)
	}
	if got := batchBuckets(512, 6); !slices.Equal(got, []int{4, 6}) {
		t.Errorf("a short context's buckets %v", got)
	}
}

func TestKernelSelectionFollowsTuning(t *testing.T) {
	for _, c := range []struct {
		chip string
		dt   dtype.Type
		n, k int
		rows int
		silu bool
		want string
	}{
		{"m1", dtype.Q4_0, 4096, 1024, 1, false, "gemv_q4_0"},
		{"m1", dtype.Q4_0, 4096, 2048, 1, false, "gemv_q4_0_l"},
		{"m4-max", dtype.Q4_0, 4096, 512, 1, false, "gemv_q4_0_l"},
		{"m4-max", dtype.Q8_0, 4096, 4096, 1, false, "gemv_q8_0"},
		{"m4-max", dtype.Q4_K, 151936, 1024, 1, false, "gemv_wide_q4_k"},
		{"m3-pro", dtype.Q4_K, 1024, 3072, 1, true, "gemv_q4_k_l_silu"},
		{"m3-pro", dtype.Q6_K, 1024, 3072, 8, false, "simd_gemm_small_q6_k"},
		{"m3-pro", dtype.Q6_K, 1024, 3072, 32, false, "simd_gemm_q6_k"},
		{"cpu-avx2:8", dtype.Q4_0, 151936, 4096, 1, false, "gemv_q4_0_f32"},
	} {
		s := &state{opts: Options{Chip: chip(t, c.chip)}, act: dtype.F16, tensors: map[string]*gguf.TensorInfo{"w": {Type: c.dt}}}
		s.tuning = s.opts.Chip.Tuning()
		if s.opts.Chip.Kind == "cpu" {
			s.act = dtype.F32
		}
		g := &Graph{Values: []Value{{Width: c.k}, {Width: c.n}}}
		in := []ValueID{0}
		if c.silu {
			g.Values = append(g.Values, Value{Width: c.k})
			in = []ValueID{0, 2}
		}
		mm := &MatMul{Base: Base{In: in, Out: []ValueID{1}}, Weights: []string{"w"}, Ns: []int{c.n}, K: c.k, SiLU: c.silu}
		ks, err := s.selectNode(&program{g: g, rows: c.rows}, mm)
		if err != nil {
			t.Errorf("%s %v N=%d K=%d rows=%d: %v", c.chip, c.dt, c.n, c.k, c.rows, err)
			continue
		}
		if ks[0].Name != c.want {
			t.Errorf("%s %v N=%d K=%d rows=%d: %s, want %s", c.chip, c.dt, c.n, c.k, c.rows, ks[0].Name, c.want)
		}
	}
}

func itoa(n int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(n))
}

func fmtInt(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
