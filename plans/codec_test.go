package plans

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestRoundTrip(t *testing.T) {
	want := Example()
	got := mustDecode(t, Encode(want))
	if !reflect.DeepEqual(got, want) {
		var a, b bytes.Buffer
		want.Render(&a)
		got.Render(&b)
		t.Fatalf("Decode(Encode(p)) differs from p:\n%s", firstDiff(a.Bytes(), b.Bytes()))
	}
}

func TestEncodeIsDeterministic(t *testing.T) {
	p := Example()
	// Many map keys, so that Go's randomized map order would show.
	p.Header.Target.Tuning.Extra = map[string]string{}
	for i := range 50 {
		p.Header.Target.Tuning.Extra[fmt.Sprintf("k%02d", 49-i)] = fmt.Sprint(i)
	}
	first := Encode(p)
	for range 20 {
		if !bytes.Equal(Encode(p), first) {
			t.Fatal("two encodings of one plan differ")
		}
	}
	t.Run("an equal plan built separately encodes the same", func(t *testing.T) {
		if !bytes.Equal(Encode(Example()), Encode(Example())) {
			t.Fatal("Example() encodes differently on two calls")
		}
	})
	t.Run("a decoded plan re-encodes to the same bytes", func(t *testing.T) {
		if !bytes.Equal(Encode(mustDecode(t, first)), first) {
			t.Fatal("Encode(Decode(b)) != b")
		}
	})
	t.Run("nil and empty slices and maps encode the same", func(t *testing.T) {
		q := Example()
		q.Header.Target.Tuning.Extra = map[string]string{}
		q.Model.Tokenizer.Merges = []string{}
		r := Example()
		r.Header.Target.Tuning.Extra = nil
		r.Model.Tokenizer.Merges = nil
		if !bytes.Equal(Encode(q), Encode(r)) {
			t.Fatal("nil and empty encode differently")
		}
	})
}

// TestEncodingGolden pins the bytes of Example's encoding: a change to the
// encoder or the schema shows up here, where a reviewer sees it.
func TestEncodingGolden(t *testing.T) {
	golden(t, "example.plan.bin", Encode(Example()))
}

// TestOldFilesDecode holds the reader to every plan format ever written:
// testdata/compat holds one file per format version, never regenerated.
func TestOldFilesDecode(t *testing.T) {
	files, _ := filepath.Glob("testdata/compat/*.bin")
	if len(files) == 0 {
		t.Fatal("no files in testdata/compat")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if _, err := ReadFile(f); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestWriteFileReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.plan")
	if err := WriteFile(path, Example()); err != nil {
		t.Fatal(err)
	}
	p, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	err = p.CheckModel(1, [32]byte{})
	if err == nil || !strings.Contains(err.Error(), "-o "+path) {
		t.Fatalf("CheckModel after ReadFile should name the plan file: %v", err)
	}
}

// withVersions re-seals an encoding with other versions in the preamble.
func withVersions(data []byte, format, minRT uint32) []byte {
	out := bytes.Clone(data)
	binary.LittleEndian.PutUint32(out[offVersion:], format)
	binary.LittleEndian.PutUint32(out[offMinRT:], minRT)
	return reseal(out)
}

func TestRefusals(t *testing.T) {
	good := Encode(Example())
	tests := []struct {
		name string
		data []byte
		is   error
		want string // the whole one-line message
	}{
		{"a plan needing a newer runtime", withVersions(good, FormatVersion+1, FormatVersion+1), ErrTooNew,
			fmt.Sprintf("plan: model.plan has format version %d and needs a runtime of version %d; this runtime reads up to %d; upgrade akunu or recompile the plan: plan too new",
				FormatVersion+1, FormatVersion+1, FormatVersion)},
		{"a GGUF file", []byte("GGUF\x03\x00\x00\x00rest"), ErrNotPlan,
			"plan: model.plan is a GGUF model, not a plan; compile it with: akunuc compile model.plan -o model.plan: not an akunu plan"},
		{"something else", []byte("#!/bin/sh\n"), ErrNotPlan,
			`plan: model.plan is not an akunu plan (it starts with "#!/bin/s", a plan with "AKUNUPLN"): not an akunu plan`},
		{"an empty file", nil, ErrNotPlan,
			`plan: model.plan is not an akunu plan (it starts with "", a plan with "AKUNUPLN"): not an akunu plan`},
		{"a preamble cut short", good[:30], ErrCorrupt,
			"plan: model.plan is truncated: 30 bytes, shorter than the 56-byte preamble; recompile it: corrupt plan"},
		{"a body cut short", good[:len(good)-1], ErrCorrupt,
			fmt.Sprintf("plan: model.plan is truncated: the preamble promises a %d-byte body, the file holds %d; recompile it: corrupt plan", len(good)-56, len(good)-57)},
		{"bytes after the body", append(bytes.Clone(good), 0), ErrCorrupt,
			fmt.Sprintf("plan: model.plan is too long: the preamble promises a %d-byte body, the file holds %d; recompile it: corrupt plan", len(good)-56, len(good)-55)},
		{"format version 0", withVersions(good, 0, 0), ErrCorrupt,
			"plan: model.plan has format version 0 and minimum runtime 0, which no writer produces; the file is damaged, recompile it: corrupt plan"},
		{"a minimum runtime above the format", withVersions(good, FormatVersion, FormatVersion+1), ErrTooNew, ""},
		{"a body that is not a plan", reseal(append(bytes.Clone(good[:preambleSize]), 0x95, 1, 2, 3, 4, 5)), ErrCorrupt,
			"plan: model.plan does not decode (body byte 1, header: want an array, found msgpack code 0x01); recompile it: corrupt plan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode("model.plan", tt.data)
			if !errors.Is(err, tt.is) {
				t.Fatalf("got %v, want an error wrapping %q", err, tt.is)
			}
			if tt.want != "" && err.Error() != tt.want {
				t.Errorf("message:\n got %s\nwant %s", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("a refusal is one line: %q", err)
			}
		})
	}
}

// TestAnyFlippedByteIsRefused flips each byte of an encoding in turn: the
// magic gives ErrNotPlan, a version may read as too new, and everything
// else must fail the length or checksum test. Nothing decodes.
func TestAnyFlippedByteIsRefused(t *testing.T) {
	good := Encode(Example())
	for i := range good {
		bad := bytes.Clone(good)
		bad[i] ^= 0x20
		_, err := Decode("", bad)
		switch {
		case err == nil:
			t.Fatalf("byte %d flipped: decoded", i)
		case i < len(Magic):
			if !errors.Is(err, ErrNotPlan) {
				t.Fatalf("byte %d flipped: %v", i, err)
			}
		case i < offBodyLen && errors.Is(err, ErrTooNew):
		case !errors.Is(err, ErrCorrupt):
			t.Fatalf("byte %d flipped: %v, want ErrCorrupt", i, err)
		case i >= preambleSize && !strings.Contains(err.Error(), "checksum"):
			t.Fatalf("byte %d flipped: %v, want a checksum mismatch", i, err)
		}
	}
}

func TestEveryTruncationIsRefused(t *testing.T) {
	good := Encode(Example())
	for n := range good {
		if _, err := Decode("", good[:n]); !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotPlan) {
			t.Fatalf("first %d bytes: %v", n, err)
		}
	}
}

