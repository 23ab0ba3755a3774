// bounds.h: how a kernel learns how far its buffers reach. MSL gives a
// kernel no buffer lengths, yet the Rows KV writes, the Rows prefill
// attention and gather_rows must leave alone a row whose sequence slot or
// source row lies past its buffer, as their CPU twins do (runtime/cpu:
// rope.go, attention.go, elementwise.go). So for these kernels the Metal
// backend sends, after the parameter struct in the same setBytes, one ulong
// per buffer slot of the kernel: the bytes from the binding's current
// offset to the end of its buffer (0 for an unbound slot). runtime/metal's
// boundsTail says which kernels get it; the parameter structs are all
// multiples of 16 bytes, so the ulongs are aligned.
#ifndef AKUNU_BOUNDS_H
#define AKUNU_BOUNDS_H

// bound_bytes is the byte length of buffer slot s as the host bound it,
// read from past the end of the parameter struct p.
template <typename P> inline ulong bound_bytes(constant P& p, uint s) {
    return ((constant ulong*)(&p + 1))[s];
}

// kv_slot_fits reports whether KV sequence slot seq (n_kv_heads·max_ctx
// rows of hd and hdv elements in the K and V caches, back to back) lies
// inside caches of k_bytes and v_bytes F16 bytes.
inline bool kv_slot_fits(uint seq, uint n_kv_heads, uint max_ctx, uint hd, uint hdv, ulong k_bytes, ulong v_bytes) {
    ulong rows = ulong(n_kv_heads) * max_ctx * (ulong(seq) + 1);
    return rows * hd <= k_bytes / 2 && rows * hdv <= v_bytes / 2;
}
#endif // AKUNU_BOUNDS_H
