// Package cuda is akunu's CUDA backend: plans replayed on an NVIDIA GPU
// through the CUDA driver API and NVRTC, called with purego (no cgo, so the
// binaries stay CGO_ENABLED=0 and cross-build everywhere).
//
// The kernels are the ones the Metal backend runs: kernels/gpu writes a
// CUDA translation unit from the same bodies (kernels/gpu.CUDA) for each
// pipeline, with its function constants fixed, and NVRTC compiles it for
// the GPU at load; the cubins are cached on disk by the source's hash and
// the GPU's architecture, so a second load compiles nothing.
//
// Memory is the device's: weights are uploaded from the model's mapping,
// activations, KV caches and I/O buffers are device allocations, and the
// engine moves bytes only through Write and Read. Every command's
// parameter struct lives in device memory: Encode patches the step's
// values on the host into a pinned mirror, uploads it with one copy per
// submission, and launches each kernel with a pointer to its parameters;
// so a step's values are read from device memory, as a captured graph
// needs them. ADR 0017 records the design.
package cuda
