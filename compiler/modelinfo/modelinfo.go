package modelinfo

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/specs"
)

// Report is everything inspect says of a model.
type Report struct {
	File         string     `json:"file"`
	FileSize     int64      `json:"file_size"`
	GGUFVersion  uint32     `json:"gguf_version"`
	Alignment    int64      `json:"alignment"`
	DataOffset   int64      `json:"data_offset"`
	MetadataKeys int        `json:"metadata_keys"`
	Architecture string     `json:"architecture"`
	Name         string     `json:"name,omitempty"`
	Spec         string     `json:"spec,omitempty"` // the archs/ spec that matched, "" if none
	HParams      *HParams   `json:"hparams"`        // null when they could not be resolved
	HParamsError string     `json:"hparams_error,omitempty"`
	Tokenizer    *Tokenizer `json:"tokenizer"` // null when the file has none
	Tensors      []Tensor   `json:"tensors"`
	DTypes       []DTypeSum `json:"dtypes"`
	Parameters   int64      `json:"parameters"`
	TensorBytes  int64      `json:"tensor_bytes"`
}

// HParams are the resolved hyperparameters, in the spec's standard names.
type HParams struct {
	Dim           int          `json:"dim"`
	Layers        int          `json:"layers"`
	Heads         int          `json:"heads"`
	KVHeads       int          `json:"kv_heads"`
	HeadDim       int          `json:"head_dim"`
	HeadDimV      int          `json:"head_dim_v"`
	FFN           int          `json:"ffn"`
	Vocab         int          `json:"vocab"`
	CtxTrain      int          `json:"ctx_train"`
	Norm          string       `json:"norm"`
	NormEps       Real         `json:"norm_eps"`
	RopeStyle     string       `json:"rope_style"`
	RopeBase      Real         `json:"rope_base"`
	RopeBaseSWA   Real         `json:"rope_base_swa,omitempty"`
	RopeDim       int          `json:"rope_dim"`
	RopeScaling   *RopeScaling `json:"rope_scaling,omitempty"`
	SlidingWindow int          `json:"sliding_window,omitempty"`
	SlidingLayers []int        `json:"sliding_layers,omitempty"` // indices of the sliding-window layers
	AttnSoftcap   Real         `json:"attn_softcap,omitempty"`
	FinalSoftcap  Real         `json:"final_softcap,omitempty"`
	EmbedScale    Real         `json:"embed_scale"`
	TiedOutput    bool         `json:"tied_output"`
}

// RopeScaling is present only when the model scales RoPE.
type RopeScaling struct {
	Type    string `json:"type"`
	Factor  Real   `json:"factor"`
	OrigCtx int    `json:"orig_ctx,omitempty"`
}

// Real is a value GGUF stores as float32 (most reals are): it prints with
// the digits float32 needs, so 1e-5 reads 1e-05, not 9.999999747378752e-06.
type Real float64

func (r Real) String() string { return strconv.FormatFloat(float64(r), 'g', -1, 32) }

// MarshalJSON writes the shortest decimal that reads back as the same float32.
func (r Real) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(r)) || math.IsInf(float64(r), 0) {
		return []byte("null"), nil
	}
	return []byte(r.String()), nil
}

// Tokenizer summarizes tokenizer.* metadata.
type Tokenizer struct {
	Model        string `json:"model"`
	Pre          string `json:"pre,omitempty"`
	VocabSize    int    `json:"vocab_size"`
	Merges       int    `json:"merges"`
	BOS          *int64 `json:"bos,omitempty"`
	EOS          *int64 `json:"eos,omitempty"`
	EOT          *int64 `json:"eot,omitempty"`
	UNK          *int64 `json:"unk,omitempty"`
	PAD          *int64 `json:"pad,omitempty"`
	AddBOS       *bool  `json:"add_bos,omitempty"`
	AddEOS       *bool  `json:"add_eos,omitempty"`
	ChatTemplate bool   `json:"chat_template"`
}

// Tensor is one row of the tensor table.
type Tensor struct {
	Name   string   `json:"name"`
	Shape  []uint64 `json:"shape"` // GGML order: shape[0] is contiguous
	DType  string   `json:"dtype"`
	Bytes  int64    `json:"bytes"`
	Offset int64    `json:"offset"` // in the file
}

// DTypeSum totals the tensors of one dtype.
type DTypeSum struct {
	DType      string `json:"dtype"`
	Tensors    int    `json:"tensors"`
	Parameters int64  `json:"parameters"`
	Bytes      int64  `json:"bytes"`
}

