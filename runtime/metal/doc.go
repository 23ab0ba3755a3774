// Package metal is akunu's Apple GPU backend: Metal through the
// Objective-C runtime, called with purego (no cgo), so that it
// cross-compiles from Linux.
//
// It owns the device, the command queue, one MTLLibrary per .metal file of
// kernels/metal (compiled from source at load, or a precompiled metallib),
// the pipeline cache keyed by plans.CacheKey, its buffers (shared-storage
// MTLBuffers and no-copy wrappers over the mapped model file) and its
// bound programs, both in tables behind runtime/device handles, and the
// encoding of bound commands into one command buffer per chain, with the
// blit copies that hand a chain's tokens off on the device. *Backend has
// runtime.Backend's method set as it is, but this package must not import
// package runtime: it sees only runtime/device's handles and resolved
// commands, and plans' steps. Every Objective-C call stays in this
// package: nothing above it sees an object id. It must not know
// architectures or plans beyond one command.
//
// Only the darwin files touch Metal; the rest (page alignment, constant
// encoding, the buffer and program tables, command binding and encoding
// order, copy resolution, error formatting) is plain Go, tested on every
// platform through a recording encoder. On other
// systems New returns ErrUnavailable. docs/adr/0010-metal-backend.md says
// why it is built this way and what only a Mac can prove.
package metal
