package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/kernels"
)

const committed = "../../gpu/ShaderTypes.h"

// The committed header cannot drift from the Go structs: it must be what
// the generator writes now.
func TestTheCommittedHeaderIsWhatTheGeneratorWrites(t *testing.T) {
	want, err := generate("../..")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("kernels/gpu/ShaderTypes.h is stale: run go generate ./kernels and commit it")
	}
	if !bytes.HasPrefix(got, []byte("// Code generated ")) || !bytes.Contains(got[:200], []byte("DO NOT EDIT.")) {
		t.Error("the header does not start with the generated-code marker")
	}
}

// Every field says what it holds: the header is what an MSL author reads.
func TestEveryFieldOfEveryStructIsDocumented(t *testing.T) {
	d, err := readDocs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range kernels.ParamStructs() {
		if strings.TrimSpace(d.structs[s.Name]) == "" {
			t.Errorf("%s has no doc comment", s.Name)
		}
		for _, f := range s.Fields {
			if !f.Padding() && d.fields[s.Name][f.GoName] == "" {
				t.Errorf("%s.%s has no comment", s.Name, f.GoName)
			}
		}
	}
}
