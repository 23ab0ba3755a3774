#!/bin/sh
# Speculative decoding's scenarios (docs/runtime.md, "Speculative
# decoding"): akunu bench --spec times plain and speculative decode of the
# same text in one process, alternating them, and reports the speedup,
# the acceptance rate and the tokens a verify pass gave.
#
#   THREADS=16 [CHIP=cpu-avx512:16] scripts/bench-spec.sh   (make bench-spec runs it)
#
# Models: stories260K (a real model: its text is what n-gram lookup drafts
# from), the Qwen3-0.6B shape synthesized twice from one seed, Q8_0 (the
# target) and Q4_0 (its draft), and a copier of that shape (`akunuc synth
# --copier`, a llama whose greedy text copies its context: the copy task). Random weights make a synthetic model's
# greedy text a fixed point (one token repeated), which every drafter
# predicts: its n-gram figure is the verify pass's ceiling at full
# acceptance, not a copy task's; its draft-model figure is what the Q4_0
# draft's cost allows when the weights agree. Text that drafts badly: a
# draft whose every draft is rejected, and stories260K on text it does not
# repeat.
set -eu
THREADS=${THREADS:-0}
N=${N:-128}
REPS=${REPS:-3}
BIN=${BIN:-bin}
DIR=testdata/tmp/spec
SHARED=${SHARED:-../shared}
# The chip the plans are compiled for: auto, or a CPU profile where auto
# would pick a GPU this build cannot run (cpu-avx512:16 on the H100 host).
CHIP=${CHIP:-auto}
mkdir -p "$DIR"
for d in q8_0 q4_0; do
	test -f "$DIR/qwen3-$d.gguf" || "$BIN/akunuc" synth --arch qwen3 --dim 1024 --layers 28 --heads 16 --kv-heads 8 \
		--head-dim 128 --ffn 3072 --tied --dtype "$d" --seed 42 --vocab "$SHARED/vocab/ggml-vocab-qwen2.gguf" -o "$DIR/qwen3-$d.gguf"
	"$BIN/akunuc" compile "$DIR/qwen3-$d.gguf" --chip "$CHIP" --ctx 1024 -o "$DIR/qwen3-$d.plan"
done
# A draft that drafts badly: a small llama of the same vocabulary, whose
# fixed point is another token, so that every draft is rejected (a Qwen3
# of another seed settles on the target's token and agrees).
test -f "$DIR/llama-small.gguf" || "$BIN/akunuc" synth --arch llama --dim 256 --layers 2 --heads 4 --kv-heads 2 \
	--head-dim 64 --ffn 512 --dtype q8_0 --seed 7 --vocab "$SHARED/vocab/ggml-vocab-qwen2.gguf" -o "$DIR/llama-small.gguf"
"$BIN/akunuc" compile "$DIR/llama-small.gguf" --chip "$CHIP" --ctx 1024 -o "$DIR/llama-small.plan"
# The copy task: a copier of the 0.6B shape (Q8_0; an induction head in its
# first two layers, the other 26 pass the residual through, so its decode
# reads the shape's bytes) on a passage and a code edit that its prompts
# repeat.
test -f "$DIR/copier-q8_0.gguf" || "$BIN/akunuc" synth --arch llama --dim 1024 --layers 28 --heads 16 --kv-heads 8 \
	--head-dim 128 --ffn 3072 --dtype q8_0 --copier --seed 42 --vocab "$SHARED/vocab/ggml-vocab-qwen2.gguf" -o "$DIR/copier-q8_0.gguf"
"$BIN/akunuc" compile "$DIR/copier-q8_0.gguf" --chip "$CHIP" --ctx 1024 -o "$DIR/copier-q8_0.plan"
cp "$SHARED/models/stories260K.gguf" "$DIR/stories260K.gguf"
"$BIN/akunuc" compile "$DIR/stories260K.gguf" --chip "$CHIP" -o "$DIR/stories260K.plan"
# A copy-heavy prompt: a passage, then its first sentences again, which
# the model goes on retelling.
cat >"$DIR/copy.txt" <<'TXT'
Lily and Tom went to the park. They saw a big dog. The dog was happy and ran to them. Lily gave the dog a ball. Tom threw the ball and the dog ran after it.

Lily and Tom went to the park. They saw a big dog. The dog was happy
TXT
cat >"$DIR/passage.txt" <<'TXT'
The harbour master kept a ledger of every boat that came in after dark. On Tuesday a green trawler named Marigold arrived with a broken mast, and its captain asked for rope, two lanterns and a bag of oranges. The master wrote the order in blue ink, sent a boy to the chandler, and sat by the stove until the rain stopped.

The harbour master kept a ledger of every boat that came in after dark. On Tuesday a green trawler
TXT
cat >"$DIR/edit.txt" <<'TXT'
func sumPositive(xs []int) int {
	total := 0
	for _, x := range xs {
		if x > 0 {
			total += x
		}
	}
	return total
}

Rename the function to sumAbove and keep the rest:

func sumAbove(xs []int) int {
	total := 0
TXT
b() { echo "== $*"; "$BIN/akunu" bench --threads "$THREADS" -r "$REPS" "$@" | tail -3; echo; }
b "$DIR/stories260K.plan" -n 256 --spec ngram --prompt-file "$DIR/copy.txt"
b "$DIR/stories260K.plan" -n 256 --spec ngram --prompt "Zebra quietly seven umbrella"
b "$DIR/stories260K.plan" -n 256 --spec ngram --prompt-file "$DIR/copy.txt" --temp 1
b "$DIR/qwen3-q8_0.plan" -n "$N" --spec ngram
b "$DIR/copier-q8_0.plan" -n "$N" --spec ngram --prompt-file "$DIR/passage.txt"
b "$DIR/copier-q8_0.plan" -n "$N" --spec ngram --prompt-file "$DIR/edit.txt"
b "$DIR/qwen3-q8_0.plan" -n "$N" --spec draft --draft "$DIR/qwen3-q4_0.plan"
b "$DIR/qwen3-q8_0.plan" -n "$N" --spec draft --draft "$DIR/qwen3-q4_0.plan" --temp 1 --draft-max 4
b "$DIR/qwen3-q8_0.plan" -n "$N" --spec draft --draft "$DIR/llama-small.plan"