// Describe builds the report of a model header. An architecture no spec
// knows, or metadata the spec rejects, still gives a report: HParams is nil
// and HParamsError says why.
func Describe(path string, f *gguf.File, reg *specs.Registry) *Report {
	r := &Report{
		File: path, FileSize: f.FileSize, GGUFVersion: f.Version, Alignment: f.Alignment,
		DataOffset: f.DataOffset, MetadataKeys: len(f.KVs), Architecture: f.Architecture(),
		Tensors: []Tensor{}, DTypes: []DTypeSum{},
	}
	r.Name, _ = f.GetString("general.name")
	r.HParams, r.Spec, r.HParamsError = resolve(f, reg)
	r.Tokenizer = tokenizer(f)

	sums := map[string]*DTypeSum{}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		dt := strings.ToLower(t.Type.String())
		r.Tensors = append(r.Tensors, Tensor{Name: t.Name, Shape: t.Dims, DType: dt, Bytes: t.Size, Offset: t.FileOffset})
		s := sums[dt]
		if s == nil {
			s = &DTypeSum{DType: dt}
			sums[dt] = s
		}
		s.Tensors++
		s.Parameters += t.Elements()
		s.Bytes += t.Size
		r.Parameters += t.Elements()
		r.TensorBytes += t.Size
	}
	for _, s := range sums {
		r.DTypes = append(r.DTypes, *s)
	}
	sort.Slice(r.DTypes, func(i, j int) bool {
		if r.DTypes[i].Bytes != r.DTypes[j].Bytes {
			return r.DTypes[i].Bytes > r.DTypes[j].Bytes
		}
		return r.DTypes[i].DType < r.DTypes[j].DType
	})
	return r
}

func resolve(f *gguf.File, reg *specs.Registry) (*HParams, string, string) {
	if r := f.Architecture(); r == "" {
		return nil, "", "the file has no general.architecture"
	}
	a, err := reg.ForArchitecture(f.Architecture())
	if err != nil {
		return nil, "", err.Error()
	}
	hp, err := a.Resolve(specs.GGUFMetadata(f))
	if err != nil {
		return nil, a.Name, err.Error()
	}
	out := &HParams{
		Dim: hp.Dim, Layers: hp.Layers, Heads: hp.Heads, KVHeads: hp.KVHeads, HeadDim: hp.HeadDim,
		HeadDimV: hp.HeadDimV, FFN: hp.FFN, Vocab: hp.Vocab, CtxTrain: hp.CtxTrain,
		Norm: string(hp.NormKind), NormEps: Real(hp.NormEps), RopeStyle: string(hp.RopeStyle),
		RopeBase: Real(hp.RopeBase), RopeDim: hp.RopeDim,
		SlidingWindow: hp.SlidingWindow, AttnSoftcap: Real(hp.AttnSoftcap), FinalSoftcap: Real(hp.FinalSoftcap),
		EmbedScale: Real(hp.EmbedScale), TiedOutput: hp.TiedOutput,
	}
	if hp.SlidingWindow != 0 {
		out.RopeBaseSWA = Real(hp.RopeBaseSWA)
	}
	if s := hp.RopeScaling; s.Type != "" && s.Type != specs.ScalingNone {
		out.RopeScaling = &RopeScaling{Type: string(s.Type), Factor: Real(s.Factor), OrigCtx: s.OrigCtx}
	}
	for i, sl := range hp.SlidingLayers {
		if sl {
			out.SlidingLayers = append(out.SlidingLayers, i)
		}
	}
	return out, a.Name, ""
}

func tokenizer(f *gguf.File) *Tokenizer {
	model, err := f.GetString("tokenizer.ggml.model")
	if err != nil {
		return nil
	}
	t := &Tokenizer{Model: model}
	t.Pre, _ = f.GetString("tokenizer.ggml.pre")
	if v, ok := f.Get("tokenizer.ggml.tokens"); ok {
		t.VocabSize = v.Len()
	}
	if v, ok := f.Get("tokenizer.ggml.merges"); ok {
		t.Merges = v.Len()
	}
	id := func(key string) *int64 {
		v, ok := f.Get("tokenizer.ggml." + key + "_token_id")
		if !ok {
			return nil
		}
		// llama.cpp writes -1 (or its uint32 image) for "no such token".
		if u, ok := v.Uint(); ok {
			if u >= 1<<31 {
				return nil
			}
			n := int64(u)
			return &n
		}
		if n, ok := v.Int(); ok && n >= 0 {
			return &n
		}
		return nil
	}
	flag := func(key string) *bool {
		if b, err := f.GetBool("tokenizer.ggml." + key); err == nil {
			return &b
		}
		return nil
	}
	t.BOS, t.EOS, t.EOT, t.UNK, t.PAD = id("bos"), id("eos"), id("eot"), id("unknown"), id("padding")
	t.AddBOS, t.AddEOS = flag("add_bos_token"), flag("add_eos_token")
	_, t.ChatTemplate = f.Get("tokenizer.chat_template")
	return t
}
