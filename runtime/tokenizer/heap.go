package tokenizer

// bigramHeap is the merge queue both BPE and SentencePiece use: a binary
// heap of candidate merges, best first. byRank orders by merge rank
// (lowest first, BPE); otherwise by score (highest first, SentencePiece).
// Ties go to the leftmost pair, as in llama.cpp. The slice is reused across
// calls, so a tokenization allocates nothing once it has grown.
type bigramHeap struct {
	a      []bigram
	byRank bool
}

func (h *bigramHeap) less(i, j int) bool {
	x, y := &h.a[i], &h.a[j]
	if h.byRank {
		if x.rank != y.rank {
			return x.rank < y.rank
		}
	} else if x.score != y.score {
		return x.score > y.score
	}
	return x.left < y.left
}

func (h *bigramHeap) len() int { return len(h.a) }

func (h *bigramHeap) push(b bigram) {
	h.a = append(h.a, b)
	for i := len(h.a) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.a[i], h.a[p] = h.a[p], h.a[i]
		i = p
	}
}

func (h *bigramHeap) pop() bigram {
	top := h.a[0]
	n := len(h.a) - 1
	h.a[0] = h.a[n]
	h.a = h.a[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			break
		}
		h.a[i], h.a[m] = h.a[m], h.a[i]
		i = m
	}
	return top
}
