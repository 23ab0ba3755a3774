package plans

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// The preamble, little-endian (FORMAT.md):
//
//	offset  size
//	0       8   magic "AKUNUPLN"
//	8       4   format version
//	12      4   minimum runtime version
//	16      8   body length
//	24      32  SHA-256 of bytes [0, 24) followed by the body
//	56          body (msgpack)
//
// The versions come first and outside the body so that a reader can refuse
// a newer plan before it trusts anything else in the file. The checksum
// covers them too: a flipped bit in a version is corruption, not a version.
const (
	preambleSize = 56
	offVersion   = 8
	offMinRT     = 12
	offBodyLen   = 16
	offChecksum  = 24
)

// RequiredRuntime is the minimum runtime version the plan needs: the format
// version that introduced the newest feature it uses. Every feature of
// format 1 needs 1; a patch kind or buffer kind added later raises it to
// the version that added it, and a plan that does not use the new kind
// stays readable by older runtimes. Format 2 added batch programs, the seq
// and out_count patch kinds, KV caches of several sequence slots and
// repacked weights: a plan that has any of them needs 2. Format 4 added
// embedding programs: a plan with one needs 4. Format 5 added KV caches in
// Q8_0 and F32: a plan with one needs 5. Format 6 added the repacked
// layouts q8_0x16, q4_kx16 and q6_kx16: a plan with one needs 6. Format 7
// added tuning.gemv_min_groups, which changes GEMV launches: a plan that
// sets it needs 7. Format 8 added tuning.gemv_min_rows, which changes them
// too: a plan that sets it needs 8. Format 9 added tuning.int8_gemv, which
// changes the rows of some: a plan that sets it needs 9. Format 10 added
// the planar layout q4_0_planar (repack:q4_0_planar, read by
// gemv_q4_0_planar): a plan with one needs 10. Format 11 added the layouts
// q4_0_planar_pairs (a gate and an up weight's rows interleaved, read by
// gemv_q4_0_planar_glu) and q6_k_planar, and the GEMVs that apply the RMS
// norm before them or add into the residual after them (gemv_*_norm,
// gemv_*_res; tuning.fold_norms_max_dim), the decode attention that rotates
// q and k and writes the KV row itself (flash_attention_decode_rope_*;
// tuning.rope_in_attention) and tuning.gemv_preload_max_k (the planar Q4_0
// GEMVs' preload constant): a plan with any of them needs 11. Format 12
// added the small GEMMs over the planar layouts (simd_gemm_small_*_planar,
// _planar_glu: the batch programs reading the decode program's planar
// buffers): a plan with one needs 12.
func (p *Plan) RequiredRuntime() uint32 {
	for i := range p.Pipelines {
		if k := p.Pipelines[i].Kernel; strings.HasPrefix(k, "simd_gemm_small_") && strings.Contains(k, "_planar") {
			return 12
		}
	}
	for i := range p.Pipelines {
		k := p.Pipelines[i].Kernel
		if strings.HasPrefix(k, "gemv_") && (strings.HasSuffix(k, "_norm") || strings.HasSuffix(k, "_res")) ||
			strings.HasPrefix(k, "flash_attention_decode_rope") {
			return 11
		}
	}
	for i := range p.Buffers {
		if r := p.Buffers[i].Recipe; r == RecipeRepackPrefix+"q4_0_planar_pairs" || r == RecipeRepackPrefix+"q6_k_planar" {
			return 11
		}
	}
	if p.Header.Target.Tuning.GEMVPreloadMaxK > 0 {
		return 11
	}
	for i := range p.Buffers {
		if p.Buffers[i].Recipe == RecipeRepackPrefix+"q4_0_planar" {
			return 10
		}
	}
	if p.Header.Target.Tuning.Int8GEMV {
		return 9
	}
	if p.Header.Target.Tuning.GEMVMinRows > 0 {
		return 8
	}
	if p.Header.Target.Tuning.GEMVMinGroups > 0 {
		return 7
	}
	for i := range p.Buffers {
		if r := p.Buffers[i].Recipe; r == RecipeRepackPrefix+"q8_0x16" || r == RecipeRepackPrefix+"q4_kx16" || r == RecipeRepackPrefix+"q6_kx16" {
			return 6
		}
	}
	for i := range p.Buffers {
		if b := &p.Buffers[i]; b.Kind == BufKV && !strings.EqualFold(b.DType, "f16") {
			return 5
		}
	}
	for i := range p.Programs {
		if p.Programs[i].Kind == KindEmbed {
			return 4
		}
	}
	if p.Header.Target.Tuning.MaxSeqs > 1 {
		return 2
	}
	for i := range p.Buffers {
		if strings.HasPrefix(p.Buffers[i].Recipe, RecipeRepackPrefix) {
			return 2
		}
	}
	for i := range p.Programs {
		pr := &p.Programs[i]
		if pr.Kind >= KindBatch {
			return 2
		}
		for j := range pr.Commands {
			for _, pt := range pr.Commands[j].Patches {
				if pt.Kind >= PatchSeq {
					return 2
				}
			}
		}
	}
	return 1
}

