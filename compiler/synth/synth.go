package synth

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/specs"
)

// Options say what to synthesize. Zero values take the defaults documented
// on each field.
type Options struct {
	// Arch is a spec name (archs/NAME.yaml) or a general.architecture value.
	Arch string

	Dim, Layers, Heads int
	KVHeads            int // default Heads
	HeadDim            int // default Dim / Heads
	FFN                int // default 4 * Dim
	CtxTrain           int // default 2048

	// Set gives further hparams by name (e.g. "sliding_window": 512), as
	// values of the spec's types.
	Set map[string]specs.Value

	DType      dtype.Type // of the matrices; default F32
	EmbedDType dtype.Type // of the token embedding; default DType
	EmbedSet   bool       // EmbedDType was given (F32 is code 0)
	Tied       bool       // no output matrix: the logits use the embedding
	// Recipe "q4_k_m" mixes dtypes as llama.cpp's Q4_K_M does: Q4_K, with
	// Q6_K for the output matrix (the embedding when tied) and for the
	// attn_v and ffn_down matrices of the layers llama.cpp gives more
	// bits (the first and last eighth, and every third between). DType
	// must then be Q4_K. Recipe "q3_k_m" is llama.cpp's Q3_K_M: Q3_K,
	// with Q6_K for the output matrix, Q4_K for attn_output, and for attn_v
	// Q5_K in the first two layers and Q4_K after, for ffn_down Q5_K in the
	// first sixteenth of the layers and Q4_K after. DType must then be Q3_K.
	Recipe string

	// Vocab is the tokenizer to write; nil builds the small byte-level
	// BPE tokenizer of this package (see VocabFromGGUF to copy one).
	Vocab *Vocab

	Seed   uint64
	Sparse bool // zero weights, written as holes: a shape-only model
	// Copier builds an induction-head model whose greedy text copies its
	// context (copier.go) instead of random weights: a llama-like
	// architecture, untied, head_dim ≥ 64; rope_base is set to 1e12.
	Copier bool

	// Progress, when set, is called with bytes of tensor data written so
	// far and the total.
	Progress func(done, total int64)
}

// ErrOptions marks options that cannot make a model.
var ErrOptions = errors.New("synth")

// Plan is what Build decided: the metadata and the tensor table. Write
// turns it into a file.
type Plan struct {
	Arch     *specs.Arch
	HParams  *specs.HParams
	Tensors  []Tensor
	builder  *gguf.Builder
	sparse   bool
	copier   *Options // Options.Copier: the options, for the codes at Write
	total    int64
	progress func(done, total int64)
}

// Tensor is one tensor of the synthesized model.
type Tensor struct {
	specs.Tensor
	Type  dtype.Type
	Bytes int64
	std   float32 // standard deviation of the random values
	mean  float32
	cp    *copier // the copier's values instead (Options.Copier)
}

