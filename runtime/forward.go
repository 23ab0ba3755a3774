package runtime

import (
	"context"
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/device"
)

// Batch is the rows of one forward pass, as flat arrays, one entry a row
// (llama.cpp's llama_batch): the token, its position, the sequence slot it
// belongs to, and whether its logits and argmax are wanted. Prefill (rows
// of one sequence), a decode step of many sequences (a row each) and a
// speculative verify pass (k+1 rows of one sequence, every row out) are
// the same call with other rows.
type Batch struct {
	Tokens []int32
	Pos    []int32
	Seq    []int32
	Out    []bool
	// ReadLogits reads the output rows' logits to the host (Model.Logits);
	// without it only their argmax is read.
	ReadLogits bool
}

// Add appends a row.
func (b *Batch) Add(tok, pos, seq int32, out bool) {
	b.Tokens, b.Pos, b.Seq, b.Out = append(b.Tokens, tok), append(b.Pos, pos), append(b.Seq, seq), append(b.Out, out)
}

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() {
	b.Tokens, b.Pos, b.Seq, b.Out, b.ReadLogits = b.Tokens[:0], b.Pos[:0], b.Seq[:0], b.Out[:0], false
}

// Len is the number of rows.
func (b *Batch) Len() int { return len(b.Tokens) }

// outputs are the host copies of the last Forward's outputs, in the order
// of the rows that asked for them.
type outputs struct {
	max    int // the most outputs one Forward may ask for
	n      int
	ids    []int32
	logits []float32 // n rows of vocab, when read
	read   bool
}

func (o *outputs) init(m *Model) {
	o.max = 1
	for _, b := range m.batch {
		o.max = max(o.max, int(b.p.Outputs()))
	}
	o.ids = make([]int32, o.max)
	o.logits = make([]float32, o.max*m.vocab)
}

// MaxOutputs is the most rows of one Forward that may produce outputs.
func (m *Model) MaxOutputs() int { return m.out.max }

// Outputs is the number of outputs of the last Forward.
func (m *Model) Outputs() int { return m.out.n }

// OutputToken is output j's argmax (the greedy next token after its row).
func (m *Model) OutputToken(j int) int32 { return m.out.ids[j] }

// OutputLogits is output j's logits, when the last Forward read them
// (Batch.ReadLogits): the engine's host copy, overwritten by the next.
func (m *Model) OutputLogits(j int) []float32 {
	if !m.out.read {
		return nil
	}
	return m.out.logits[j*m.vocab : (j+1)*m.vocab]
}

