package plans

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestExampleIsValid(t *testing.T) {
	if err := Example().Validate(); err != nil {
		t.Fatal(err)
	}
}

func cmd(p *Plan, prog string, i int) *Command { return &p.Program(prog).Commands[i] }

func buf(p *Plan, name string) *Buffer {
	i, ok := p.BufferIndex(name)
	if !ok {
		panic("no buffer " + name)
	}
	return &p.Buffers[i]
}

// TestValidate breaks Example one way at a time; each must give exactly
// its expected line.
func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(p *Plan)
		want   string
	}{
		// Indices.
		{"a pipeline index out of range", func(p *Plan) { cmd(p, "decode", 4).Pipeline = 14 },
			"decode[4] L0.attn.flash: pipeline 14 of 14"},
		{"a buffer index out of range", func(p *Plan) { cmd(p, "decode", 4).Bindings[1].Buffer = 41 },
			"decode[4] L0.attn.flash: binding slot 1: buffer 41 of 41"},
		// Bindings.
		{"a binding past its buffer", func(p *Plan) {
			b := &cmd(p, "decode", 4).Bindings[1]
			b.Offset, b.Length = 4096, 8192
		}, `decode[4] L0.attn.flash: binding slot 1: offset 4096 + 8192 bytes exceeds buffer "kv.L0.k" (8192 bytes)`},
		{"a binding offset at the end", func(p *Plan) { cmd(p, "decode", 4).Bindings[1].Offset = 8192 },
			`decode[4] L0.attn.flash: binding slot 1: offset 8192 is past the end of buffer "kv.L0.k" (8192 bytes)`},
		{"a binding whose length overflows", func(p *Plan) {
			b := &cmd(p, "decode", 4).Bindings[1]
			b.Offset, b.Length = 1, math.MaxUint64
		}, `decode[4] L0.attn.flash: binding slot 1: offset 1 + 18446744073709551615 bytes exceeds buffer "kv.L0.k" (8192 bytes)`},
		{"a slot bound twice", func(p *Plan) { cmd(p, "decode", 4).Bindings[1].Slot = 0 },
			"decode[4] L0.attn.flash: binding slot 0: slot bound twice"},
		{"a slot shared with the parameters", func(p *Plan) { cmd(p, "decode", 4).ParamsSlot = 0 },
			"decode[4] L0.attn.flash: binding slot 0: slot bound twice"},
		{"a slot too high", func(p *Plan) { cmd(p, "decode", 4).Bindings[1].Slot = 64 },
			"decode[4] L0.attn.flash: binding slot 64: the highest slot is 63"},
		// Patches.
		{"a patch past the parameters", func(p *Plan) { cmd(p, "decode", 4).Patches[0].At = 14 },
			"decode[4] L0.attn.flash: patch 0 (kv_length): bytes [14, 18) exceed the 16 parameter bytes"},
		{"a position+KV patch needs 8 bytes", func(p *Plan) {
			pt := &cmd(p, "decode", 4).Patches[0]
			pt.Kind, pt.At = PatchPositionKV, 12
		}, "decode[4] L0.attn.flash: patch 0 (position_kv): bytes [12, 20) exceed the 16 parameter bytes"},
		{"an unknown patch kind", func(p *Plan) { cmd(p, "decode", 4).Patches[0].Kind = 99 },
			"decode[4] L0.attn.flash: patch 0 (patch(99)): unknown patch kind; this runtime knows 9"},
		{"a seq patch past the last sequence slot", func(p *Plan) { cmd(p, "decode", 4).Patches[1].Stride = 16384 },
			`decode[4] L0.attn.flash: patch 1 (seq): offset 0 + 16384×3 (+1 bytes) exceeds buffer "kv.L0.k" (32768 bytes)`},
		{"a parameter patch of width 3", func(p *Plan) { cmd(p, "decode", 4).Patches[0].Width = 3 },
			"decode[4] L0.attn.flash: patch 0 (kv_length): width 3; a parameter patch writes 4 or 8 bytes"},
		{"a u32 patch that overflows over the context", func(p *Plan) { cmd(p, "decode", 4).Patches[0].Stride = 1 << 30 },
			"decode[4] L0.attn.flash: patch 0 (kv_length): 0 + 1073741824×x overflows 4 bytes over the program's steps"},
		{"a binding patch that leaves its buffer on the last chain token", func(p *Plan) {
			cmd(p, "decode", 21).Patches[0].Stride = 8
		}, `decode[21] argmax: patch 0 (argmax_slot): offset 0 + 8×4 (+4 bytes) exceeds buffer "io.tokens" (32 bytes)`},
		{"a binding patch of a missing binding", func(p *Plan) { cmd(p, "decode", 0).Patches[0].At = 3 },
			"decode[0] embed: patch 0 (token): binding 3 of 3"},
		{"a binding patch writing two values", func(p *Plan) { cmd(p, "decode", 0).Patches[0].Kind = PatchPositionKV },
			"decode[0] embed: patch 0 (position_kv): writes two values and cannot target a binding"},
		{"an unknown patch target", func(p *Plan) { cmd(p, "decode", 0).Patches[0].Target = 9 },
			"decode[0] embed: patch 0 (token): unknown target 9"},
		{"too many patches", func(p *Plan) {
			c := cmd(p, "decode", 4)
			for len(c.Patches) <= MaxPatches {
				c.Patches = append(c.Patches, c.Patches[0])
			}
		}, "decode[4] L0.attn.flash: 17 patches, more than 16"},
		// Geometry and sizes.
		{"a zero grid", func(p *Plan) { cmd(p, "decode", 4).Grid[2] = 0 },
			"decode[4] L0.attn.flash: grid [4 1 0] has a zero dimension"},
		{"a zero threadgroup", func(p *Plan) { cmd(p, "decode", 4).Threadgroup[1] = 0 },
			"decode[4] L0.attn.flash: threadgroup [128 0 1]: each dimension ≥ 1, at most 1024 threads in all"},
		{"a threadgroup too large", func(p *Plan) { cmd(p, "decode", 4).Threadgroup = [3]uint32{64, 64, 1} },
			"decode[4] L0.attn.flash: threadgroup [64 64 1]: each dimension ≥ 1, at most 1024 threads in all"},
		{"too much threadgroup memory", func(p *Plan) { cmd(p, "decode", 4).ThreadgroupMemory = 1 << 20 },
			"decode[4] L0.attn.flash: 1048576 bytes of threadgroup memory, more than 262144"},
		{"parameters too long", func(p *Plan) { cmd(p, "decode", 4).Params = make([]byte, 5000) },
			"decode[4] L0.attn.flash: 5000 parameter bytes, more than 4096"},
		{"a parameter slot without parameters", func(p *Plan) { cmd(p, "decode", 4).Params = nil; cmd(p, "decode", 4).Patches = nil },
			"decode[4] L0.attn.flash: parameter slot 4 but no parameters"},
		{"an empty label", func(p *Plan) { cmd(p, "decode", 4).Label = "" },
			"decode[4] : label: 0 bytes; a label has 1 to 256"},
		// Programs.
		{"no decode program", func(p *Plan) { p.Programs = p.Programs[1:] }, `programs: 0 decode programs; a plan has one (or embedding programs only)`},
		{"two programs of one name", func(p *Plan) { p.Programs[1].Name = "decode" },
			`program 1 "decode": a second program of that name`},
		{"a decode batch", func(p *Plan) { p.Programs[1].Batch = 2 },
			`program 1 "sampled": batch 2; a decode program takes one token`},
		{"a batch name that is not its bucket", func(p *Plan) { p.Programs[2].Name = "batch.16" },
			`program 2 "batch.16": a batch program of 8 rows is named "batch.8"`},
		{"a prefill name that is not its batch", func(p *Plan) { p.Programs[2].Kind, p.Programs[2].Name = 0, "prefill.16" },
			`program 2 "prefill.16": a prefill program of batch 8 is named "prefill.8"`},
		{"more output rows than rows", func(p *Plan) { p.Programs[2].OutRows = 9 },
			`program 2 "batch.8": 9 output rows; a batch program of 8 rows has 1 to 8`},
		{"an unknown program kind", func(p *Plan) { p.Programs[2].Kind = 9 },
			`program 2 "batch.8": unknown program kind 9; this runtime knows 5`},
		{"a program of no kind", func(p *Plan) { p.Programs[2].Kind, p.Programs[2].Name = 0, "embed" },
			`program 2 "embed": no kind, and the name says none (decode, sampled, prefill.N)`},
		{"an empty program", func(p *Plan) { p.Programs[1].Commands = nil },
			`program 1 "sampled": 0 commands; a program has 1 to 1048576`},
		// Buffers.
		{"two buffers of one name", func(p *Plan) { buf(p, "act.h").Name = "act.x" },
			`buffer 26 "act.x": name used by buffer 25 too`},
		{"an unknown buffer kind", func(p *Plan) { buf(p, "act.h").Kind = 0 },
			`buffer 26 "act.h": unknown kind 0`},
		{"a weight outside the model file", func(p *Plan) { buf(p, "output_norm.weight").Offset = p.Header.Model.Size - 100 },
			`buffer 23 "output_norm.weight": [85788, 86044) lies outside the model file (85888 bytes)`},
		{"a weight before the data section", func(p *Plan) { buf(p, "output_norm.weight").Offset = 100 },
			`buffer 23 "output_norm.weight": offset 100 lies before the data section (4096)`},
		{"a weight whose end overflows", func(p *Plan) { buf(p, "token_embd.weight").Offset = math.MaxUint64 - 10 },
			`buffer 0 "token_embd.weight": [18446744073709551605, 2165) lies outside the model file (85888 bytes)`},
		{"a derived buffer from scratch", func(p *Plan) { buf(p, "L0.qkv").Sources[1] = 25 },
			`buffer 10 "L0.qkv": source 25 "act.x" is a scratch buffer, not a weight`},
		{"a derived buffer from itself", func(p *Plan) { buf(p, "L0.qkv").Sources[1] = 10 },
			`buffer 10 "L0.qkv": source 10 is not another buffer (41 buffers)`},
		{"a concatenation of the wrong size", func(p *Plan) {
			b := buf(p, "L0.qkv")
			b.Sources = b.Sources[:2]
		}, `buffer 10 "L0.qkv": size 8704, but its sources' rows add up to 6528 bytes`},
		{"an unknown recipe", func(p *Plan) { buf(p, "L0.qkv").Recipe = "repack:" },
			`buffer 10 "L0.qkv": recipe "repack:" is neither "concat_rows" nor "repack:"<layout>`},
		{"a KV buffer of another dtype", func(p *Plan) { b := buf(p, "kv.L1.v"); b.DType = "q4_0" },
			`buffer 34 "kv.L1.v": dtype "q4_0"; a KV cache is f16, q8_0 or f32`},
		{"a Q8_0 KV buffer whose size is not its shape's", func(p *Plan) {
			b := buf(p, "kv.L1.v")
			b.DType, b.Shape[0] = "q8_0", 32
		}, `buffer 34 "kv.L1.v": size 8192 does not match q8_0[32 128 2] (8704 bytes)`},
		{"a Q8_0 KV buffer of rows that are not whole blocks", func(p *Plan) {
			b := buf(p, "kv.L1.v")
			b.DType, b.Shape[0] = "q8_0", 48
		}, `buffer 34 "kv.L1.v": 48 elements a row are not whole q8_0 blocks`},
		{"a KV buffer of a layer the model lacks", func(p *Plan) { buf(p, "kv.L1.v").Layer = 2 },
			`buffer 34 "kv.L1.v": layer 2 of 2`},
		{"two KV buffers for one half", func(p *Plan) { buf(p, "kv.L1.v").Half = KVKey },
			`buffer 34 "kv.L1.v": layer 1 K is buffer 33 too`},
		{"a KV cache longer than the context", func(p *Plan) {
			b := buf(p, "kv.L1.v")
			b.Shape[1], b.Size = 256, 2*b.Size
		}, `buffer 34 "kv.L1.v": 256 positions, more than the plan's context (128)`},
		{"a size that does not match the shape", func(p *Plan) { buf(p, "act.x").Size = 100 },
			`buffer 25 "act.x": size 100 does not match f32[512] (2048 bytes)`},
		{"constant data of the wrong length", func(p *Plan) {
			b := buf(p, "rope.freqs")
			b.Data = b.Data[:8]
		}, `buffer 24 "rope.freqs": 8 bytes of data for a size of 32`},
		{"a field of another kind", func(p *Plan) { buf(p, "act.x").Tensor = "x" },
			`buffer 25 "act.x": tensor is set, but a scratch buffer has none`},
		{"an io buffer without a role", func(p *Plan) { buf(p, "io.logits").Role = "" },
			`buffer 39 "io.logits": role: empty`},
		{"a zero-size buffer", func(p *Plan) { b := buf(p, "io.logits"); b.Size, b.Shape = 0, nil },
			`buffer 39 "io.logits": size: 0 is outside [1, 1099511627776]`},
		// Pipelines.
		{"a stale cache key", func(p *Plan) { p.Pipelines[2].Key = "gemv_q8_0" },
			`pipeline 2 "gemv_q8_0": key "gemv_q8_0", its kernel and constants make "gemv_q8_0|0:u32=64"`},
		{"a duplicate pipeline", func(p *Plan) { p.Pipelines[6] = p.Pipelines[2] },
			`pipeline 6 "gemv_q8_0": same kernel and constants as pipeline 2`},
		{"constants out of order", func(p *Plan) {
			pl := &p.Pipelines[2]
			pl.Constants = []Constant{U32(3, 1), U32(1, 2)}
			pl.Key = CacheKey(pl.Kernel, pl.Constants)
		}, `pipeline 2 "gemv_q8_0": constant 1 follows constant 3: indices must ascend`},
		{"a bool constant of 2", func(p *Plan) {
			pl := &p.Pipelines[3]
			pl.Constants[0].Value = 2
			pl.Key = CacheKey(pl.Kernel, pl.Constants)
		}, `pipeline 3 "rope_kv_store_f16": constant 0: bool value 2`},
		// Header and model.
		{"a target of no kind", func(p *Plan) { p.Header.Target.Kind = "tpu" },
			`header.target.kind: "tpu" is neither gpu nor cpu`},
		{"a zero chain chunk", func(p *Plan) { p.Header.Target.Tuning.ChainChunk = 0 },
			"header.target.tuning.chain_chunk: 0 is outside [1, 4096]"},
		{"KV heads that do not divide the heads", func(p *Plan) { p.Model.HParams.KVHeads = 3 },
			"hparams.kv_heads: 3 does not divide heads (4)"},
		{"a NaN epsilon", func(p *Plan) { p.Model.HParams.NormEps = float32(math.NaN()) },
			"hparams.norm_eps: NaN is not a finite non-negative number"},
		{"a sliding pattern of the wrong length", func(p *Plan) { p.Model.HParams.SlidingLayers = []bool{true} },
			"hparams.sliding_layers: 1 entries for 2 layers"},
		{"more tokens than vocabulary rows", func(p *Plan) { p.Model.HParams.Vocab = 31 },
			"tokenizer.tokens: 32 tokens, more than the vocabulary's 31 rows"},
		{"a special id outside the vocabulary", func(p *Plan) { p.Model.Tokenizer.EOS = 32 },
			"tokenizer.eos: id 32 is outside the vocabulary (32 tokens)"},
		{"scores not one per token", func(p *Plan) { p.Model.Tokenizer.Scores = p.Model.Tokenizer.Scores[:3] },
			"tokenizer.scores: 3 scores for 32 tokens"},
		{"an EOG id outside the vocabulary", func(p *Plan) { p.Model.Tokenizer.EOG = []int32{5, -2} },
			"tokenizer.eog[1]: id -2 is outside the vocabulary (32 tokens)"},
	}
	// Problems in all, where the first has consequences.
	consequences := map[string]int{
		"a zero-size buffer":                    7, // every binding of it
		"a binding whose length overflows":      2, // and the seq patch that moves it
		"KV heads that do not divide the heads": 5, // each KV buffer's shape
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Example()
			tt.break_(p)
			err := p.Validate()
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate: %v, want ErrInvalid", err)
			}
			var ve *ValidationError
			errors.As(err, &ve)
			if len(ve.Problems) != max(consequences[tt.name], 1) || ve.Problems[0] != tt.want {
				t.Errorf("problems:\n  %s\nwant:\n  %s", strings.Join(ve.Problems, "\n  "), tt.want)
			}
		})
	}
}

