package membw

// Sum returns the wrapping sum of p's words. Every word is read, the tail
// after the last whole 128-byte step included.
func Sum(p []uint64) uint64 {
	var s uint64
	if n := len(p) &^ 15; n > 0 && haveVector {
		s = sumVector(p[:n])
		p = p[n:]
	}
	return s + sumGo(p)
}

// sumGo adds the words of p in four independent chains, so that the loads,
// not the adds, bound the loop.
func sumGo(p []uint64) uint64 {
	var a, b, c, d uint64
	for len(p) >= 4 {
		a += p[0]
		b += p[1]
		c += p[2]
		d += p[3]
		p = p[4:]
	}
	for _, v := range p {
		a += v
	}
	return a + b + c + d
}
