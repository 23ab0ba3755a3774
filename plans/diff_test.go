package plans

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func diffLines(a, b *Plan) []string {
	var out []string
	for _, d := range Diff(a, b) {
		out = append(out, d.String())
	}
	return out
}

func TestDiffOfEqualPlansIsEmpty(t *testing.T) {
	if ds := Diff(Example(), Example()); len(ds) != 0 {
		t.Fatalf("equal plans differ: %v", ds)
	}
	var b bytes.Buffer
	if err := WriteDiff(&b, nil); err != nil || b.Len() != 0 {
		t.Fatalf("WriteDiff of nothing wrote %q", b.String())
	}
}

// decodeCmd returns decode's command with the label.
func decodeCmd(p *Plan, label string) *Command {
	pr := p.Program(ProgDecode)
	for i := range pr.Commands {
		if pr.Commands[i].Label == label {
			return &pr.Commands[i]
		}
	}
	panic("no command " + label)
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *Plan)
		want   []string
	}{
		{"a tuning value", func(p *Plan) { p.Header.Target.Tuning.ChainChunk = 8 },
			[]string{"header.target.tuning.chain_chunk: 4 → 8"}},
		{"a tuning extra added", func(p *Plan) { p.Header.Target.Tuning.Extra["new"] = "1" },
			[]string{"header.target.tuning.extra.new: added 1"}},
		{"the target", func(p *Plan) { p.Header.Target.Chip = "m4-max-40"; p.Header.Target.GPUCores = 40 },
			[]string{"header.target.chip: example-gpu-8 → m4-max-40", "header.target.gpu_cores: 8 → 40"}},
		{"a kernel", func(p *Plan) {
			decodeCmd(p, "L1.ffn.down").Pipeline = p.AddPipeline("gemv_q8_0_l", U32(0, 128))
		}, []string{
			"pipeline gemv_q8_0_l|0:u32=128: added gemv_q8_0_l",
			"decode L1.ffn.down kernel: gemv_q8_0 → gemv_q8_0_l",
		}},
		{"a threadgroup size", func(p *Plan) { decodeCmd(p, "L0.attn.flash").Threadgroup[0] = 256 },
			[]string{"decode L0.attn.flash threadgroup: 128 1 1 → 256 1 1"}},
		{"a grid and dispatch mode", func(p *Plan) {
			c := decodeCmd(p, "L0.attn.flash")
			c.Grid[0], c.DispatchThreads = 512, true
		}, []string{"decode L0.attn.flash grid: 4 1 1 threadgroups → 512 1 1 threads"}},
		{"a buffer size", func(p *Plan) {
			i, _ := p.BufferIndex("act.gate_up")
			p.Buffers[i].Size *= 2
		}, []string{"buffer act.gate_up size: 8192 → 16384"}},
		{"a buffer added at the front shifts indices but nothing else", func(p *Plan) {
			p.Buffers = append([]Buffer{{Name: "new", Kind: BufScratch, Size: 4}}, p.Buffers...)
			for i := range p.Buffers {
				for j := range p.Buffers[i].Sources {
					p.Buffers[i].Sources[j]++
				}
			}
			for i := range p.Programs {
				for j := range p.Programs[i].Commands {
					for k := range p.Programs[i].Commands[j].Bindings {
						p.Programs[i].Commands[j].Bindings[k].Buffer++
					}
				}
			}
		}, []string{"buffer new: added scratch 4 B"}},
		{"a command added", func(p *Plan) {
			pr := p.Program(ProgDecode)
			c := *decodeCmd(p, "L0.ffn.act")
			c.Label = "L0.ffn.extra"
			pr.Commands = slices.Insert(pr.Commands, 10, c)
		}, []string{
			"decode commands: 22 → 23",
			"decode bytes read: 122312 → 123336",
			"decode L0.ffn.extra: added 1 command silu_mul_f32",
		}},
		{"a command removed", func(p *Plan) {
			pr := p.Program(ProgDecode)
			pr.Commands = slices.Delete(pr.Commands, 0, 1)
		}, []string{"decode commands: 22 → 21", "decode bytes read: 122312 → 122240", "decode embed: removed 1 command embed_q8_0"}},
		{"a fused command split in three", func(p *Plan) {
			pr := p.Program(ProgDecode)
			for i := range pr.Commands {
				if pr.Commands[i].Label == "L3.attn.qkv" || pr.Commands[i].Label == "L1.attn.qkv" {
					c := pr.Commands[i]
					c.Rule = ""
					pr.Commands = slices.Insert(pr.Commands, i, c, c)
					break
				}
			}
		}, []string{"decode commands: 22 → 24", "decode bytes read: 122312 → 140232",
			"decode L1.attn.qkv: 1 command gemv_q8_0 → 3 commands gemv_q8_0, gemv_q8_0, gemv_q8_0"}},
		{"commands reordered", func(p *Plan) {
			pr := p.Program(ProgDecode)
			pr.Commands[1], pr.Commands[2] = pr.Commands[2], pr.Commands[1]
		}, []string{"decode order: L0.attn_norm before L0.attn.qkv → L0.attn.qkv before L0.attn_norm"}},
		{"a patch and parameters", func(p *Plan) {
			c := decodeCmd(p, "L0.attn.rope_kv")
			c.Patches[0].Stride = 2
			c.Params[8] = 0x20
		}, []string{
			"decode L0.attn.rope_kv params 4: 00000000 01000000 10000000 80000000 → 00000000 01000000 20000000 80000000",
			"decode L0.attn.rope_kv patch 0: position: param [0,4) = 0 + 1×pos → position: param [0,4) = 0 + 2×pos",
		}},
		{"a program removed", func(p *Plan) { p.Programs = p.Programs[:2] },
			[]string{"program batch.8: removed (22 commands)"}},
		{"the vocabulary", func(p *Plan) { p.Model.Tokenizer.Tokens[5] = "x" },
			[]string{"model.tokenizer.tokens: <32 items, sha256 42d44278…> → <32 items, sha256 d9612ed7…>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Example()
			tt.change(b)
			got := diffLines(Example(), b)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Diff:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

func TestDiffIsSymmetric(t *testing.T) {
	b := Example()
	b.Programs = b.Programs[:1]
	b.Header.Target.Tuning.ChainChunk = 16
	fwd, back := Diff(Example(), b), Diff(b, Example())
	if len(fwd) != len(back) {
		t.Fatalf("%d differences one way, %d the other", len(fwd), len(back))
	}
	for i := range fwd {
		f, r := fwd[i], back[i]
		if f.Path != r.Path || f.Old != r.New || f.New != r.Old {
			t.Errorf("%s is not the reverse of %s", f, r)
		}
	}
}
