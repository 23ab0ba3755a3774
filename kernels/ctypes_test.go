package kernels_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/kernels"
)

const headerPath = "gpu/ShaderTypes.h"

// cCompiler finds the system C compiler: $CC, then gcc, cc, clang.
func cCompiler(t *testing.T) string {
	t.Helper()
	cands := []string{"gcc", "cc", "clang"}
	if cc := os.Getenv("CC"); cc != "" {
		cands = append([]string{cc}, cands...)
	}
	for _, c := range cands {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	proof.Missing(t, "ShaderTypes.h's layout is not checked against the Go structs", "no C compiler ($CC, gcc, cc or clang) on PATH")
	return ""
}

// layoutProgram is a C program that prints, for every struct, its size and
// for every field its offset, size and type (by _Generic), one per line:
//
//	S GEMVParams 16
//	F GEMVParams n 0 4 uint32_t
func layoutProgram() string {
	var b strings.Builder
	b.WriteString(`#include <stddef.h>
#include <stdio.h>
#include "ShaderTypes.h"

#define CTYPE(x) _Generic((x), uint32_t: "uint32_t", int32_t: "int32_t", float: "float", uint16_t: "uint16_t", default: "other")

int main(void) {
`)
	for _, s := range kernels.ParamStructs() {
		fmt.Fprintf(&b, "\tprintf(\"S %s %%zu\\n\", sizeof(%s));\n", s.Name, s.Name)
		for _, f := range s.Fields {
			fmt.Fprintf(&b, "\tprintf(\"F %s %s %%zu %%zu %%s\\n\", offsetof(%s, %s), sizeof(((%s *)0)->%s), CTYPE(((%s *)0)->%s));\n",
				s.Name, f.Name, s.Name, f.Name, s.Name, f.Name, s.Name, f.Name)
		}
	}
	b.WriteString("\treturn 0;\n}\n")
	return b.String()
}

// The header is what the kernels compile against; a C compiler must lay it
// out exactly as Go lays out the structs Encode writes.
func TestShaderTypesHLaysOutEveryStructAsGoDoes(t *testing.T) {
	cc := cCompiler(t)
	dir := t.TempDir()
	hdr, err := os.ReadFile(headerPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ShaderTypes.h"), hdr, 0o644); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "layout.c")
	if err := os.WriteFile(src, []byte(layoutProgram()), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "layout")
	cmd := exec.Command(cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-o", bin, src)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}

	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch f[0] {
		case "S":
			got[f[1]] = f[2]
		case "F":
			got[f[1]+"."+f[2]] = strings.Join(f[3:], " ")
		}
	}
	for _, s := range kernels.ParamStructs() {
		if g, w := got[s.Name], strconv.Itoa(s.Size); g != w {
			t.Errorf("sizeof(%s) = %s in C, %s in Go", s.Name, g, w)
		}
		for _, f := range s.Fields {
			w := fmt.Sprintf("%d %d %s", f.Offset, f.Size, f.CType)
			if g := got[s.Name+"."+f.Name]; g != w {
				t.Errorf("%s.%s: offset size type %q in C, %q in Go", s.Name, f.Name, g, w)
			}
		}
	}
	if len(got) == 0 {
		t.Fatalf("the program printed nothing:\n%s", out)
	}
}

// MSL is C++14 with its own headers; compiling the header as C++ checks the
// static_assert branch the Metal compiler takes.
func TestShaderTypesHCompilesAsCPlusPlus(t *testing.T) {
	var cxx string
	for _, c := range []string{os.Getenv("CXX"), "g++", "c++", "clang++"} {
		if p, err := exec.LookPath(c); c != "" && err == nil {
			cxx = p
			break
		}
	}
	if cxx == "" {
		proof.Missing(t, "ShaderTypes.h is not compiled as C++", "no C++ compiler ($CXX, g++, c++ or clang++) on PATH")
	}
	abs, err := filepath.Abs(headerPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cxx, "-std=c++14", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "-x", "c++", abs)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
}
