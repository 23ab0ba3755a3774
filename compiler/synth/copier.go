package synth

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// A copier (Options.Copier) is a model whose greedy text copies its
// context: at each position it predicts the token that followed an
// earlier occurrence of the last two tokens (an induction head, built by
// hand rather than trained). Speculative decoding's n-gram drafter
// predicts text that repeats its context; random weights never repeat
// anything but one token, and stories260K does not repeat a passage it is
// shown, so neither measures a copy task (issue 16). A copier of a real
// model's shape costs what that shape costs to decode and copies as a
// model that has learned to copy does.
//
// The residual stream holds a token's two codes (random unit vectors per
// token, from the seed): W, head_dim wide, which the output matrix reads,
// and T, head_dim/4 wide, which attention matches; C, a constant 1; P and
// Q, the match codes of the previous token and the one before it; and O,
// the wide code of the token to predict. Every other dimension, every
// feed-forward matrix and every layer after the second are zero, so those
// layers pass the residual through (their weights are still read: the
// decode costs the shape's bytes).
//
//   - Layer 0: heads 0 and 1 attend one and two positions back. Their
//     queries and keys come from C alone, in the first copierPairs rotary
//     pairs, each query turned back by one (two) positions' angle, so that
//     the rotated product Σ cos((n − m + 1)·θ_i) peaks at key n = m − 1
//     (m − 2). Their value is T; the output writes head 0's into P and
//     head 1's into Q.
//   - Layer 1, head 0, matches the bigram: its query is (T, P) at the
//     current position, its key (P, Q) at each earlier one, in the head's
//     upper half (with rope_base 1e12 those pairs turn by under 0.01 rad
//     over 4096 positions), so that a position right after an earlier
//     occurrence of the last two tokens scores twice what one after the
//     last token alone does. Its value is W there, the token that
//     followed the match; the output writes it into O.
//   - The output matrix reads O alone: logit t is W(t)·O.
//
// Where the last two tokens occurred several times before, the match
// splits among the occurrences and the copy takes one of their
// continuations (which one, the codes' noise decides): the text repeats
// its context with jumps, as a model that copies does. Tokens never seen
// together before give no match, and the prediction is whatever the
// codes' noise makes it.
const (
	copierPairs    = 12   // rotary pairs of layer 0's positional match
	copierRopeBase = 1e12 // the model's rope.freq_base
	copierPosScale = 30.0 // layer 0's score a pair, over √head_dim
	copierMatch    = 40.0 // layer 1's score of one token's match, over √head_dim
	copierLogit    = 1.0  // the output matrix's scale of O
)

// copier holds what the copier's tensors are made of.
type copier struct {
	dim, heads, kvHeads, hd int
	dm, do                  int       // match and wide code widths
	match, wide             []float32 // vocab × dm and vocab × do, unit rows
	theta                   []float64 // layer 0's pair angles a position
}

func newCopier(o Options, vocab int, seed uint64) *copier {
	c := &copier{dim: o.Dim, heads: o.Heads, kvHeads: o.KVHeads, hd: o.HeadDim, dm: o.HeadDim / 4, do: o.HeadDim}
	r := rand.New(rand.NewPCG(seed, 0xc0b1e7))
	codes := func(w int) []float32 {
		cs := make([]float32, vocab*w)
		for t := range vocab {
			row := cs[t*w : (t+1)*w]
			var n float64
			for i := range row {
				v := r.NormFloat64()
				row[i] = float32(v)
				n += v * v
			}
			inv := float32(1 / math.Sqrt(n))
			for i := range row {
				row[i] *= inv
			}
		}
		return cs
	}
	c.match, c.wide = codes(c.dm), codes(c.do)
	c.theta = make([]float64, copierPairs)
	for i := range c.theta {
		c.theta[i] = math.Pow(copierRopeBase, -2*float64(i)/float64(c.hd))
	}
	return c
}

// checkCopier says whether o can make a copier.
func checkCopier(o Options) error {
	need := 2*o.HeadDim + 3*(o.HeadDim/4) + 1
	switch {
	case o.Sparse:
		return fmt.Errorf("%w: a copier cannot be sparse (its weights are its point)", ErrOptions)
	case o.Tied:
		return fmt.Errorf("%w: a copier needs its own output matrix (not --tied)", ErrOptions)
	case o.Layers < 2 || o.Heads < 2:
		return fmt.Errorf("%w: a copier needs 2 layers and 2 heads or more", ErrOptions)
	case o.HeadDim < 64 || o.HeadDim%4 != 0:
		return fmt.Errorf("%w: a copier needs a head_dim of 64 or more, a multiple of 4 (got %d)", ErrOptions, o.HeadDim)
	case o.Dim < need:
		return fmt.Errorf("%w: a copier needs dim ≥ 2·head_dim + 3·head_dim/4 + 1 = %d (got %d)", ErrOptions, need, o.Dim)
	}
	return nil
}

