package gguf

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// storiesHeaderHash pins the header identity of stories260K.gguf: if it
// changes, plans compiled before no longer match the file they were made for.
const storiesHeaderHash = "6d1305921b546d1384a3a7de9a511136fca0c8a25e2f7ed477531694a66b3f2b"

func TestReadStories260K(t *testing.T) {
	f, err := Open(storiesPath(t))
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Alignment != 32 || f.Architecture() != "llama" {
		t.Errorf("version %d, alignment %d, architecture %q", f.Version, f.Alignment, f.Architecture())
	}
	if n, err := f.GetUint("llama.block_count"); err != nil || n != 5 {
		t.Errorf("llama.block_count = %d, %v; want 5", n, err)
	}
	for key, want := range map[string]uint64{
		"llama.embedding_length": 64, "llama.feed_forward_length": 172, "llama.attention.head_count": 8,
		"llama.attention.head_count_kv": 4, "llama.context_length": 2048, "tokenizer.ggml.bos_token_id": 1,
	} {
		if n, err := f.GetUint(key); err != nil || n != want {
			t.Errorf("%s = %d, %v; want %d", key, n, err, want)
		}
	}
	if eps, err := f.GetFloat("llama.attention.layer_norm_rms_epsilon"); err != nil || float32(eps) != 1e-5 {
		t.Errorf("rms epsilon = %g, %v", eps, err)
	}
	toks, err := f.GetStrings("tokenizer.ggml.tokens")
	if err != nil || len(toks) != 512 || toks[1] != "<s>" {
		t.Errorf("tokens: %d, %v", len(toks), err)
	}
	if s, err := f.GetFloat32s("tokenizer.ggml.scores"); err != nil || len(s) != 512 {
		t.Errorf("scores: %d, %v", len(s), err)
	}
	if s, err := f.GetInt32s("tokenizer.ggml.token_type"); err != nil || len(s) != 512 || s[0] != 2 {
		t.Errorf("token types: %v, %v", s[:1], err)
	}
	if len(f.Tensors) != 48 {
		t.Errorf("%d tensors, want 48 (3 + 9 per layer × 5)", len(f.Tensors))
	}
	end := f.DataOffset
	for _, ti := range f.Tensors {
		if ti.Type != dtype.F32 {
			t.Errorf("%s is %v, want F32", ti.Name, ti.Type)
		}
		if ti.Size != 4*ti.Elements() {
			t.Errorf("%s: size %d for %d elements", ti.Name, ti.Size, ti.Elements())
		}
		if ti.FileOffset != end {
			t.Errorf("%s starts at %d, want %d (packed in table order)", ti.Name, ti.FileOffset, end)
		}
		end = ti.FileOffset + ti.Size
	}
	if end != f.FileSize {
		t.Errorf("the data ends at %d, the file at %d", end, f.FileSize)
	}
	ti, ok := f.Tensor("blk.4.ffn_down.weight")
	if !ok || ti.Dims[0] != 172 || ti.Dims[1] != 64 {
		t.Errorf("blk.4.ffn_down.weight: %v", ti)
	}
	if got := hex.EncodeToString(f.HeaderHash[:]); got != storiesHeaderHash {
		t.Errorf("header hash %s, want %s", got, storiesHeaderHash)
	}
	raw, err := os.ReadFile(storiesPath(t))
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(raw[:f.HeaderSize]) != f.HeaderHash {
		t.Error("HeaderHash is not the SHA-256 of the first HeaderSize bytes")
	}
}

