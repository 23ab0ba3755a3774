package grammar

import (
	"bytes"
	"errors"
	"slices"

	"github.com/akunu-dev/akunu/runtime/tokenizer"
)

// Vocab is a vocabulary's token bytes as a trie laid out in preorder, so
// that the tokens a state allows are found in one pass that skips every
// subtree whose prefix the grammar refuses.
type Vocab struct {
	n     int     // tokens
	b     []byte  // per node: the byte that leads to it
	depth []int32 // per node: its depth (1 for the root's children)
	end   []int32 // per node: the index past its subtree
	tok0  []int32 // per node: its tokens are toks[tok0[i]:tok0[i+1]]
	toks  []int32
	maxD  int
	eog   []int32
	bytes [][]byte // per token (nil: never allowed)
	words int      // uint32 words of a mask
}

// NewVocab builds the trie of the tokens' bytes (pieces[t] for token t;
// empty: a token no grammar may produce) and records the end-of-generation
// tokens, allowed exactly where the grammar may end.
func NewVocab(pieces [][]byte, eog []int32) *Vocab {
	v := &Vocab{n: len(pieces), words: (len(pieces) + 31) / 32, bytes: pieces}
	for _, t := range eog {
		if t >= 0 && int(t) < len(pieces) {
			v.eog = append(v.eog, t)
		}
	}
	ids := make([]int32, 0, len(pieces))
	for t, p := range pieces {
		if len(p) > 0 && !slices.Contains(v.eog, int32(t)) {
			ids = append(ids, int32(t))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if c := bytes.Compare(pieces[a], pieces[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	// In sorted order a token's node is always the last node made (a
	// token is never a proper prefix of the one before it), so the
	// tokens come grouped by node, in node order.
	var prev []byte
	var node []int32 // per entry of toks: its node
	for i, t := range ids {
		p := pieces[t]
		l := 0
		for l < len(prev) && l < len(p) && prev[l] == p[l] {
			l++
		}
		if i == 0 || l < len(p) || len(p) != len(prev) {
			for d := l; d < len(p); d++ {
				v.b = append(v.b, p[d])
				v.depth = append(v.depth, int32(d+1))
			}
		}
		v.toks = append(v.toks, t)
		node = append(node, int32(len(v.b)-1))
		v.maxD = max(v.maxD, len(p))
		prev = p
	}
	n := len(v.b)
	v.tok0 = make([]int32, n+1)
	j := 0
	for i := 0; i <= n; i++ {
		for j < len(node) && int(node[j]) < i {
			j++
		}
		v.tok0[i] = int32(j)
	}
	v.end = make([]int32, n)
	var stack []int32
	for i := 0; i < n; i++ {
		for len(stack) > 0 && v.depth[stack[len(stack)-1]] >= v.depth[i] {
			v.end[stack[len(stack)-1]] = int32(i)
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, int32(i))
	}
	for _, s := range stack {
		v.end[s] = int32(n)
	}
	return v
}

// TokenizerVocab is the Vocab of tk's tokens as a grammar matches them,
// over n token ids (a plan's vocabulary, which may hold more ids than the
// tokenizer names): each token's decoded bytes; control tokens have none,
// so no grammar produces them; end-of-generation tokens are allowed where
// the grammar may end.
func TokenizerVocab(tk *tokenizer.Tokenizer, n int) *Vocab {
	pieces := make([][]byte, n)
	var eog []int32
	for i := range min(n, tk.NumTokens()) {
		id := int32(i)
		if tk.IsEOG(id) {
			eog = append(eog, id)
		}
		if !tk.IsControl(id) {
			pieces[i] = []byte(tk.TokenToPiece(id, false))
		}
	}
	return NewVocab(pieces, eog)
}

// Len is the number of tokens.
func (v *Vocab) Len() int { return v.n }

// Words is the length in uint32 words of a mask over the vocabulary.
func (v *Vocab) Words() int { return v.words }

// ErrStuck is wrapped when no token can continue the output and the
// grammar may not end: the grammar and the vocabulary leave no way on.
var ErrStuck = errors.New("grammar: no token can continue the output")
