package metal

// Options configure New.
type Options struct {
	// MetallibDir, when set, holds precompiled libraries named after the
	// .metal files (gemv.metallib for gemv.metal, built as docs/metal.md
	// says); a file found there is loaded instead of compiling the source.
	MetallibDir string
	// LanguageVersion is the MSL version the sources are compiled with, as
	// MTLLanguageVersion encodes it (major<<16 | minor); 0 means 3.0
	// (macOS 13), the oldest the kernels are written for.
	LanguageVersion uint32
	// EncoderPerCommand gives every command its own compute encoder,
	// labelled "step N: LABEL", so a failed command buffer names the
	// command even where Metal records no debug signposts. It is a
	// debugging mode (akunu verify uses it): slower, and it allocates a
	// label per command encoded.
	EncoderPerCommand bool
}

// DeviceInfo is what New found of the GPU.
type DeviceInfo struct {
	Name string // "Apple M1 Pro"
	// Family is the highest Apple GPU family supported: "apple7" (M1),
	// "apple8" (M2), "apple9" (M3, M4), "apple10"; "" if none of them.
	Family string
	// GPUCores is the core count the IORegistry reports (ioreg's
	// AGXAccelerator gpu-core-count, parsed by specs/chips); 0 if unknown.
	GPUCores        int
	UnifiedMemory   bool
	MaxBufferLength uint64
	// WorkingSet is recommendedMaxWorkingSetSize: what the GPU may keep
	// resident without paging.
	WorkingSet uint64
}

// languageVersion3_0 is MTLLanguageVersion3_0.
const languageVersion3_0 = 3 << 16

// familyName maps MTLGPUFamilyAppleN (1000+N) to the chip profiles'
// family names, highest first.
var families = []struct {
	id   uintptr
	name string
}{{1010, "apple10"}, {1009, "apple9"}, {1008, "apple8"}, {1007, "apple7"}}