// Build resolves the options against the spec registry and lays out the
// model: metadata, tensor table, dtypes. It reads no weights and writes
// nothing.
func Build(reg *specs.Registry, o Options) (*Plan, error) {
	arch, archName, err := findArch(reg, o.Arch)
	if err != nil {
		return nil, err
	}
	if o.Dim <= 0 || o.Layers <= 0 || o.Heads <= 0 {
		return nil, fmt.Errorf("%w: --dim, --layers and --heads must be positive (got %d, %d, %d)", ErrOptions, o.Dim, o.Layers, o.Heads)
	}
	if o.KVHeads == 0 {
		o.KVHeads = o.Heads
	}
	if o.Heads%o.KVHeads != 0 {
		return nil, fmt.Errorf("%w: %d heads are not a multiple of %d KV heads", ErrOptions, o.Heads, o.KVHeads)
	}
	if o.HeadDim == 0 {
		if o.Dim%o.Heads != 0 {
			return nil, fmt.Errorf("%w: dim %d is not a multiple of %d heads; give --head-dim", ErrOptions, o.Dim, o.Heads)
		}
		o.HeadDim = o.Dim / o.Heads
	}
	if o.FFN == 0 {
		o.FFN = 4 * o.Dim
	}
	if o.CtxTrain == 0 {
		o.CtxTrain = 2048
	}
	if !o.EmbedSet {
		o.EmbedDType = o.DType
	}
	if o.Copier {
		if err := checkCopier(o); err != nil {
			return nil, err
		}
	}
	if o.Recipe != "" {
		base, ok := recipeBase[o.Recipe]
		if !ok {
			return nil, fmt.Errorf("%w: unknown recipe %q (q4_k_m and q3_k_m are known)", ErrOptions, o.Recipe)
		}
		if o.DType != base {
			return nil, fmt.Errorf("%w: recipe %s needs dtype %s, not %v", ErrOptions, o.Recipe, strings.ToLower(base.String()), o.DType)
		}
		if o.Tied && !o.EmbedSet {
			o.EmbedDType = dtype.Q6_K
		}
	}
	for _, t := range []dtype.Type{o.DType, o.EmbedDType} {
		if !dtype.CanQuantize(t) {
			return nil, fmt.Errorf("%w: dtype %v has no reference quantizer; use one of %s", ErrOptions, t, quantizable())
		}
	}
	v := o.Vocab
	if v == nil {
		v = byteLevelVocab(256)
	}

	values := map[string]specs.Value{
		"dim":        specs.IntValue(int64(o.Dim)),
		"layers":     specs.IntValue(int64(o.Layers)),
		"heads":      specs.IntValue(int64(o.Heads)),
		"kv_heads":   specs.IntValue(int64(o.KVHeads)),
		"head_dim":   specs.IntValue(int64(o.HeadDim)),
		"head_dim_v": specs.IntValue(int64(o.HeadDim)),
		"rope_dim":   specs.IntValue(int64(o.HeadDim)),
		"ffn":        specs.IntValue(int64(o.FFN)),
		"vocab":      specs.IntValue(int64(len(v.Tokens))),
		"ctx_train":  specs.IntValue(int64(o.CtxTrain)),
		"norm_eps":   specs.FloatValue(1e-5),
	}
	if arch.Output == specs.OutputEmbedding {
		// Encoders: BERT's two token types, mean pooling and non-causal
		// attention (dropped where the spec reads none).
		values["token_types"] = specs.IntValue(2)
		values["pooling"] = specs.IntValue(1)
		values["causal"] = specs.BoolValue(false)
	}
	if o.Copier {
		values["rope_base"] = specs.FloatValue(copierRopeBase)
	}
	for k, val := range o.Set {
		values[k] = val
	}
	// Only hparams the spec reads from a key can be written; the standard
	// defaults above are dropped where the spec derives the value instead
	// (a value given explicitly through Set is not).
	settable := map[string]bool{}
	for _, k := range arch.HParamKeys() {
		if k.Key != "" {
			settable[k.Name] = true
		}
	}
	for k := range values {
		if _, given := o.Set[k]; !given && !settable[k] {
			delete(values, k)
		}
	}
	md, err := arch.MetadataFor(archName, values)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOptions, err)
	}
	b := gguf.NewBuilder()
	b.SetString("general.architecture", archName)
	// The name must not contain the architecture: llama.cpp keys token
	// attributes off model names ("phi3" expects Phi-3's special tokens).
	b.SetString("general.name", fmt.Sprintf("akunu-synth-%dx%d", o.Layers, o.Dim))
	b.SetUint32("general.file_type", fileType(o.DType, o.Recipe))
	writeVocab(b, v)
	for _, key := range sortedKeys(md) {
		if key == "general.architecture" || strings.HasPrefix(key, "tokenizer.") && v.has(key) {
			continue
		}
		gv, err := toGGUF(md[key])
		if err != nil {
			return nil, fmt.Errorf("%w: metadata %s: %v", ErrOptions, key, err)
		}
		b.Set(key, gv)
	}
	kv := map[string]specs.Value{}
	for key, val := range md {
		kv[key] = val
	}
	kv["tokenizer.ggml.tokens"] = specs.ArrayValue(specs.KindString, len(v.Tokens), nil)

	// Resolve twice: first with no optional tensor, to learn which optional
	// tensors exist and which stand in for another (the output matrix
	// falls back to the embedding); then with the ones this model has.
	hp, err := arch.Resolve(specs.NewMapMetadata(kv))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOptions, err)
	}
	first, err := arch.Tensors(hp)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOptions, err)
	}
	var names []string
	for _, t := range first {
		if !t.Optional || (t.Fallback != "" && !o.Tied) {
			names = append(names, t.Name)
		}
	}
	if hp, err = arch.Resolve(specs.NewMapMetadata(kv, names...)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOptions, err)
	}
	all, err := arch.Tensors(hp)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOptions, err)
	}

	p := &Plan{Arch: arch, HParams: hp, builder: b, sparse: o.Sparse, progress: o.Progress}
	if o.Copier {
		oc := o
		oc.Vocab = v
		p.copier = &oc
	}
	for _, st := range all {
		if !st.Present {
			continue
		}
		if o.Copier && !copierTensors[st.Logical] {
			return nil, fmt.Errorf("%w: a copier needs a llama-like architecture; %s has %s", ErrOptions, archName, st.Name)
		}
		t := Tensor{Tensor: st}
		t.Type, t.std, t.mean = pick(st, o)
		n := int64(1)
		for _, d := range st.Shape {
			n *= d
		}
		if t.Bytes, err = t.Type.RowBytes(n); err != nil || st.Shape[0]%int64(t.Type.BlockSize()) != 0 {
			return nil, fmt.Errorf("%w: tensor %s %v: rows of %d elements are not a multiple of %v's block size %d; choose another shape or dtype",
				ErrOptions, st.Name, st.Shape, st.Shape[0], t.Type, t.Type.BlockSize())
		}
		p.total += t.Bytes
		p.Tensors = append(p.Tensors, t)
	}
	return p, nil
}

