package server

// slotState is what the scheduler knows of a slot: whether a request runs
// in it, and the tokens its KV sequence holds (its conversation so far,
// the last one possibly pending).
type slotState struct {
	busy bool
	hist []int32
}

// assignment puts waiting job Job into free slot Slot, starting from the
// first Keep tokens of slot From's history (From == Slot: the slot's own
// cache; another slot: a prefix copied from it). Keep is always shorter
// than the job's prompt, so at least one token is fed.
type assignment struct {
	Job, Slot, From, Keep int
}

// schedule admits waiting jobs (their prompts, in arrival order) to free
// slots, first come first served. A job goes to the free slot that loses
// least: the one whose cache it reuses most for the least it throws away
// (the largest prefix shared minus the rest of the cache dropped, so an
// unrelated request takes an empty slot rather than a conversation's
// whose first template tokens it happens to share; among equals the
// longer prefix, then the lower slot). When another slot (busy or free,
// not rewritten by this step's earlier assignments) holds a longer
// prefix, the job starts from a copy of it. It does no I/O: the engine
// applies what it returns.
func schedule(waiting [][]int32, slots []slotState) []assignment {
	var out []assignment
	taken := make([]bool, len(slots))
	for j, p := range waiting {
		best, bestKeep, bestScore := -1, -1, 0
		for i, s := range slots {
			if s.busy || taken[i] {
				continue
			}
			k := commonPrefix(s.hist, p)
			score := k - (len(s.hist) - k) // reused minus dropped
			if best < 0 || score > bestScore || score == bestScore && k > bestKeep {
				best, bestKeep, bestScore = i, k, score
			}
		}
		if best < 0 {
			break // no free slot: the rest wait, in order
		}
		from := best
		for i, s := range slots {
			if i == best || taken[i] && !s.busy {
				continue // a slot this step rewrites holds nothing to copy
			}
			if k := commonPrefix(s.hist, p); k > bestKeep {
				from, bestKeep = i, k
			}
		}
		taken[best] = true
		out = append(out, assignment{Job: j, Slot: best, From: from, Keep: min(bestKeep, len(p)-1)})
	}
	return out
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
