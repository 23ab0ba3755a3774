package compiler

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/chat"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
	"github.com/akunu-dev/akunu/specs/chips"
)

// PlanTuning is a target's tuning as the plan records it (the runtime
// reads it back with device.ChipTuning): every field, so that a launch the
// compiler derived from it is the launch the runtime derives again.
func PlanTuning(t chips.Tuning) plans.Tuning {
	return plans.Tuning{
		FuseWeights: t.FuseWeights, Q4LargeKThreshold: uint32(t.Q4LargeKThreshold), WideGEMVThreshold: uint32(t.WideGEMVThreshold),
		ChainChunk: uint32(t.ChainChunk), PrefillChunk: uint32(t.PrefillChunk), NormTG: uint32(t.NormTG),
		LargeKTypes: slices.Clone(t.LargeKTypes), AttnDecodeFastKV: uint32(t.AttnDecodeFastKV),
		AttnDecodeParallelKV: uint32(t.AttnDecodeParallelKV), AttnPrefillV2Tokens: uint32(t.AttnPrefillV2Tokens),
		MaxSeqs: uint32(t.MaxSeqs), OutRows: uint32(t.OutRows), Repack: slices.Clone(t.Repack), GEMVMinGroups: uint32(t.GEMVMinGroups),
		GEMVMinRows: uint32(t.GEMVMinRows), Int8GEMV: t.Int8GEMV, GEMVPreloadMaxK: uint32(t.GEMVPreloadMaxK),
	}
}

// header fills the plan's header and model.
func (s *state) header() error {
	p := s.plan
	pr := s.opts.Chip
	t := s.tuning
	p.Header = plans.Header{
		Compiler:   "akunuc " + Version,
		SpecDigest: specDigest(s.arch.Digest()),
		Target: plans.Target{
			Chip: pr.String(), Kind: string(pr.Kind), Vendor: string(pr.Vendor), Family: pr.Family,
			BandwidthGBs: pr.BandwidthGBs, GPUCores: uint32(pr.GPUCores), CPUCores: uint32(pr.CPUCores), SLCBytes: uint64(pr.SLC),
			Tuning: PlanTuning(t),
		},
		Model: plans.ModelFile{File: s.fileName, Size: uint64(s.file.FileSize), HeaderSHA256: s.file.HeaderHash,
			DataOffset: uint64(s.file.DataOffset)},
	}
	hp := s.hp
	h := plans.HParams{
		Arch: hp.Arch, Dim: uint32(hp.Dim), Layers: uint32(hp.Layers), Heads: uint32(hp.Heads), KVHeads: uint32(hp.KVHeads),
		HeadDim: uint32(hp.HeadDim), FFN: uint32(hp.FFN), Vocab: uint32(hp.Vocab), Ctx: uint32(s.ctx), NormEps: float32(hp.NormEps),
		RopeStyle: string(hp.RopeStyle), RopeBase: float32(hp.RopeBase), RopeDim: uint32(hp.RopeDim),
		RopeScaling: string(hp.RopeScaling.Type), RopeScale: float32(hp.RopeScaling.Factor), RopeOrigCtx: uint32(hp.RopeScaling.OrigCtx),
		SlidingWindow: uint32(hp.SlidingWindow), AttnSoftcap: float32(hp.AttnSoftcap), FinalSoftcap: float32(hp.FinalSoftcap),
		TiedOutput: hp.TiedOutput,
	}
	if slices.Contains(hp.SlidingLayers, true) {
		h.SlidingLayers = slices.Clone(hp.SlidingLayers)
		h.RopeBaseLocal = float32(hp.RopeBaseSWA)
	}
	if hp.EmbedScale != 1 {
		h.EmbedScale = float32(hp.EmbedScale)
	}
	p.Model.HParams = h
	v, err := tokenizer.FromGGUF(s.file)
	if err != nil {
		return fmt.Errorf("%s: %w", s.fileName, err)
	}
	p.Model.Tokenizer = planTokenizer(v)
	// Build the tokenizer as the runtime will, from the plan's fields: a
	// vocabulary it would refuse at load (a repeated token, say) is
	// refused here instead, by the same code.
	if _, err := tokenizer.FromPlan(&p.Model.Tokenizer); err != nil {
		return fmt.Errorf("%s: %w", s.fileName, err)
	}
	if !s.opts.NoTemplate {
		p.Model.Tokenizer.ChatTemplate, _ = s.file.GetString("tokenizer.chat_template")
	}
	if strings.TrimSpace(p.Model.Tokenizer.ChatTemplate) != "" {
		// akunu chat and serve parse it with chat.Select; a template they
		// cannot parse is refused now, naming its line and column.
		if _, err := chat.Parse(p.Model.Tokenizer.ChatTemplate); err != nil {
			return fmt.Errorf("%s: %w (compile with --no-template to leave it out)", s.fileName, err)
		}
	}
	if p.Model.Tokenizer.ChatTemplate == "" && s.arch.ChatTemplate != "" && !s.opts.NoTemplate {
		// The model ships no template but its family has one format: the
		// plan carries that built-in's source, so the runtime needs no
		// model knowledge to chat.
		t, ok := chat.Builtin(s.arch.ChatTemplate)
		if !ok {
			return fmt.Errorf("%s: chat_template %q is no built-in template (have %v)", s.arch.File, s.arch.ChatTemplate, chat.BuiltinNames())
		}
		p.Model.Tokenizer.ChatTemplate = t.Source()
	}
	return nil
}

