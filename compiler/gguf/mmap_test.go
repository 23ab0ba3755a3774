package gguf

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestMapHandsOutTensorBytes(t *testing.T) {
	path := storiesPath(t)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Map(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if len(m.Bytes()) != len(raw) || m.FileSize != int64(len(raw)) {
		t.Fatalf("mapped %d bytes of %d", len(m.Bytes()), len(raw))
	}
	for i := range m.Tensors {
		ti := &m.Tensors[i]
		got := m.Data(ti)
		if !bytes.Equal(got, raw[ti.FileOffset:ti.FileOffset+ti.Size]) {
			t.Errorf("%s: mapped bytes differ from the file's", ti.Name)
		}
		if cap(got) != len(got) {
			t.Errorf("%s: capacity %d reaches past the tensor (%d)", ti.Name, cap(got), len(got))
		}
	}
	d, err := m.TensorData("output_norm.weight")
	if err != nil || len(d) != 256 {
		t.Errorf("TensorData: %d bytes, %v", len(d), err)
	}
	if _, err := m.TensorData("nope"); err == nil {
		t.Error("TensorData of a missing tensor")
	}
	// A TensorInfo that is not this file's gets nothing rather than a panic.
	for _, bad := range []*TensorInfo{nil, {FileOffset: -1, Size: 1}, {FileOffset: m.FileSize, Size: 1}, {FileOffset: 1, Size: m.FileSize}} {
		if m.Data(bad) != nil {
			t.Errorf("Data(%v) is not nil", bad)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if m.Data(&m.Tensors[0]) != nil {
		t.Error("Data after Close")
	}
	if _, err := m.TensorData("output_norm.weight"); err == nil {
		t.Error("TensorData after Close")
	}
}

func TestMapRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		data []byte
		kind error
	}{
		{"an empty file", nil, ErrTruncated},
		{"a truncated file", small(t)[:100], ErrTruncated},
		{"not GGUF", []byte("hello, world"), ErrNotGGUF},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, "f.gguf")
			if err := os.WriteFile(p, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Map(p)
			checkErr(t, err, c.kind, p)
		})
	}
	if _, err := Map(dir); err == nil {
		t.Error("mapped a directory")
	}
	if _, err := Map(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
