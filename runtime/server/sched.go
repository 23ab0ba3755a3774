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
// slots, first come first served, each to the free slot whose own cache
// shares the longest prefix with its prompt (among equals, the one whose
// cache is shortest, so that a longer one stays for a conversation that
// may come back to it; then the lower slot); when another slot (busy or
// free, not taken by this step's earlier assignments as a destination)
// holds a longer prefix, the job starts from a copy of it. It does no I/O:
// the engine applies what it returns.
func schedule(waiting [][]int32, slots []slotState) []assignment {
	var out []assignment
	taken := make([]bool, len(slots))
	for j, p := range waiting {
		best, bestKeep := -1, -1
		for i, s := range slots {
			if s.busy || taken[i] {
				continue
			}
			k := commonPrefix(s.hist, p)
			if k > bestKeep || k == bestKeep && len(s.hist) < len(slots[best].hist) {
				best, bestKeep = i, k
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