// planTokenizer is the adapter from the runtime's vocabulary to the plan's.
// The plan keeps GGUF token types; the vocabulary keeps llama.cpp's
// attributes, mapped back here (the strongest attribute wins: byte,
// unknown, user-defined, control, unused, normal).
func planTokenizer(v tokenizer.Vocab) plans.Tokenizer {
	t := plans.Tokenizer{Model: v.Model, Pre: v.Pre, Tokens: v.Tokens, Scores: v.Scores, Merges: v.Merges,
		BOS: v.BOS, EOS: v.EOS, EOT: v.EOT, UNK: v.UNK, PAD: v.PAD,
		AddBOS: v.AddBOS, AddEOS: v.AddEOS, AddSpacePrefix: v.AddSpacePrefix}
	if len(v.Attrs) > 0 {
		t.Types = make([]int32, len(v.Attrs))
		for i, a := range v.Attrs {
			t.Types[i] = typeOfAttr(a)
		}
	}
	for _, id := range v.EOG {
		if id != v.EOS && id != v.EOT {
			t.EOG = append(t.EOG, id)
		}
	}
	return t
}

// typeOfAttr is the GGUF token type (llama.cpp's numbering) of an
// attribute set.
func typeOfAttr(a tokenizer.TokenAttr) int32 {
	switch {
	case a&tokenizer.AttrByte != 0:
		return 6
	case a&tokenizer.AttrUnknown != 0:
		return 2
	case a&tokenizer.AttrUserDefined != 0:
		return 4
	case a&tokenizer.AttrControl != 0:
		return 3
	case a&tokenizer.AttrUnused != 0:
		return 5
	case a&tokenizer.AttrNormal != 0:
		return 1
	}
	return 0
}

// specDigest digests what a plan was compiled from besides the model and
// the chip: the architecture spec, fusion.rules and the kernel catalog.
func specDigest(archDigest string) string {
	h := sha256.New()
	rd := rulesDigest()
	fmt.Fprintf(h, "arch %s\nrules %x\ncatalog %x\ncompiler %s\n", archDigest, rd, catalogDigest(), Version)
	return fmt.Sprintf("sha256:%x", h.Sum(nil))
}

// catalogDigest digests the kernel catalog: every kernel's name, bindings,
// constants, parameter layout and geometry rule.
func catalogDigest() [32]byte {
	var b strings.Builder
	for _, k := range kernels.All() {
		fmt.Fprintf(&b, "%s|%d|%s|", k.Name, k.ParamSlot, k.GeometryDoc)
		for _, bd := range k.Bindings {
			fmt.Fprintf(&b, "%s:%v:%v:%s,", bd.Name, bd.Access, bd.Role, bd.When)
		}
		for _, c := range k.Constants {
			fmt.Fprintf(&b, "%d:%s:%v,", c.Index, c.Name, c.Type)
		}
		fmt.Fprintf(&b, "|%s:%d:", k.Params.Name, k.Params.Size)
		for _, f := range k.Params.Fields {
			fmt.Fprintf(&b, "%s@%d/%s,", f.Name, f.Offset, f.Patch)
		}
		b.WriteByte('\n')
	}
	return sha256.Sum256([]byte(b.String()))
}

// checkPass verifies every graph (an optional pass: the rewrites check
// themselves as they go; this catches a rule result that breaks the order).
func checkPass(s *state) (string, error) {
	n := 0
	for _, g := range s.graphs {
		if err := g.verify(); err != nil {
			return "", err
		}
		n += len(g.Nodes)
	}
	return fmt.Sprintf("%d graphs, %d nodes, in order", len(s.graphs), n), nil
}

// validatePass holds the plan to plans.Validate.
func validatePass(s *state) (string, error) {
	if err := s.plan.Validate(); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d buffers, %d pipelines, %d programs: valid", len(s.plan.Buffers), len(s.plan.Pipelines), len(s.plan.Programs)), nil
}