// copierTensors are the tensors a copier gives values; the rest of a
// llama-like layer is zero. Any other tensor makes the architecture
// unsuitable (a bias, a head norm, a second norm).
var copierTensors = map[string]bool{
	"token_embd": true, "output": true, "output_norm": true, "attn_norm": true, "ffn_norm": true,
	"attn_q": true, "attn_k": true, "attn_v": true, "attn_output": true,
	"ffn_gate": true, "ffn_up": true, "ffn_down": true,
}

// Subspace offsets in the residual stream.
func (c *copier) w() int       { return 0 }
func (c *copier) t() int       { return c.do }
func (c *copier) one() int     { return c.do + c.dm }
func (c *copier) p() int       { return c.do + c.dm + 1 }
func (c *copier) q() int       { return c.do + 2*c.dm + 1 }
func (c *copier) o() int       { return c.do + 3*c.dm + 1 }
func (c *copier) kv(h int) int { return h / (c.heads / c.kvHeads) }

// rows fills vals with rows r0 .. r0+n of tensor t (row elements each).
func (c *copier) rows(t *Tensor, r0, n, row int, vals []float32) {
	clear(vals)
	// 1/rms of the residual at each norm: the subspaces present there
	// have unit norm each (W, T and C at layer 0; P and Q too at layer 1;
	// O too at the output), and the norm weights are 1.
	s := []float32{float32(math.Sqrt(float64(c.dim) / 3)), float32(math.Sqrt(float64(c.dim) / 5))}
	sq := math.Sqrt(float64(c.hd))
	a := float32(math.Sqrt(copierPosScale * sq)) // layer 0's query and key amplitude
	l := float32(math.Sqrt(copierMatch * sq))    // layer 1's
	half := c.hd / 2
	for i := range n {
		r := r0 + i
		v := vals[i*row : (i+1)*row]
		switch t.Logical {
		case "token_embd":
			copy(v[c.w():], c.wide[r*c.do:(r+1)*c.do])
			copy(v[c.t():], c.match[r*c.dm:(r+1)*c.dm])
			v[c.one()] = 1
		case "output":
			for j, x := range c.wide[r*c.do : (r+1)*c.do] {
				v[c.o()+j] = copierLogit * x
			}
		case "output_norm", "attn_norm", "ffn_norm":
			for j := range v {
				v[j] = 1
			}
		}
		if t.Layer < 0 || t.Layer > 1 {
			continue
		}
		sc := s[t.Layer]
		head, d := r/c.hd, r%c.hd // a q, k or v row: its head and dimension
		switch {
		case t.Logical == "attn_q" && t.Layer == 0 && head < 2 && d < 2*copierPairs:
			back := float64(head + 1) // positions back
			th := back * c.theta[d/2]
			if d%2 == 0 {
				v[c.one()] = a * float32(math.Cos(th)) / sc
			} else {
				v[c.one()] = -a * float32(math.Sin(th)) / sc
			}
		case t.Logical == "attn_k" && t.Layer == 0 && (head == c.kv(0) || head == c.kv(1)) && d < 2*copierPairs && d%2 == 0:
			v[c.one()] = a / sc
		case t.Logical == "attn_v" && t.Layer == 0 && (head == c.kv(0) || head == c.kv(1)) && d < c.dm:
			v[c.t()+d] = 1 / sc
		case t.Logical == "attn_output" && t.Layer == 0 && r >= c.p() && r < c.q()+c.dm:
			if r < c.q() {
				v[r-c.p()] = 1 // head 0's value dims into P
			} else {
				v[c.hd+r-c.q()] = 1 // head 1's into Q
			}
		case t.Logical == "attn_q" && t.Layer == 1 && head == 0:
			switch {
			case d >= half && d < half+c.dm:
				v[c.t()+d-half] = l / sc
			case d >= half+c.dm && d < half+2*c.dm:
				v[c.p()+d-half-c.dm] = l / sc
			}
		case t.Logical == "attn_k" && t.Layer == 1 && head == c.kv(0):
			switch {
			case d >= half && d < half+c.dm:
				v[c.p()+d-half] = l / sc
			case d >= half+c.dm && d < half+2*c.dm:
				v[c.q()+d-half-c.dm] = l / sc
			}
		case t.Logical == "attn_v" && t.Layer == 1 && head == c.kv(0) && d < c.do:
			v[c.w()+d] = 1 / sc
		case t.Logical == "attn_output" && t.Layer == 1 && r >= c.o() && r < c.o()+c.do:
			v[r-c.o()] = 1
		}
	}
}
