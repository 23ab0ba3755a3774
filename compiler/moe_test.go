package compiler

import (
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/synth"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/specs"
)

// A decode step of a MoE model reads its k routed experts' matrices, not
// the stacked tensors: each matmul_id command's bytes (what inspect's bytes
// per token and roofline add up) are k/E of its tensor plus its small
// inputs; a batch of many rows reads every expert once, not once per row.
func TestMoEDecodeReadsTheActiveExperts(t *testing.T) {
	const experts, used = 8, 2
	path := synthModel(t, t.TempDir(), synth.Options{Arch: "qwen3moe", Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 512,
		DType: dtype.Q4_0, Tied: true, Seed: 7,
		Set: map[string]specs.Value{"expert_count": specs.IntValue(experts), "expert_used": specs.IntValue(used), "expert_ffn": specs.IntValue(128)}})
	for _, c := range []string{"m4-max", "cpu-avx2:8"} {
		p := compile(t, path, Options{Chip: chip(t, c), Ctx: 256})
		size := map[string]uint64{}
		for _, b := range p.Buffers {
			if b.Kind == plans.BufWeight {
				size[b.Name] = b.Size
			}
		}
		seen := 0
		for _, pr := range p.Programs {
			for _, cmd := range pr.Commands {
				if !strings.Contains(p.Pipelines[cmd.Pipeline].Kernel, "_id_") {
					continue
				}
				w := size[p.Buffers[cmd.Bindings[0].Buffer].Name]
				active := w / experts * used
				switch {
				case pr.Kind == plans.KindDecode && (cmd.BytesRead < active || cmd.BytesRead > active+active/4):
					t.Errorf("%s %s %s: reads %d bytes; its %d of %d experts are %d (the tensor %d)", c, pr.Name, cmd.Label, cmd.BytesRead, used, experts, active, w)
				case pr.Kind == plans.KindBatch && pr.Batch >= 128 && (cmd.BytesRead < w || cmd.BytesRead >= uint64(pr.Batch)*active):
					t.Errorf("%s %s %s: reads %d bytes; a batch of %d rows reads each of the %d experts once (%d), not an expert per row and slot (%d)",
						c, pr.Name, cmd.Label, cmd.BytesRead, pr.Batch, experts, w, uint64(pr.Batch)*active)
				}
				seen++
			}
		}
		if seen == 0 {
			t.Fatalf("%s: no expert-indexed command", c)
		}
	}
}
