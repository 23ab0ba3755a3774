// quants.h: weight block layouts and dequantization, shared by the GEMV,
// GEMM and embedding kernels. Layouts: docs/formats.md (GGML's blocks).
//
// Every weight type is read in chunks of 16 consecutive elements of a row:
// chunk c covers elements [16c, 16c+16). A chunk never straddles a block
// (blocks hold 32 or 256 elements) and within a K-quant block a chunk shares
// one scale, so dequantizing a chunk is a few loads and 16 multiply-adds.
// The unquantized types (F32, F16, BF16) have no blocks: their rows may end
// mid-chunk, and a chunk's elements at or beyond the row length k read as 0.
#ifndef AKUNU_QUANTS_H
#define AKUNU_QUANTS_H


// Weight type tags: template arguments of the typed kernels.
enum WType {
    W_F32 = 0, W_F16 = 1, W_BF16 = 2, W_Q4_0 = 3, W_Q4_1 = 4, W_Q5_0 = 5,
    W_Q5_1 = 6, W_Q8_0 = 7, W_Q4_K = 8, W_Q5_K = 9, W_Q6_K = 10,
    W_Q2_K = 11, W_Q3_K = 12, W_IQ4_NL = 13, W_IQ4_XS = 14,
    // Q6_K in the planar layout (docs/formats.md#planar): the GPU GEMVs'
    // tag only, not a file's type. Its "row" is the quant plane's row.
    W_Q6_K_PLANAR = 15,
};

// Elements per block and bytes per block (GGML's sizes).
template <int T> struct wtraits;
template <> struct wtraits<W_F32>  { enum { QK = 1,   BYTES = 4 }; };
template <> struct wtraits<W_F16>  { enum { QK = 1,   BYTES = 2 }; };
template <> struct wtraits<W_BF16> { enum { QK = 1,   BYTES = 2 }; };
template <> struct wtraits<W_Q4_0> { enum { QK = 32,  BYTES = 18 }; };  // d, qs[16]
template <> struct wtraits<W_Q4_1> { enum { QK = 32,  BYTES = 20 }; };  // d, m, qs[16]
template <> struct wtraits<W_Q5_0> { enum { QK = 32,  BYTES = 22 }; };  // d, qh[4], qs[16]
template <> struct wtraits<W_Q5_1> { enum { QK = 32,  BYTES = 24 }; };  // d, m, qh[4], qs[16]
template <> struct wtraits<W_Q8_0> { enum { QK = 32,  BYTES = 34 }; };  // d, qs[32]
template <> struct wtraits<W_Q4_K> { enum { QK = 256, BYTES = 144 }; }; // d, dmin, scales[12], qs[128]
template <> struct wtraits<W_Q5_K> { enum { QK = 256, BYTES = 176 }; }; // d, dmin, scales[12], qh[32], qs[128]
template <> struct wtraits<W_Q6_K> { enum { QK = 256, BYTES = 210 }; }; // ql[128], qh[64], scales[16], d
template <> struct wtraits<W_Q2_K> { enum { QK = 256, BYTES = 84 }; };  // scales[16], qs[64], d, dmin
template <> struct wtraits<W_Q3_K> { enum { QK = 256, BYTES = 110 }; }; // hmask[32], qs[64], scales[12], d
template <> struct wtraits<W_IQ4_NL> { enum { QK = 32, BYTES = 18 }; }; // d, qs[16]
template <> struct wtraits<W_IQ4_XS> { enum { QK = 256, BYTES = 136 }; }; // d, scales_h, scales_l[4], qs[128]
template <> struct wtraits<W_Q6_K_PLANAR> { enum { QK = 256, BYTES = 208 }; }; // ql[128], qh[64], scales[16]; d in the scale plane

// row_bytes is the size of a row of k elements of type T.
template <int T> inline ulong row_bytes(uint k) {
    return ulong(k / wtraits<T>::QK) * wtraits<T>::BYTES;
}

// Unaligned little-endian loads: blocks of 18, 22 or 34 bytes leave their
// fields at any alignment, so fields are read byte by byte.
inline float ld_half(device const uchar* p) {
    return float(as_type<half>(ushort(ushort(p[0]) | (ushort(p[1]) << 8))));
}
inline uint ld_u32(device const uchar* p) {
    return uint(p[0]) | (uint(p[1]) << 8) | (uint(p[2]) << 16) | (uint(p[3]) << 24);
}
inline float bf16_to_float(ushort b) { return as_type<float>(uint(b) << 16); }

