// Package metal holds akunu's Metal Shading Language kernels, one .metal
// file per kernel family, embedded so that the Metal runtime can compile
// them at load. The .metal files are generated (go generate ./kernels) from
// the kernels' one source in kernels/gpu, which CUDA shares; this package
// inlines the bodies they include, holds them to the catalog, and registers
// the kernels they define with the catalog (kernels.Register("metal",
// ...)). The registered names are parsed from the sources themselves, so
// the registry says what exists, not what is hoped for. It must not know
// about buffers, plans or the Objective-C runtime (runtime/metal's
// business). docs/metal.md describes the kernels, the clang shim and what
// only a Mac can prove.
package metal