// pick chooses a tensor's dtype and the distribution of its values. Matrices
// get a standard deviation of 1/sqrt(fan-in), so that every matmul keeps
// the scale of its input and activations stay finite through any number of
// layers; an output matrix (one that falls back to the embedding when
// absent) four times that, so that logits are peaked and greedy decoding
// meets few near-ties; norms 1 with a little noise; biases small.
func pick(t specs.Tensor, o Options) (dtype.Type, float32, float32) {
	fanIn := float32(t.Shape[0])
	switch {
	case t.Role == specs.RoleNorm:
		return dtype.F32, 0.05, 1
	case t.F32:
		return dtype.F32, 1, 0
	case t.Role == specs.RoleBias:
		return dtype.F32, 0.02, 0
	case len(t.Shape) < 2:
		return dtype.F32, 0.1, 0
	case t.Role == specs.RoleEmbedding:
		return o.EmbedDType, 1, 0
	case t.Optional && t.Fallback != "":
		if o.Recipe != "" {
			return dtype.Q6_K, 4 / float32(math.Sqrt(float64(fanIn))), 0
		}
		return o.DType, 4 / float32(math.Sqrt(float64(fanIn))), 0
	default:
		return recipeType(o, t), 1 / float32(math.Sqrt(float64(fanIn))), 0
	}
}

// recipeBase is the dtype each recipe mixes others into.
var recipeBase = map[string]dtype.Type{"q4_k_m": dtype.Q4_K, "q3_k_m": dtype.Q3_K}

// recipeType is the dtype of a layer matrix under o's recipe: llama.cpp's
// llama_tensor_get_type for the mix (src/llama-quant.cpp), for the
// tensors our specs name (no fused QKV, no experts, not Falcon).
func recipeType(o Options, t specs.Tensor) dtype.Type {
	switch o.Recipe {
	case "q4_k_m":
		if (t.Logical == "attn_v" || t.Logical == "ffn_down") && moreBits(t.Layer, o.Layers) {
			return dtype.Q6_K
		}
	case "q3_k_m":
		switch t.Logical {
		case "attn_v":
			if t.Layer < 2 {
				return dtype.Q5_K
			}
			return dtype.Q4_K
		case "ffn_down":
			if t.Layer < o.Layers/16 {
				return dtype.Q5_K
			}
			return dtype.Q4_K
		case "attn_output":
			return dtype.Q4_K
		}
	}
	return o.DType
}

// moreBits is llama.cpp's choice of the layers whose attn_v and ffn_down
// get more bits in its _M mixes.
func moreBits(layer, layers int) bool {
	return layer < layers/8 || layer >= 7*layers/8 || (layer-layers/8)%3 == 2
}

func findArch(reg *specs.Registry, name string) (*specs.Arch, string, error) {
	if name == "" {
		return nil, "", fmt.Errorf("%w: --arch is required (one of %s)", ErrOptions, strings.Join(reg.Names(), ", "))
	}
	if a, ok := reg.Spec(name); ok && !a.Abstract && len(a.Architectures) > 0 {
		return a, a.Architectures[0], nil
	}
	a, err := reg.ForArchitecture(name)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrOptions, err)
	}
	return a, name, nil
}

