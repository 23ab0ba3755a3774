package runtime

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/device"
)

// ErrNotGenerative: the plan is an embedding model's (embedding programs
// only): it embeds, it does not generate.
var ErrNotGenerative = fmt.Errorf("an embedding model: %w", ErrUnsupportedPlan)

// generates fails for a plan with no decode program.
func (m *Model) generates() error {
	if m.decode == nil && len(m.embed) > 0 {
		return fmt.Errorf("runtime: %s is an embedding model; it embeds text (akunu embed), it does not generate: %w", m.Plan.Model.HParams.Arch, ErrNotGenerative)
	}
	return nil
}

// Embeds reports whether the plan has embedding programs (an encoder, or a
// decoder compiled with a pooling type).
func (m *Model) Embeds() bool { return len(m.embed) > 0 }

// EmbeddingDim is the length of the vectors Embed returns (0 when the plan
// has no embedding programs).
func (m *Model) EmbeddingDim() int {
	for _, b := range m.Plan.Buffers {
		if b.Kind == plans.BufIO && b.Role == "embeddings" && len(b.Shape) == 2 {
			return int(b.Shape[0])
		}
	}
	return 0
}

// MaxEmbedTokens is the most tokens one input may have: the largest
// embedding program's rows (an input is never split across replays: its
// attention and its pooling see all of it at once), within the context.
func (m *Model) MaxEmbedTokens() int {
	if len(m.embed) == 0 {
		return 0
	}
	return min(int(m.embed[len(m.embed)-1].p.Batch), m.Ctx())
}

// Embed computes one vector per input (token ids, as the tokenizer gives
// them with its special tokens): the model's last hidden states over the
// input's rows, pooled as the plan says and L2-normalized. Inputs are
// packed back to back into as few replays as the embedding programs and the
// free sequence slots allow (one slot per input in a replay; the slots are
// taken for the call and given back). The vectors are new memory.
func (m *Model) Embed(ctx context.Context, inputs [][]int32) ([][]float32, error) {
	if len(m.embed) == 0 {
		return nil, fmt.Errorf("runtime: the plan has no embedding program (compile an embedding model, or a decoder with --pooling): %w", ErrUnsupportedPlan)
	}
	most := m.MaxEmbedTokens()
	for i, in := range inputs {
		switch {
		case len(in) == 0:
			return nil, fmt.Errorf("runtime: input %d is empty", i)
		case len(in) > most:
			return nil, fmt.Errorf("runtime: input %d has %d tokens; the plan embeds at most %d in one input (its largest batch program and context)", i, len(in), most)
		}
		for _, t := range in {
			if t < 0 || int(t) >= m.vocab {
				return nil, fmt.Errorf("runtime: input %d: token %d outside the vocabulary of %d", i, t, m.vocab)
			}
		}
	}
	// The free sequence slots, taken for the call.
	var slots []int
	defer func() {
		for _, s := range slots {
			m.release(s)
		}
	}()
	limit := int(m.embed[len(m.embed)-1].p.OutRows)
	for len(slots) < min(limit, len(inputs)) {
		s, err := m.acquire()
		if err != nil {
			if len(slots) > 0 {
				break
			}
			return nil, err
		}
		slots = append(slots, s)
	}
	dim := m.EmbeddingDim()
	out := make([][]float32, len(inputs))
	for i := 0; i < len(inputs); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// As many inputs as fit the largest program's rows and the slots.
		j, rows := i, 0
		for j < len(inputs) && j-i < len(slots) && rows+len(inputs[j]) <= most {
			rows += len(inputs[j])
			j++
		}
		prog := m.embedBucket(rows)
		for int(prog.p.Outputs()) < j-i { // a smaller bucket may take fewer inputs
			j--
			rows -= len(inputs[j])
			prog = m.embedBucket(rows)
		}
		if err := m.replayEmbed(inputs[i:j], slots, rows, prog); err != nil {
			return nil, err
		}
		flat := make([]float32, (j-i)*dim)
		if err := m.be.Read(f32Bytes(flat), m.io.embeddings, 0); err != nil {
			return nil, fmt.Errorf("runtime: reading the embeddings: %w", err)
		}
		for k := range j - i {
			out[i+k] = flat[k*dim : (k+1)*dim : (k+1)*dim]
		}
		i = j
	}
	return out, nil
}

// embedBucket is the embedding program for n rows: the smallest that holds
// them.
func (m *Model) embedBucket(n int) *program {
	for _, b := range m.embed {
		if int(b.p.Batch) >= n {
			return b
		}
	}
	return m.embed[len(m.embed)-1]
}

// replayEmbed runs one replay of inputs packed back to back, input k in
// sequence slot slots[k] at positions 0, 1, ...
func (m *Model) replayEmbed(inputs [][]int32, slots []int, rows int, prog *program) error {
	// each writes f(input, position) for the rows, inputs back to back.
	each := func(dst device.Buffer, f func(k, pos int) uint32) error {
		st, r := m.stage[:4*rows], 0
		for k, in := range inputs {
			for pos := range in {
				binary.LittleEndian.PutUint32(st[4*r:], f(k, pos))
				r++
			}
		}
		return m.be.Write(dst, 0, st)
	}
	err := each(m.io.tokens, func(k, pos int) uint32 { return uint32(inputs[k][pos]) })
	if err == nil {
		err = each(m.io.pos, func(_, pos int) uint32 { return uint32(pos) })
	}
	if err == nil {
		err = each(m.io.seqs, func(k, _ int) uint32 { return uint32(slots[k]) })
	}
	if err == nil && m.io.seqLast.Valid() {
		err = each(m.io.seqLast, func(k, _ int) uint32 { return uint32(len(inputs[k]) - 1) })
	}
	if err == nil {
		start := 0
		st := m.stage[:8*len(inputs)]
		for k, in := range inputs {
			binary.LittleEndian.PutUint32(st[8*k:], uint32(start))
			binary.LittleEndian.PutUint32(st[8*k+4:], uint32(start+len(in)))
			start += len(in)
		}
		err = m.be.Write(m.io.poolRanges, 0, st)
	}
	if err != nil {
		return fmt.Errorf("runtime: %s: writing the rows: %w", prog.p.Name, err)
	}
	m.step[0] = plans.Step{Batch: uint32(rows), Out: uint32(len(inputs))}
	m.be.Encode(prog.h, m.step[:])
	m.be.Commit()
	if err := m.wait(); err != nil {
		return fmt.Errorf("runtime: %s: %w", prog.p.Name, err)
	}
	return nil
}

// Cosine is the cosine similarity of two embeddings (0 when either is
// zero): for Embed's vectors, which are unit length, their dot product.
func Cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range min(len(a), len(b)) {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}