// h_lo and h_hi are the halves in the low and high 16 bits of u; unpack16
// reads 16 halves from x, 16-byte aligned, as two 16-byte loads (the
// GEMVs' x, the small GEMM's rows of X).
inline float h_lo(uint u) { return float(as_type<half>(ushort(u & 0xFFFFu))); }
inline float h_hi(uint u) { return float(as_type<half>(ushort(u >> 16))); }
inline void unpack16(device const half* x, thread float* xc) {
    device const uint4* v = (device const uint4*)x;
    uint4 a = v[0], b = v[1];
    xc[0] = h_lo(a.x); xc[1] = h_hi(a.x); xc[2] = h_lo(a.y); xc[3] = h_hi(a.y);
    xc[4] = h_lo(a.z); xc[5] = h_hi(a.z); xc[6] = h_lo(a.w); xc[7] = h_hi(a.w);
    xc[8] = h_lo(b.x); xc[9] = h_hi(b.x); xc[10] = h_lo(b.y); xc[11] = h_hi(b.y);
    xc[12] = h_lo(b.z); xc[13] = h_hi(b.z); xc[14] = h_lo(b.w); xc[15] = h_hi(b.w);
}

// The K-quants' 6-bit scale and min of sub-block j (0..7) of the 12 packed
// bytes q (docs/formats.md#q4_k).
inline void scale_min_k4(uint j, device const uchar* q, thread float& sc, thread float& mn) {
    if (j < 4) {
        sc = float(q[j] & 63);
        mn = float(q[j + 4] & 63);
    } else {
        sc = float((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        mn = float((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// dequant16 writes elements [16c, 16c+16) of the row at row (k elements)
// to out, as float.
template <int T> void dequant16(device const uchar* row, uint c, uint k, thread float* out);

template <> inline void dequant16<W_F32>(device const uchar* row, uint c, uint k, thread float* out) {
    device const float* r = (device const float*)row;
    for (uint i = 0; i < 16; i++) { uint e = 16 * c + i; out[i] = e < k ? r[e] : 0.0f; }
}
template <> inline void dequant16<W_F16>(device const uchar* row, uint c, uint k, thread float* out) {
    device const half* r = (device const half*)row;
    for (uint i = 0; i < 16; i++) { uint e = 16 * c + i; out[i] = e < k ? float(r[e]) : 0.0f; }
}
template <> inline void dequant16<W_BF16>(device const uchar* row, uint c, uint k, thread float* out) {
    device const ushort* r = (device const ushort*)row;
    for (uint i = 0; i < 16; i++) { uint e = 16 * c + i; out[i] = e < k ? bf16_to_float(r[e]) : 0.0f; }
}
// Q4_0: element j < 16 is the low nibble of qs[j], j + 16 the high one; minus 8, times d.
template <> inline void dequant16<W_Q4_0>(device const uchar* row, uint c, uint, thread float* out) {
    device const uchar* b = row + (c / 2) * 18;
    float d = ld_half(b);
    uint sh = (c & 1) * 4;
    device const ushort* q = (device const ushort*)(b + 2); // blocks and rows are 18·n bytes: 2-aligned
    for (uint i = 0; i < 8; i++) {
        uint u = q[i];
        out[2 * i] = d * (small_float((u >> sh) & 0xF) - 8.0f);
        out[2 * i + 1] = d * (small_float((u >> (8 + sh)) & 0xF) - 8.0f);
    }
}
// Q4_1: q · d + m.
template <> inline void dequant16<W_Q4_1>(device const uchar* row, uint c, uint, thread float* out) {
    device const uchar* b = row + (c / 2) * 20;
    float d = ld_half(b), m = ld_half(b + 2);
    uint sh = (c & 1) * 4;
    for (uint i = 0; i < 16; i++) out[i] = d * float((b[4 + i] >> sh) & 0xF) + m;
}
// Q5_0: the fifth bit of element j is bit j of qh (little-endian uint32).
template <> inline void dequant16<W_Q5_0>(device const uchar* row, uint c, uint, thread float* out) {
    device const uchar* b = row + (c / 2) * 22;
    float d = ld_half(b);
    uint qh = ld_u32(b + 2);
    uint sh = (c & 1) * 4, hb = (c & 1) * 16;
    for (uint i = 0; i < 16; i++) {
        uint q = ((b[6 + i] >> sh) & 0xF) | (((qh >> (hb + i)) & 1) << 4);
        out[i] = d * (float(q) - 16.0f);
    }
}
template <> inline void dequant16<W_Q5_1>(device const uchar* row, uint c, uint, thread float* out) {
    device const uchar* b = row + (c / 2) * 24;
    float d = ld_half(b), m = ld_half(b + 2);
    uint qh = ld_u32(b + 4);
    uint sh = (c & 1) * 4, hb = (c & 1) * 16;
    for (uint i = 0; i < 16; i++) {
        uint q = ((b[8 + i] >> sh) & 0xF) | (((qh >> (hb + i)) & 1) << 4);
        out[i] = d * float(q) + m;
    }
}
template <> inline void dequant16<W_Q8_0>(device const uchar* row, uint c, uint, thread float* out) {
    device const uchar* b = row + (c / 2) * 34;
    float d = ld_half(b);
    device const char* qs = (device const char*)(b + 2) + (c & 1) * 16;
    for (uint i = 0; i < 16; i++) out[i] = d * (small_float(uint(uchar(qs[i])) ^ 0x80u) - 128.0f);
}
// Q4_K: 8 sub-blocks of 32, each with a 6-bit scale and min; sub-blocks 2j
// and 2j+1 share qs[32j, 32j+32), low and high nibbles.
template <> inline void dequant16<W_Q4_K>(device const uchar* row, uint c, uint, thread float* out) {
    device const uchar* b = row + (c / 16) * 144;
    uint cb = c % 16, sub = cb / 2;
    float d = ld_half(b), dmin = ld_half(b + 2), sc, mn;
    scale_min_k4(sub, b + 4, sc, mn);
    float d1 = d * sc, m1 = dmin * mn;
    device const ushort* qs = (device const ushort*)(b + 16 + 32 * (sub / 2) + 16 * (cb & 1)); // 144·n bytes: 2-aligned
    uint sh = (sub & 1) * 4;
    for (uint i = 0; i < 8; i++) {
        uint u = qs[i];
        out[2 * i] = d1 * small_float((u >> sh) & 0xF) - m1;
        out[2 * i + 1] = d1 * small_float((u >> (8 + sh)) & 0xF) - m1;
    }
}
// Q5_K: Q4_K's layout plus qh[32]: bit sub of qh[l] is the fifth bit of
// element l of sub-block sub.
template <> inline void dequant16<W_Q5_K>(device const uchar* row, uint c, uint, thread float* out) {
    device const uchar* b = row + (c / 16) * 176;
    uint cb = c % 16, sub = cb / 2, l0 = 16 * (cb & 1);
    float d = ld_half(b), dmin = ld_half(b + 2), sc, mn;
    scale_min_k4(sub, b + 4, sc, mn);
    float d1 = d * sc, m1 = dmin * mn;
    device const uchar* qh = b + 16;
    device const uchar* qs = b + 48 + 32 * (sub / 2);
    uint sh = (sub & 1) * 4;
    for (uint i = 0; i < 16; i++) {
        uint l = l0 + i;
        uint q = ((qs[l] >> sh) & 0xF) | (((qh[l] >> sub) & 1) << 4);
        out[i] = d1 * small_float(q) - m1;
    }
}
// Q6_K: two halves of 128; in half h, element 32g + l (g = 0..3, l < 32)
// takes its low 4 bits from ql[64h + l + 32(g&1)] (low nibble for g < 2,
// high for g ≥ 2) and its top 2 bits from qh[32h + l] >> 2g; minus 32, times
// d · scales[8h + 2g + l/16].
template <> inline void dequant16<W_Q6_K>(device const uchar* row, uint c, uint, thread float* out) {
    device const uchar* b = row + (c / 16) * 210;
    uint cb = c % 16, h = cb / 8, g = (cb % 8) / 2, l0 = 16 * (cb & 1);
    float d = ld_half(b + 208);
    float s = d * float(((device const char*)(b + 192))[8 * h + 2 * g + (l0 / 16)]);
    device const uchar* ql = b + 64 * h + 32 * (g & 1);
    device const uchar* qh = b + 128 + 32 * h;
    uint sh = (g / 2) * 4;
    for (uint i = 0; i < 16; i++) {
        uint l = l0 + i;
        uint q = ((ql[l] >> sh) & 0xF) | (((qh[l] >> (2 * g)) & 3) << 4);
        out[i] = s * (small_float(q) - 32.0f);
    }
}
// Q2_K: 16 sub-blocks of 16, chunk c of a block is sub-block c. Element
// 128n + 32g + l takes bits 2g..2g+1 of qs[32n + l]; scales[c] holds the
// sub-block's scale (low nibble) and minimum (high), times d and dmin.
template <> inline void dequant16<W_Q2_K>(device const uchar* row, uint c, uint, thread float* out) {
    device const uchar* b = row + (c / 16) * 84;
    uint cb = c % 16, n = cb / 8, g = (cb % 8) / 2, l0 = 16 * (cb & 1);
    uint sc = b[cb];
    float dl = ld_half(b + 80) * float(sc & 0xF), ml = ld_half(b + 82) * float(sc >> 4);
    device const uchar* qs = b + 16 + 32 * n + l0;
    for (uint i = 0; i < 16; i++) out[i] = dl * float((qs[i] >> (2 * g)) & 3) - ml;
}
// Q3_K: Q2_K's low bits; the third bit of element 128n + 32g + l is bit
// 4n + g of hmask[l], and a clear bit subtracts 4. The signed 6-bit scale
// of sub-block j: a nibble of scales[j % 8] (the high one for j ≥ 8) and two
// bits of scales[8 + j % 4] (at 2·(j / 4)), minus 32.
template <> inline void dequant16<W_Q3_K>(device const uchar* row, uint c, uint, thread float* out) {
    device const uchar* b = row + (c / 16) * 110;
    uint cb = c % 16, n = cb / 8, g = (cb % 8) / 2, l0 = 16 * (cb & 1);
    device const uchar* sc = b + 96;
    uint lo = cb < 8 ? (sc[cb] & 0xF) : (sc[cb - 8] >> 4);
    uint hi = (sc[8 + cb % 4] >> (2 * (cb / 4))) & 3;
    float dl = ld_half(b + 108) * float(int(lo | (hi << 4)) - 32);
    device const uchar* hm = b + l0;
    device const uchar* qs = b + 32 + 32 * n + l0;
    uint bit = 4 * n + g;
    for (uint i = 0; i < 16; i++) {
        int q = int((qs[i] >> (2 * g)) & 3) - (((hm[i] >> bit) & 1) ? 0 : 4);
        out[i] = dl * float(q);
    }
}
// IQ4_NL and IQ4_XS index a table of 16 signed values (GGML's
// kvalues_iq4nl), here packed four bytes to a word so that no
// address-space-qualified array is needed on either target.
inline float iq4_value(uint q) {
    uint w = q < 8 ? (q < 4 ? 0xBFAD9881u : 0xF6EADDCFu) : (q < 12 ? 0x26190D01u : 0x71594535u);
    int v = int((w >> (8 * (q & 3))) & 0xFF);
    return float(v < 128 ? v : v - 256);
}
// IQ4_NL: Q4_0's layout, the nibble an index into the table.
template <> inline void dequant16<W_IQ4_NL>(device const uchar* row, uint c, uint, thread float* out) {
    device const uchar* b = row + (c / 2) * 18;
    float d = ld_half(b);
    uint sh = (c & 1) * 4;
    for (uint i = 0; i < 16; i++) out[i] = d * iq4_value((b[2 + i] >> sh) & 0xF);
}
// IQ4_XS: 8 sub-blocks of 32 with a 6-bit scale each (a nibble of
// scales_l, two bits of scales_h; minus 32); within a sub-block IQ4_NL's
// layout.
template <> inline void dequant16<W_IQ4_XS>(device const uchar* row, uint c, uint, thread float* out) {
    device const uchar* b = row + (c / 16) * 136;
    uint cb = c % 16, ib = cb / 2;
    uint sh = uint(b[2]) | (uint(b[3]) << 8);
    uint ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) | (((sh >> (2 * ib)) & 3) << 4);
    float dl = ld_half(b) * float(int(ls) - 32);
    device const uchar* qs = b + 8 + 16 * ib;
    uint s = (cb & 1) * 4;
    for (uint i = 0; i < 16; i++) out[i] = dl * iq4_value((qs[i] >> s) & 0xF);
}

// Activations: F16 in Apple plans.
inline float silu(float x) { return x * fast_recip(1.0f + fast_exp(-x)); }
inline float gelu_tanh(float x) {
    const float k = 0.7978845608028654f; // sqrt(2/pi)
    return 0.5f * x * (1.0f + precise::tanh(k * (x + 0.044715f * x * x * x)));
}

#endif // AKUNU_QUANTS_H
