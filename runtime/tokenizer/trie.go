package tokenizer

import "sort"

// trie is a byte trie over a set of strings, flattened into arrays: the
// root's children are a direct table, every other node's children a sorted
// run of edges.
type trie struct {
	root  [256]int32 // child of the root per byte, 0 for none
	nodes []trieNode // nodes[0] is the root
	edges []trieEdge
}

type trieNode struct {
	first, n int32 // edges[first : first+n], sorted by byte
	value    int32 // the id of the string ending here, or -1
}

type trieEdge struct {
	b     byte
	child int32
}

// newTrie builds a trie of keys[i] → ids[i].
func newTrie(keys []string, ids []int32) *trie {
	type entry struct {
		key string
		id  int32
	}
	es := make([]entry, len(keys))
	for i := range keys {
		es[i] = entry{keys[i], ids[i]}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].key < es[j].key })
	t := &trie{nodes: []trieNode{{value: -1}}}
	// Build breadth-first over ranges of the sorted keys sharing a prefix.
	type span struct {
		node   int32
		depth  int
		lo, hi int
	}
	queue := []span{{0, 0, 0, len(es)}}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		lo := s.lo
		if lo < s.hi && len(es[lo].key) == s.depth {
			t.nodes[s.node].value = es[lo].id
			lo++
		}
		first := int32(len(t.edges))
		var kids []span
		for i := lo; i < s.hi; {
			b := es[i].key[s.depth]
			j := i
			for j < s.hi && es[j].key[s.depth] == b {
				j++
			}
			child := int32(len(t.nodes))
			t.nodes = append(t.nodes, trieNode{value: -1})
			t.edges = append(t.edges, trieEdge{b: b, child: child})
			if s.node == 0 {
				t.root[b] = child
			}
			kids = append(kids, span{child, s.depth + 1, i, j})
			i = j
		}
		t.nodes[s.node].first = first
		t.nodes[s.node].n = int32(len(t.edges)) - first
		queue = append(queue, kids...)
	}
	return t
}

// child returns the child of node along byte b, or 0.
func (t *trie) child(node int32, b byte) int32 {
	if node == 0 {
		return t.root[b]
	}
	nd := &t.nodes[node]
	es := t.edges[nd.first : nd.first+nd.n]
	lo, hi := 0, len(es)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if es[m].b < b {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(es) && es[lo].b == b {
		return es[lo].child
	}
	return 0
}

// longestPrefix returns the id and length of the longest key that is a
// prefix of s, or (-1, 0).
func (t *trie) longestPrefix(s string) (id int32, n int) {
	id = -1
	node := int32(0)
	for i := 0; i < len(s); i++ {
		node = t.child(node, s[i])
		if node == 0 {
			break
		}
		if v := t.nodes[node].value; v >= 0 {
			id, n = v, i+1
		}
	}
	return id, n
}