func TestValidationCollectsAndCaps(t *testing.T) {
	p := Example()
	for i := range p.Buffers {
		p.Buffers[i].Name = "same"
	}
	var ve *ValidationError
	if !errors.As(p.Validate(), &ve) {
		t.Fatal("no ValidationError")
	}
	if len(ve.Problems) != maxProblems || ve.More == 0 {
		t.Fatalf("%d problems and %d more; want %d listed and the rest counted", len(ve.Problems), ve.More, maxProblems)
	}
	msg := ve.Error()
	if !strings.HasPrefix(msg, "plan: invalid (") || !strings.HasSuffix(msg, "more") {
		t.Errorf("message: %s", msg)
	}
}

func TestDecodeValidates(t *testing.T) {
	p := Example()
	p.Programs[0].Commands[4].Pipeline = 99
	_, err := Decode("m.plan", Encode(p))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
	if want := "plan: m.plan is invalid: decode[4] L0.attn.flash: pipeline 99 of 14"; err.Error() != want {
		t.Errorf("message:\n got %s\nwant %s", err, want)
	}
}

// TestAllocationIsCapped: a plan that would make a runtime allocate more
// than the limits allow (a KV cache times its sequence slots, or work
// buffers far beyond its model) is refused, naming the limit, before any
// allocator sees the size.
func TestAllocationIsCapped(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(p *Plan)
		want   string
	}{
		{"a KV cache of 2^37 bytes a slot, 4096 slots", func(p *Plan) {
			p.Header.Target.Tuning.MaxSeqs = MaxSeqs
			for i := range p.Buffers {
				if p.Buffers[i].Kind == BufKV {
					p.Buffers[i].Size = 1 << 37
					break
				}
			}
		}, "buffers: a KV cache of"},
		{"a scratch buffer of 2^37 bytes", func(p *Plan) {
			for i := range p.Buffers {
				if p.Buffers[i].Kind == BufScratch {
					p.Buffers[i].Size, p.Buffers[i].Shape = 1<<37, nil
					break
				}
			}
		}, "bytes of scratch, io, constant and derived buffers, more than the 4294967296"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Example()
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			tt.break_(p)
			err := p.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate: %v, want a ValidationError", err)
			}
			for _, pr := range ve.Problems {
				if strings.Contains(pr, tt.want) {
					return
				}
			}
			t.Errorf("problems:\n  %s\nwant one containing %q", strings.Join(ve.Problems, "\n  "), tt.want)
		})
	}
}
