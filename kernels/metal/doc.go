// Package metal holds akunu's Metal Shading Language kernels, one .metal
// file per kernel family, embedded so that the Metal runtime can compile
// them at load, and registers the kernels they define with the catalog
// (kernels.Register("metal", ...)). The registered names are parsed from the
// sources themselves, so the registry says what exists, not what is hoped
// for. It owns the MSL and its checks; it must not know about buffers,
// plans or the Objective-C runtime (runtime/metal's business).
// docs/metal.md describes the kernels, the clang shim and what only a Mac
// can prove.
package metal
