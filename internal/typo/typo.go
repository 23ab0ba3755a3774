// Package typo measures how far a name is from another, for the "did you
// mean" of error messages (spec keys, chip names, grammar rules).
package typo

// Distance is the Damerau–Levenshtein distance between a and b (edits
// of one byte, and swaps of two adjacent bytes), which counts the usual
// typos as one step: "rmsnrom" is one from "rmsnorm". It takes
// O(len(a)·len(b)) time; callers bound the lengths they compare.
func Distance(a, b string) int {
	m := len(b)
	prev2 := make([]int, m+1) // row i-2
	prev := make([]int, m+1)  // row i-1
	cur := make([]int, m+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= m; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[m]
}