func TestReadAcceptsVersion2(t *testing.T) {
	b := small(t)
	b[4] = 2
	f, err := read(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 2 {
		t.Errorf("version %d", f.Version)
	}
}

func TestReadRoundTripsEveryType(t *testing.T) {
	f, err := read(small(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range everyType() {
		got, ok := f.Get(kv.Key)
		if !ok || !got.Equal(kv.Value) {
			t.Errorf("%s = %v, want %v", kv.Key, got, kv.Value)
		}
	}
}

func TestGettersSayWhatIsWrong(t *testing.T) {
	f, err := read(small(t))
	if err != nil {
		t.Fatal(err)
	}
	at := func(key string) string {
		kv, _ := f.KV(key)
		return "at offset " + strconv.FormatInt(kv.Offset, 10)
	}
	cases := []struct {
		name string
		err  error
		kind error
		want []string
	}{
		{"a missing key", second(f.GetUint("llama.block_count")), ErrMissingKey, []string{`key "llama.block_count"`}},
		{"a string asked as a number", second(f.GetUint("general.architecture")), ErrWrongType, []string{`key "general.architecture"`, at("general.architecture"), "is str"}},
		{"a negative number asked as unsigned", second(f.GetUint("t.i8")), ErrWrongType, []string{"non-negative"}},
		{"a huge u64 asked as int", second(f.GetInt("t.u64")), ErrWrongType, []string{"is u64"}},
		{"an integer asked as a float", second(f.GetFloat("t.u8")), ErrWrongType, []string{"want a float"}},
		{"a number asked as a bool", second(f.GetBool("t.u8")), ErrWrongType, nil},
		{"a number asked as a string", second(f.GetString("t.u8")), ErrWrongType, nil},
		{"an i32 array asked as strings", second(f.GetStrings("a.i32")), ErrWrongType, []string{"is an array of i32"}},
		{"f64s asked as f32s", second(f.GetFloat32s("a.f64")), ErrWrongType, nil},
		{"u64s that do not fit i32", second(f.GetInt32s("a.u64")), ErrWrongType, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkErr(t, c.err, c.kind, c.want...) })
	}
	if b, err := f.GetBool("t.bool"); err != nil || !b {
		t.Errorf("GetBool = %v, %v", b, err)
	}
	if s, err := f.GetString("general.architecture"); err != nil || s != "llama" {
		t.Errorf("GetString = %q, %v", s, err)
	}
	if n, err := f.GetInt("t.i64"); err != nil || n != -1<<63 {
		t.Errorf("GetInt = %d, %v", n, err)
	}
	if _, ok := f.Tensor("nope"); ok {
		t.Error("found a tensor that is not there")
	}
}

func TestHeaderHashCoversHeaderOnly(t *testing.T) {
	base := small(t)
	f0, err := read(base)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Clone(base)
	data[len(data)-1] ^= 0xff // a weight byte
	f1, err := read(data)
	if err != nil {
		t.Fatal(err)
	}
	if f1.HeaderHash != f0.HeaderHash {
		t.Error("changing tensor data changed the header hash")
	}
	meta := bytes.Clone(base)
	kv, _ := f0.KV("t.u8")
	meta[kv.Offset+8+int64(len("t.u8"))+4] ^= 1 // the value byte of t.u8
	f2, err := read(meta)
	if err != nil {
		t.Fatal(err)
	}
	if f2.HeaderHash == f0.HeaderHash {
		t.Error("changing a metadata value left the header hash alone")
	}
	if sha256.Sum256(base[:f0.HeaderSize]) != f0.HeaderHash {
		t.Error("HeaderHash is not the SHA-256 of the header")
	}
}

// A ReaderAt that fails is reported, not mistaken for a short file.
type failingReader struct{ err error }

func (r failingReader) ReadAt([]byte, int64) (int, error) { return 0, r.err }

func TestReadReportsIOErrors(t *testing.T) {
	boom := errors.New("disk on fire")
	_, err := Read(failingReader{boom}, 1000)
	checkErr(t, err, boom, "header at offset 0: read failed: disk on fire")
	for _, s := range []error{ErrTruncated, ErrCorrupt, ErrNotGGUF} {
		if errors.Is(err, s) {
			t.Errorf("an I/O error blamed on the file: %v", s)
		}
	}
	_, err = Read(bytes.NewReader(small(t)), -1)
	checkErr(t, err, ErrInvalid)
	_, err = Read(nil, 100)
	checkErr(t, err, ErrInvalid)
}

func TestOpenNamesThePath(t *testing.T) {
	p := t.TempDir() + "/bad.gguf"
	if err := os.WriteFile(p, []byte("GGML...."), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(p)
	checkErr(t, err, ErrNotGGUF, p)
	_, err = Open(t.TempDir() + "/missing.gguf")
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
