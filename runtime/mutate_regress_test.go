package runtime

import (
	"regexp"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/plans"
)

// cmdIndex strips a command's index from a mutation's name ("decode[6]
// L0.attn.attention" → "decode L0.attn.attention"), so that the table
// below survives the compiler adding a command.
var cmdIndex = regexp.MustCompile(`^([a-z0-9.]+)\[[0-9]+\]|^(buffer) [0-9]+`)

// TestDamagedPlansAreRefused: each edit that crashed the runtime before
// issue 18's validation (a SIGSEGV, a fatal out-of-memory or a panic, in
// the mutation harness's sweep of stories260K's CPU plan), or ran to other
// tokens, is refused at load with one line that names what is wrong.
func TestDamagedPlansAreRefused(t *testing.T) {
	loadFuzzPlan(t)
	byName := map[string]int{}
	for i, m := range fuzzPlan.ms {
		byName[cmdIndex.ReplaceAllString(m.name, "$1$2")] = i
	}
	p, err := plans.Decode("", fuzzPlan.base)
	if err != nil {
		t.Fatal(err)
	}
	want, err := runPlan(p, fuzzPlan.model)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		mutation, was, names string
	}{
		{"decode embed: param word 3 = 2^30", "index out of range", "n_tokens"},
		{"decode embed: binding 2 (slot 2): offset = size - 4", "slice bounds out of range", "binding out"},
		{"decode L0.attn.norm: param word 0 = 2^30", "fatal error: out of memory", "dim"},
		{"decode L0.attn.norm: param word 0 = +1", "slice bounds out of range", "dim"},
		{"decode L0.attn.norm: param word 1 = 2^24", "slice bounds out of range", "n_rows"},
		{"decode L0.attn.qkv: param word 1 = 0", "index out of range [-1]", "k is 0"},
		{"decode L0.attn.rope_kv: param word 1 = 2^30", "fatal error: out of memory", "n_tokens"},
		{"decode L0.attn.rope_kv: param word 4 = 2^30", "fatal error: out of memory", "head_dim"},
		{"decode L0.attn.rope_kv: param word 6 = 2^24", "fatal error: out of memory", "rope_dim"},
		{"decode L0.attn.attention: param word 2 = 0", "integer divide by zero", "head_dim is 0"},
		{"decode L0.attn.attention: param word 5 = 2^30", "fatal error: out of memory", "max_ctx"},
		{"decode L0.attn.attention: param word 7 = -1", "slice bounds out of range", "n_tokens"},
		{"batch.8 L0.attn.qkv: param word 0 = 1", "batch 6 above the 1 rows bound", "rows"},
		{"batch.8 L0.attn.output: patch 0 (batch_length): stride x2", "batch 18 above the 8 rows bound", "rows"},
		{"sampled sample: param word 0 = 1", "index out of range [1] with length 1", "vocab"},
		{"hparams.ctx = 2^24", "a panic at position 2048 (issue 18)", "max_ctx"},
		{"hparams.vocab x2", "index out of range [512] with length 512", "vocab"},
		// Writes to what commands may only read: refused before they reach
		// the read-only mapping.
		{"decode L0.attn.norm: binding 2 (slot 2): buffer = a weight", "SIGSEGV on the mapped file", "may only read"},
		{"decode logits: binding 2 (slot 2): buffer = a weight", "SIGSEGV on the mapped file", "may only read"},
		// Launches that differ from the kernel's geometry rule ran on the
		// CPU backend, which ignores grids; a GPU backend runs the grid the
		// plan says, past the buffers or with the wrong SIMD groups.
		{"decode L0.attn.norm: grid[0] x2", "ran: the CPU backend ignores grids", "grid [2 1 1], the rule gives [1 1 1]"},
		{"decode L0.attn.qkv: grid[0] / 2", "ran: the CPU backend ignores grids", "the rule gives"},
		{"decode L0.attn.qkv: grid[1] = 2^20", "ran: the CPU backend ignores grids", "the rule gives"},
		{"decode L0.attn.attention: threadgroup[0] x2", "ran: the CPU backend ignores threadgroups", "threadgroup [256 1 1], the rule gives [128 1 1]"},
		{"decode L0.attn.attention: threadgroup[1] x2", "ran: the CPU backend ignores threadgroups", "the rule gives"},
		{"batch.8 L0.attn.qkv: threadgroup[0] = 1", "ran: the CPU backend ignores threadgroups", "the rule gives"},
		{"decode L0.attn.norm: threadgroup memory 2^17", "ran: the CPU backend ignores threadgroup memory", "threadgroup memory"},
		// A weight that reads its neighbour's bytes ran, computing garbage.
		{`buffer "token_embd.weight": offset + 4`, "different tokens", "not inside tensor"},
	}
	for _, tc := range tests {
		t.Run(tc.mutation, func(t *testing.T) {
			i, ok := byName[tc.mutation]
			if !ok {
				t.Fatalf("no mutation %q in the harness's list", tc.mutation)
			}
			out, detail := tryMutation(fuzzPlan.base, fuzzPlan.model, fuzzPlan.ms, i, want)
			if out != outError {
				t.Fatalf("%s (%s); it was %q before issue 18", out, detail, tc.was)
			}
			if strings.Contains(detail, "\n") || !strings.Contains(detail, tc.names) {
				t.Fatalf("the error does not name %q in one line: %s", tc.names, detail)
			}
			t.Log(detail)
		})
	}
}