// Encode writes p in the plan format. Equal plans give identical bytes:
// records are arrays in schema order, maps are written in key order, and
// nothing depends on pointers or on Go's map iteration. Encode does not
// validate; the compiler calls Validate first, and tests encode broken
// plans on purpose.
func Encode(p *Plan) []byte {
	e := newEncoder()
	e.buf.Grow(64 << 10)
	e.buf.Write(make([]byte, preambleSize))
	e.record(p)
	out := e.buf.Bytes()
	copy(out, Magic)
	binary.LittleEndian.PutUint32(out[offVersion:], FormatVersion)
	binary.LittleEndian.PutUint32(out[offMinRT:], p.RequiredRuntime())
	binary.LittleEndian.PutUint64(out[offBodyLen:], uint64(len(out)-preambleSize))
	sum := checksum(out)
	copy(out[offChecksum:], sum[:])
	return out
}

func checksum(file []byte) [32]byte {
	h := sha256.New()
	h.Write(file[:offChecksum])
	h.Write(file[preambleSize:])
	var s [32]byte
	h.Sum(s[:0])
	return s
}

// WriteFile encodes p to path, through a temporary file renamed into place
// so that a reader never sees half a plan. The plan gets the mode a file
// created normally would (0666 less the umask: the temporary file is opened
// with that mode, not os.CreateTemp's 0600), and errors name path, never
// the temporary file.
func WriteFile(path string, p *Plan) error {
	tmp, err := createNextTo(path)
	if err != nil {
		return fmt.Errorf("plan: writing %s: %w", path, bareError(err))
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(Encode(p)); err != nil {
		tmp.Close()
		return fmt.Errorf("plan: writing %s: %w", path, bareError(err))
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("plan: writing %s: %w", path, bareError(err))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("plan: writing %s: %w", path, bareError(err))
	}
	return nil
}

// createNextTo creates a new file in path's folder, named after it, with
// mode 0666 for the umask to reduce.
func createNextTo(path string) (*os.File, error) {
	for try := 0; ; try++ {
		name := fmt.Sprintf("%s.tmp%d", path, rand.Uint32())
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) || try == 100 {
			return f, err
		}
	}
}

// bareError is err without the file names a *PathError or *LinkError
// adds, which here would be the temporary file's.
func bareError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// ReadFile reads, checks and validates the plan at path. Its errors name
// the path.
func ReadFile(path string) (*Plan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if st.Size() > MaxPlanBytes {
		return nil, fmt.Errorf("plan: %s is %d bytes, more than the %d a plan may have: %w",
			path, st.Size(), MaxPlanBytes, ErrCorrupt)
	}
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("plan: reading %s: %w", path, err)
	}
	return Decode(path, data)
}