// Write writes the model to path. With Sparse the tensor data is left as
// holes in the file (zeros to a reader).
func (p *Plan) Write(path string, seed uint64) error {
	var done int64
	var cp *copier
	if p.copier != nil {
		cp = newCopier(*p.copier, len(p.copier.Vocab.Tokens), seed)
	}
	for i := range p.Tensors {
		t := &p.Tensors[i]
		t.cp = cp
		dims := make([]uint64, len(t.Shape))
		for j, d := range t.Shape {
			dims[j] = uint64(d)
		}
		if p.sparse {
			p.builder.AddZeroTensor(t.Name, t.Type, dims)
			continue
		}
		p.builder.AddTensorFunc(t.Name, t.Type, dims, func(w ioWriter) error {
			err := t.generate(w, seed)
			done += t.Bytes
			if p.progress != nil {
				p.progress(done, p.total)
			}
			return err
		})
	}
	if err := p.builder.Err(); err != nil {
		return err
	}
	return p.builder.WriteFile(path, p.sparse)
}

// generate writes the tensor's values, row by row: uniform on
// [mean-a, mean+a] with a = sqrt(3)·std (the same standard deviation as a
// Gaussian, at a fraction of the cost), from a generator seeded by the model
// seed and the tensor's name, so tensors are independent of their order.
func (t *Tensor) generate(w ioWriter, seed uint64) error {
	h := fnv.New64a()
	h.Write([]byte(t.Name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	row := int(t.Shape[0])
	rows := 1
	for _, d := range t.Shape[1:] {
		rows *= int(d)
	}
	rowBytes, _ := t.Type.RowBytes(int64(row))
	// Quantize a batch of rows at a time: fewer writes, bounded memory.
	batch := max(1, (1<<20)/row)
	src := make([]float32, batch*row)
	dst := make([]byte, int64(batch)*rowBytes)
	a := float32(math.Sqrt(3)) * t.std
	for r := 0; r < rows; r += batch {
		n := min(batch, rows-r)
		vals := src[:n*row]
		if t.cp != nil {
			t.cp.rows(t, r, n, row, vals)
		} else {
			for i := range vals {
				vals[i] = t.mean + a*(2*rng.Float32()-1)
			}
		}
		out := dst[:int64(n)*rowBytes]
		if err := quantizeRows(t.Type, vals, out, n, row, rowBytes); err != nil {
			return fmt.Errorf("tensor %s: %w", t.Name, err)
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	return nil
}

// quantizeRows quantizes n rows of row values into out, the rows split
// across the cores (the K-quants' scale search made a 0.6B model take
// minutes on one). Rows are independent, so the bytes do not depend on the
// split.
func quantizeRows(t dtype.Type, vals []float32, out []byte, n, row int, rowBytes int64) error {
	parts := min(n, runtime.GOMAXPROCS(0))
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		r0, r1 := p*n/parts, (p+1)*n/parts
		wg.Go(func() {
			errs[p] = dtype.Quantize(t, vals[r0*row:r1*row], out[int64(r0)*rowBytes:int64(r1)*rowBytes])
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// fileType is general.file_type for a model whose matrices are of type t
// (llama.cpp's LLAMA_FTYPE numbering, which only names the mostly-t kind).
func fileType(t dtype.Type, recipe string) uint32 {
	switch recipe {
	case "q4_k_m":
		return 15
	case "q3_k_m":
		return 12
	}
	switch t {
	case dtype.F32:
		return 0
	case dtype.F16:
		return 1
	case dtype.Q4_0:
		return 2
	case dtype.Q4_1:
		return 3
	case dtype.Q8_0:
		return 7
	case dtype.Q5_0:
		return 8
	case dtype.Q5_1:
		return 9
	case dtype.Q2_K:
		return 10
	case dtype.Q3_K:
		return 11 // MOSTLY_Q3_K_S, the mix closest to all Q3_K
	case dtype.Q4_K:
		return 15
	case dtype.Q5_K:
		return 17
	case dtype.Q6_K:
		return 18
	case dtype.IQ4_NL:
		return 25
	case dtype.IQ4_XS:
		return 30
	case dtype.BF16:
		return 32
	}
	return 0
}

func quantizable() string {
	var s []string
	for _, t := range dtype.All() {
		if dtype.CanQuantize(t) {
			s = append(s, strings.ToLower(t.String()))
		}
	}
	return strings.Join(s, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
