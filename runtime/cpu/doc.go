// Package cpu is the CPU backend: every kernel of the catalog (kernels/) in
// Go, and the execution core that binds a plan's commands once at load and
// replays them with no lookups, no decoding and no allocation per token.
//
// It owns the kernels' CPU semantics (the "CPU twin" every other backend is
// held to) and a worker pool that splits rows, tiles and heads over the
// cores. It must not know about architectures, plans' programs or the replay
// loop's strategy: it runs commands, it does not choose them.
//
// The portable Go kernels are the reference. On amd64 (not with the
// purego tag) assembly twins replace the hot ones at init, each chosen by
// a CPU feature check and held by a test to its portable twin, bit for bit
// unless its file says otherwise:
//
//	dot_amd64.s      AVX2 dots: Q4_0, Q8_0, F16, BF16, F32 (four-row: Q4_0, Q8_0, F32)
//	q5_amd64.s       AVX2 Q4_1, Q5_0, Q5_1
//	kquant_amd64.s   AVX2 Q4_K, Q5_K;  q6k_amd64.s: Q6_K
//	q4vnni_amd64.s   AVX-512 VNNI four-row Q4_0 dot (float32 rounding of the
//	                 portable one) and its 4×4 GEMM tile (bits of that dot)
//	q8vnni_amd64.s   AVX-512 VNNI four-row Q8_0 dot and the Q8_0 tile
//	                 (float32 rounding of the portable dot; the dot is the
//	                 tile's row, bit for bit)
//	x16_amd64.s      AVX-512 VNNI kernels of the q4_0x16 and q8_0x16 layouts
//	                 (x16.go: the _x16 GEMV and GEMM; bits of their Go twins)
//	ktile_amd64.s    the Q4_K and Q6_K tiles;  ftile_amd64.s: F32/F16/BF16
//	quant_amd64.s, quant8k_amd64.s  activation quantization (Q8_0/1, Q8_K),
//	                 the x16 records
//	attn_amd64.s, expf_amd64.s      attention pieces (AVX2; AVX-512 for two
//	                 heads of a kv head, float32 rounding), expf (≤ 2 ulp), SiLU
//	attnq8_amd64.s   attention over a Q8_0 KV cache (kvcache.go): scores bit
//	                 for bit (q8dot_amd64.h, the Q8_0 dot's block), values to
//	                 float32 rounding; two heads a pass (AVX-512)
//	vec_amd64.s      row pieces (vec.go): f32→f16 rows, RMS scales of eight
//	                 rows at once, RoPE rotations, residual add, argmax
//
// docs/adr/0008-cpu-backend.md says why it is built this way.
package cpu
