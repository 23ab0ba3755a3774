// Package membw sums memory as fast as a core can read it: the loop behind
// runtime.ReadBandwidth, the roofline `akunu bench` and `make bench` hold a
// CPU decode to. On amd64 with AVX2 the words are summed 32 bytes a load,
// four loads a 128-byte step in flight, as the decode kernels read their
// weights; elsewhere, and for the tail, in Go with four independent chains.
// A probe slower than the engines it measures (a scalar loop on one core can
// be) would make every share of it read high.
package membw