// Decode checks and decodes a plan and validates it. name is what messages
// call the plan (its path; "" for "the plan"). Each refusal is one line
// wrapping ErrNotPlan, ErrTooNew, ErrCorrupt or ErrInvalid.
//
// The checks run in the order that gives the most useful message: magic
// (is this a plan at all?), versions (can this runtime read it?), length
// and checksum (is it intact?), body, then Validate.
func Decode(name string, data []byte) (*Plan, error) {
	shown := name
	if shown == "" {
		shown = "the plan"
	}
	if err := checkMagic(shown, data); err != nil {
		return nil, err
	}
	if len(data) < preambleSize {
		return nil, fmt.Errorf("plan: %s is truncated: %d bytes, shorter than the %d-byte preamble; recompile it: %w",
			shown, len(data), preambleSize, ErrCorrupt)
	}
	version := binary.LittleEndian.Uint32(data[offVersion:])
	minRT := binary.LittleEndian.Uint32(data[offMinRT:])
	if minRT > FormatVersion {
		return nil, fmt.Errorf("plan: %s has format version %d and needs a runtime of version %d; this runtime reads up to %d; upgrade akunu or recompile the plan: %w",
			shown, version, minRT, FormatVersion, ErrTooNew)
	}
	if version == 0 || minRT == 0 || minRT > version {
		return nil, fmt.Errorf("plan: %s has format version %d and minimum runtime %d, which no writer produces; the file is damaged, recompile it: %w",
			shown, version, minRT, ErrCorrupt)
	}
	if len(data) > MaxPlanBytes {
		return nil, fmt.Errorf("plan: %s is %d bytes, more than the %d a plan may have: %w",
			shown, len(data), MaxPlanBytes, ErrCorrupt)
	}
	bodyLen := binary.LittleEndian.Uint64(data[offBodyLen:])
	if have := uint64(len(data) - preambleSize); bodyLen != have {
		what := "truncated"
		if have > bodyLen {
			what = "too long"
		}
		return nil, fmt.Errorf("plan: %s is %s: the preamble promises a %d-byte body, the file holds %d; recompile it: %w",
			shown, what, bodyLen, have, ErrCorrupt)
	}
	if sum := checksum(data); !bytes.Equal(sum[:], data[offChecksum:preambleSize]) {
		return nil, fmt.Errorf("plan: %s is damaged: checksum %s does not match the preamble's %s; recompile it: %w",
			shown, hashPrefix(sum[:]), hashPrefix(data[offChecksum:preambleSize]), ErrCorrupt)
	}
	p := &Plan{}
	d := newDecoder(data[preambleSize:], min(version, FormatVersion))
	if err := d.record(p); err != nil {
		return nil, fmt.Errorf("plan: %s does not decode (%v); recompile it: %w", shown, err, ErrCorrupt)
	}
	if d.remaining() != 0 {
		return nil, fmt.Errorf("plan: %s does not decode (%d bytes after the plan); recompile it: %w",
			shown, d.remaining(), ErrCorrupt)
	}
	p.Header.Format, p.Header.MinRuntime = version, minRT
	p.name = name
	if err := p.Validate(); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			ve.Plan = shown
		}
		return nil, err
	}
	return p, nil
}

func checkMagic(shown string, data []byte) error {
	if len(data) >= len(Magic) && string(data[:len(Magic)]) == Magic {
		return nil
	}
	if len(data) >= 4 && string(data[:4]) == "GGUF" {
		return fmt.Errorf("plan: %s is a GGUF model, not a plan; compile it with: akunuc compile %s -o %s: %w",
			shown, shown, planNameFor(shown), ErrNotPlan)
	}
	head := data[:min(len(data), len(Magic))]
	return fmt.Errorf("plan: %s is not an akunu plan (it starts with %q, a plan with %q): %w",
		shown, head, Magic, ErrNotPlan)
}

// planNameFor is the plan name a recompile hint suggests for a model file.
func planNameFor(model string) string {
	return strings.TrimSuffix(model, filepath.Ext(model)) + ".plan"
}

// CheckModel refuses a plan replayed over a model file other than the one
// it was compiled from: fileSize is the file's size and headerHash the
// SHA-256 of its header and tensor table (what the compiler recorded in
// Header.Model). The plan's weight offsets are only meaningful for that
// file.
func (p *Plan) CheckModel(fileSize int64, headerHash [32]byte) error {
	m := p.Header.Model
	planName, hint := p.recompileHint()
	switch {
	case fileSize < 0 || uint64(fileSize) != m.Size:
		return fmt.Errorf("plan: %s was compiled for a different model file (%s of %d bytes; this one has %d bytes); %s: %w",
			planName, m.File, m.Size, fileSize, hint, ErrPlanMismatch)
	case headerHash != m.HeaderSHA256:
		return fmt.Errorf("plan: %s was compiled for a different model file (header hash %s ≠ %s); %s: %w",
			planName, hashPrefix(m.HeaderSHA256[:]), hashPrefix(headerHash[:]), hint, ErrPlanMismatch)
	}
	return nil
}
