package membw

import "golang.org/x/sys/cpu"

var haveVector = cpu.X86.HasAVX2

// sumVector sums p, whose length is a multiple of 16 words, with AVX2.
func sumVector(p []uint64) uint64 {
	return sumAVX2(&p[0], len(p)/16)
}

// sumAVX2 sums steps 128-byte steps from p. In sum_amd64.s.
//
//go:noescape
func sumAVX2(p *uint64, steps int) uint64