func TestCheckModel(t *testing.T) {
	p := Example()
	m := p.Header.Model
	if err := p.CheckModel(int64(m.Size), m.HeaderSHA256); err != nil {
		t.Fatalf("the right file: %v", err)
	}
	other := m.HeaderSHA256
	other[0] ^= 0xff
	tests := []struct {
		name string
		size int64
		hash [32]byte
		want string
	}{
		{"another size", int64(m.Size) + 1, m.HeaderSHA256,
			fmt.Sprintf("plan: example.plan was compiled for a different model file (example.gguf of %d bytes; this one has %d bytes); recompile with: akunuc compile example.gguf -o example.plan: plan does not match the model", m.Size, m.Size+1)},
		{"another header", int64(m.Size), other,
			"plan: example.plan was compiled for a different model file (header hash b8123517… ≠ 47123517…); recompile with: akunuc compile example.gguf -o example.plan: plan does not match the model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.CheckModel(tt.size, tt.hash)
			if !errors.Is(err, ErrPlanMismatch) {
				t.Fatalf("got %v, want ErrPlanMismatch", err)
			}
			if err.Error() != tt.want {
				t.Errorf("message:\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

// appendField adds a value at the end of every record array along the
// path of array indices (into the decoded msgpack tree), as a newer writer
// that appended a field would.
func appendFields(t *testing.T, data []byte, extra any, paths ...[]int) []byte {
	t.Helper()
	var tree any
	d := msgpack.NewDecoder(bytes.NewReader(data[preambleSize:]))
	if err := d.Decode(&tree); err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		node := &tree
		for _, i := range path {
			arr := (*node).([]any)
			node = &arr[i]
		}
		*node = append((*node).([]any), extra)
	}
	var body bytes.Buffer
	if err := msgpack.NewEncoder(&body).Encode(tree); err != nil {
		t.Fatal(err)
	}
	return reseal(append(bytes.Clone(data[:preambleSize]), body.Bytes()...))
}

func TestNewerFieldsAreSkipped(t *testing.T) {
	good := Encode(Example())
	extra := map[string]any{"future": []any{1, "two", []any{3.5, true}}, "bin": []byte{1, 2}}
	// The plan, its header, and decode's first command (programs, 0,
	// commands, 0).
	minRT := Example().Header.MinRuntime
	data := withVersions(appendFields(t, good, extra, []int{}, []int{0}, []int{4, 0, 2, 0}), FormatVersion+1, minRT)
	p, err := Decode("", data)
	if err != nil {
		t.Fatal(err)
	}
	if p.Header.Format != FormatVersion+1 || p.Header.MinRuntime != minRT {
		t.Errorf("versions %d, %d; want %d, %d", p.Header.Format, p.Header.MinRuntime, FormatVersion+1, minRT)
	}
	p.Header.Format = FormatVersion
	if !reflect.DeepEqual(p, Example()) {
		t.Error("a plan with newer fields decodes to something else than the plan without them")
	}
}

func TestMissingFieldsAreRefused(t *testing.T) {
	good := Encode(Example())
	var tree []any
	if err := msgpack.NewDecoder(bytes.NewReader(good[preambleSize:])).Decode(&tree); err != nil {
		t.Fatal(err)
	}
	tree[0] = tree[0].([]any)[:3] // the header without its model field
	var body bytes.Buffer
	if err := msgpack.NewEncoder(&body).Encode(tree); err != nil {
		t.Fatal(err)
	}
	_, err := Decode("", reseal(append(bytes.Clone(good[:preambleSize]), body.Bytes()...)))
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("header: 3 fields, format %d has 4", FormatVersion)) {
		t.Fatalf("got %v", err)
	}
}

func TestWriteFileLeavesNoTemporary(t *testing.T) {
	dir := t.TempDir()
	if err := WriteFile(filepath.Join(dir, "x.plan"), Example()); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("directory holds %d entries", len(ents))
	}
}