// Forward runs b's rows through the model. Every sequence's rows must
// continue it: the first row of sequence s is at position SeqLen(s), the
// next at SeqLen(s)+1, and so on (Rewind first to overwrite); attention
// reads each row's own sequence, its earlier rows of this batch included.
// Afterwards SeqLen(s) counts the rows fed, and the rows with Out set have
// their outputs (Outputs, OutputToken, OutputLogits) in row order, at most
// MaxOutputs of them. Rows go through the smallest batch program that holds
// them, in chunks if they are more than the largest. It does not allocate.
func (m *Model) Forward(ctx context.Context, b *Batch) error {
	n := len(b.Tokens)
	if len(b.Pos) != n || len(b.Seq) != n || len(b.Out) != n {
		return fmt.Errorf("runtime: a batch of %d tokens, %d positions, %d sequences and %d output flags", n, len(b.Pos), len(b.Seq), len(b.Out))
	}
	if err := m.generates(); err != nil {
		return err
	}
	if err := m.checkRows(b); err != nil {
		return err
	}
	m.out.n, m.out.read = 0, b.ReadLogits
	if len(m.batch) == 0 {
		return m.forwardPrefill(ctx, b)
	}
	for i := 0; i < n; {
		if err := ctx.Err(); err != nil {
			return err
		}
		// The rows of one replay: as many as the largest program holds,
		// then fewer while their outputs exceed what it produces.
		j := min(n, i+m.maxBatch)
		if s := m.splitRows; s > 0 && j-i > s && j-i <= 2*s {
			j = i + s // two replays of the fast small programs, not one of the tiled (splitRows)
		}
		if m.asDecode(b, i, j) {
			// One row with its output (a server's lone sequence, a draft
			// model catching up), or on a GPU a few sequences' next
			// tokens: the decode program's GEMVs, which a GPU runs at
			// several times the rate of the batch programs' GEMMs of 2
			// to 8 rows, and plain decode's very logits.
			for r := i; r < j; r++ {
				if err := m.replayOne(b, r); err != nil {
					return err
				}
			}
			i = j
			continue
		}
		prog := m.bucket(j - i)
		for outsIn(b.Out[i:j]) > int(prog.p.Outputs()) {
			j = i + max(1, (j-i)/2)
			prog = m.bucket(j - i)
		}
		if err := m.replayRows(b, i, j, prog); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// checkRows holds b to the KV cache: tokens in the vocabulary, sequences
// that exist, positions that continue each sequence inside the context,
// outputs within MaxOutputs.
func (m *Model) checkRows(b *Batch) error {
	next := m.kv.next
	for s := range m.kv.seqs {
		next[s] = int32(m.kv.len[s])
	}
	outs := 0
	for i, t := range b.Tokens {
		s, pos := b.Seq[i], b.Pos[i]
		switch {
		case t < 0 || int(t) >= m.vocab:
			return fmt.Errorf("runtime: row %d: token %d outside the vocabulary of %d", i, t, m.vocab)
		case s < 0 || int(s) >= m.kv.seqs:
			return fmt.Errorf("runtime: row %d: sequence %d; the KV cache has %d slots", i, s, m.kv.seqs)
		case pos != next[s]:
			return fmt.Errorf("runtime: row %d: position %d of sequence %d, which holds %d positions (rows continue their sequence; Rewind first)", i, pos, s, next[s])
		case int(pos) >= m.Ctx():
			return fmt.Errorf("runtime: row %d: position %d is past the plan's context of %d: %w", i, pos, m.Ctx(), ErrContextFull)
		}
		next[s]++
		if b.Out[i] {
			outs++
		}
	}
	if outs > m.out.max {
		if len(m.batch) == 0 {
			return fmt.Errorf("runtime: this plan (format 1) gives the logits of a batch's last row only; recompile it with this akunuc for batches: %w", ErrUnsupportedPlan)
		}
		return fmt.Errorf("runtime: a batch asks for %d outputs; a Forward gives at most %d (split it)", outs, m.out.max)
	}
	return nil
}

// asDecode reports whether rows [i, j) of b run as decode steps: at most
// decodeRows of them, each with its output and each its own sequence's
// (rows of one sequence, a prompt or a verify pass, read the weights once
// in a batch program).
func (m *Model) asDecode(b *Batch, i, j int) bool {
	if m.decode == nil || j-i > m.decodeRows {
		return false
	}
	for r := i; r < j; r++ {
		if !b.Out[r] {
			return false
		}
		for q := i; q < r; q++ {
			if b.Seq[q] == b.Seq[r] {
				return false
			}
		}
	}
	return true
}

func outsIn(out []bool) int {
	n := 0
	for _, o := range out {
		if o {
			n++
		}
	}
	return n
}

// bucket is the batch program for n rows: the smallest that holds them.
func (m *Model) bucket(n int) *program {
	for _, b := range m.batch {
		if int(b.p.Batch) >= n {
			return b
		}
	}
	return m.batch[len(m.batch)-1]
}

// writeRows writes n u32s (f(i) for row i) into buffer dst from offset 0,
// through the staging memory.
func (m *Model) writeRows(dst device.Buffer, n int, f func(i int) uint32) error {
	st := m.stage[:4*n]
	for i := range n {
		binary.LittleEndian.PutUint32(st[4*i:], f(i))
	}
	return m.be.Write(dst, 0, st)
}

// replayRows runs rows [i, j) of b through prog and collects their outputs.
func (m *Model) replayRows(b *Batch, i, j int, prog *program) error {
	n := j - i
	outs := 0
	for r := i; r < j; r++ {
		if b.Out[r] {
			outs++
		}
	}
	err := m.writeRows(m.io.tokens, n, func(r int) uint32 { return uint32(b.Tokens[i+r]) })
	if err == nil {
		err = m.writeRows(m.io.pos, n, func(r int) uint32 { return uint32(b.Pos[i+r]) })
	}
	if err == nil {
		err = m.writeRows(m.io.seqs, n, func(r int) uint32 { return uint32(b.Seq[i+r]) })
	}
	if err == nil && outs > 0 {
		k := 0
		err = m.writeRows(m.io.outRows, outs, func(int) uint32 {
			for !b.Out[i+k] {
				k++
			}
			k++
			return uint32(k - 1)
		})
	}
	if err != nil {
		return fmt.Errorf("runtime: %s: writing the rows: %w", prog.p.Name, err)
	}
	m.step[0] = plans.Step{Batch: uint32(n), Out: uint32(outs)}
	m.be.Encode(prog.h, m.step[:])
	m.be.Commit()
	if err := m.wait(); err != nil {
		return fmt.Errorf("runtime: %s at rows %d..%d: %w", prog.p.Name, i, j, err)
	}
	for r := i; r < j; r++ {
		m.kv.len[b.Seq[r]]++
	}
	return m.readOutputs(outs, m.io.argmax)
}

// replayOne runs row i of b through the decode program (token slot 0,
// its argmax into slot 1, its logits into io.logits) and appends its
// output.
func (m *Model) replayOne(b *Batch, i int) error {
	if err := m.writeToken(0, b.Tokens[i]); err != nil {
		return fmt.Errorf("runtime: %s: writing the row: %w", m.decode.p.Name, err)
	}
	m.step[0] = plans.Step{Pos: uint32(b.Pos[i]), Batch: 1, Seq: uint32(b.Seq[i])}
	if err := m.replay(m.decode); err != nil {
		return err
	}
	m.kv.len[b.Seq[i]]++
	st := m.stage[:4]
	if err := m.be.Read(st, m.io.tokens, 4); err != nil {
		return fmt.Errorf("runtime: reading the output: %w", err)
	}
	m.out.ids[m.out.n] = int32(u32At(st, 0))
	if m.out.read {
		dst := m.out.logits[m.out.n*m.vocab : (m.out.n+1)*m.vocab]
		if err := m.be.Read(f32Bytes(dst), m.io.logits, 0); err != nil {
			return fmt.Errorf("runtime: reading the logits: %w", err)
		}
	}
	m.out.n++
	return nil
}

// readOutputs appends the outs outputs of the last replay (their argmax in
// ids, their logits when the batch reads them) to the host copies.
func (m *Model) readOutputs(outs int, ids device.Buffer) error {
	if outs == 0 {
		return nil
	}
	st := m.stage[:4*outs]
	if err := m.be.Read(st, ids, 0); err != nil {
		return fmt.Errorf("runtime: reading the outputs: %w", err)
	}
	for k := range outs {
		m.out.ids[m.out.n+k] = int32(binary.LittleEndian.Uint32(st[4*k:]))
	}
	if m.out.read {
		dst := m.out.logits[m.out.n*m.vocab : (m.out.n+outs)*m.vocab]
		if err := m.be.Read(f32Bytes(dst), m.io.logits, 0); err != nil {
			return fmt.Errorf("runtime: reading the logits: %w", err)
		}
	}
	m.out.n += outs
	return nil
}

// f32Bytes views floats as bytes (for Read).
func f32Bytes(f []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
}

// u32At reads the little-endian uint32 at index i of b.
func u32At(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[4*i:]) }
