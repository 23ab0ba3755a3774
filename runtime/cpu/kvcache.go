package cpu

import (
	"math"

	"github.com/akunu-dev/akunu/kernels"
)

// kvType is the element type of the KV cache a KV write or an attention
// kernel works on: F16 (the default), or with the _kvq8_0 and _kvf32
// variants Q8_0 blocks or F32 (akunuc compile --kv-type; ADR 0021).
type kvType uint8

const (
	kvF16 kvType = iota
	kvQ8
	kvF32
)

func kvOf(v kernels.Variant) kvType {
	switch {
	case v&kernels.KVQ8 != 0:
		return kvQ8
	case v&kernels.KVF32 != 0:
		return kvF32
	}
	return kvF16
}

// rowBytes is the bytes of a cached row of n elements (n whole blocks for
// Q8_0: the compiler refuses other heads).
func (t kvType) rowBytes(n int) int {
	switch t {
	case kvQ8:
		return n / qk * 34
	case kvF32:
		return 4 * n
	}
	return 2 * n
}

// store writes x into the cached row dst: rounded to f16, copied, or
// quantized as ggml-cpu's quantize_row_q8_0 does when llama.cpp writes a
// q8_0 cache (quantizeQ8_0: d = f16(amax/127), q = rne(x·127/amax)); qs
// and d are scratch for one row.
func (t kvType) store(dst []byte, x []float32, qs []int8, d []float32) {
	switch t {
	case kvF16:
		f2hRow(u16s(dst)[:len(x)], x)
	case kvF32:
		copy(f32s(dst)[:len(x)], x)
	case kvQ8:
		nb := len(x) / qk
		qs, d = qs[:len(x)], d[:nb]
		quantizeQ8_0(x, qs, d, nil)
		dst = dst[:nb*34]
		for b := range nb {
			h := f2h(d[b]) // d is an f16 value: exact
			dst[b*34], dst[b*34+1] = byte(h), byte(h>>8)
			for i, q := range qs[b*qk : b*qk+qk] {
				dst[b*34+2+i] = byte(q)
			}
		}
	}
}

// The attention pieces for a cache that is not F16, one head's work over
// its n visible positions (portable forms; attnq8_amd64.go installs AVX2
// twins: scoresQ8 bit for bit, accQ8 within float32 rounding):
//
//   - scoresQ8: out[j] = scale·(k_j·q) for the Q8_0 key rows k_j (rb bytes
//     apart), q quantized to Q8_0 (qs, d): ggml's vec_dot_q8_0_q8_0, the
//     dispatched one-row dot; returns max_j out[j] (−inf for none).
//   - scoresF32: the same for F32 key rows and q as it is.
//   - accQ8: acc += Σ_j p[j]·v_j for the Q8_0 value rows v_j (len(acc)
//     elements each), each element widened to q·d first (ggml's
//     dequantize_row_q8_0, then ggml_vec_mad_f32).
//   - accF32: the same for F32 value rows.
//
// and two heads' over the same rows (GQA): scoresQ8x2 and accQ8x2 are
// scoresQ8 and accQ8 for each head, which the twins compute in one pass.
var (
	accQ8      = accQ8Go
	scoresQ8   = scoresQ8Go
	accQ8x2    = accQ8x2Each
	scoresQ8x2 = scoresQ8x2Each
)

func accQ8x2Each(acc0, acc1, p0, p1 []float32, v []byte) {
	accQ8(acc0, p0, v)
	accQ8(acc1, p1, v)
}

func scoresQ8x2Each(k []byte, rb int, qs0, qs1 []int8, d0, d1 []float32, scale float32, out0, out1 []float32) (float32, float32) {
	return scoresQ8(k, rb, qs0, d0, scale, out0), scoresQ8(k, rb, qs1, d1, scale, out1)
}

func scoresQ8Go(k []byte, rb int, qs []int8, d []float32, scale float32, out []float32) float32 {
	m := float32(math.Inf(-1))
	for j := range out {
		s := scale * dotQ8_0(k[j*rb:j*rb+rb], qs, d, nil)
		out[j] = s
		m = max(m, s)
	}
	return m
}

func scoresF32(k []float32, q []float32, scale float32, out []float32) float32 {
	hd := len(q)
	m := float32(math.Inf(-1))
	for j := range out {
		s := scale * dotF32(k[j*hd:j*hd+hd], q)
		out[j] = s
		m = max(m, s)
	}
	return m
}

func accQ8Go(acc, p []float32, v []byte) {
	nb := len(acc) / qk
	rb := nb * 34
	for j, pj := range p {
		row := v[j*rb : j*rb+rb]
		for b := range nb {
			d := f16tab[uint16(row[b*34])|uint16(row[b*34+1])<<8]
			a := acc[b*qk : b*qk+qk]
			for i, q := range row[b*34+2 : b*34+34] {
				a[i] += float32(float32(int8(q))*d) * pj
			}
		}
	}
}

func accF32(acc, p, v []float32) {
	hdv := len(acc)
	for j, pj := range p {
		row := v[j*hdv : j*hdv+hdv]
		for i, x := range row {
			acc[i] += x * pj
		}
	}
}
