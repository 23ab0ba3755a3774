package metal

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/internal/proof"
)

// clangArgs are the flags every check uses (scripts/check-msl.sh has the
// same): the shim first on the include path, this directory next, every
// warning an error, and misspelt attributes among them.
var clangArgs = []string{
	"--target=arm64-apple-macos13", "-x", "c++", "-std=c++17", "-fsyntax-only",
	"-nostdinc", "-nostdinc++", "-ffreestanding", "-D__METAL_VERSION__=310",
	"-I", "shim", "-I", ".", "-I", "../gpu",
	"-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror", "-Werror=unknown-attributes",
	"-",
}

// clang finds clang++; without it the test fails in CI (CI=true) and
// elsewhere skips, loudly: make test lists it at its end (internal/proof).
func clang(t *testing.T) string {
	t.Helper()
	for _, c := range []string{os.Getenv("CLANG"), "clang++", "clang"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	proof.Missing(t, "the MSL kernels are not checked", "clang not found (apt-get install clang)")
	return ""
}

var (
	tgAttr   = regexp.MustCompile(`\[\[threadgroup\(`)
	hostAttr = regexp.MustCompile(`template \[\[host_name\(("[^"]*")\)\]\]`)
)

// rewrite applies the two rewrites the shim needs (shim/metal_stdlib says
// why) and a line marker, so messages name the .metal file and its lines.
func rewrite(name, src string) string {
	src = tgAttr.ReplaceAllString(src, "[[threadgroup_binding(")
	src = hostAttr.ReplaceAllString(src, "template /* host_name($1) */")
	return fmt.Sprintf("# 1 %q\n%s", name, src)
}

// compile checks src (named name) with clang through the shim.
func compile(cc, name, src string) (string, error) {
	cmd := exec.Command(cc, clangArgs...)
	cmd.Stdin = strings.NewReader(rewrite(name, src))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func TestEveryMetalFileCompilesThroughTheShim(t *testing.T) {
	cc := clang(t)
	files := Files()
	if len(files) == 0 {
		t.Fatal("no .metal files embedded")
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if out, err := compile(cc, f, string(src)); err != nil {
				t.Errorf("clang rejects %s: %v\n%s", f, err, out)
			}
		})
	}
}

// The check is worth something only if it fails on broken kernels: each of
// these snippets has one mistake the Metal compiler would reject.
func TestTheShimCatchesBrokenKernels(t *testing.T) {
	cc := clang(t)
	const head = "#include <metal_stdlib>\n#include \"ShaderTypes.h\"\nusing namespace metal;\n"
	const ok = `kernel void k(device const half* x [[buffer(0)]], device float* y [[buffer(1)]],
    constant GEMVParams& p [[buffer(2)]], uint tid [[thread_index_in_simdgroup]]) {
    y[tid] = simd_sum(float(x[tid])) + float(p.n);
}
`
	if out, err := compile(cc, "ok.metal", head+ok); err != nil {
		t.Fatalf("the control snippet fails, so the cases below prove nothing: %v\n%s", err, out)
	}
	cases := []struct{ name, src string }{
		{"an undeclared name", strings.Replace(ok, "float(x[tid])", "float(xx[tid])", 1)},
		{"a misspelt builtin", strings.Replace(ok, "simd_sum", "simd_summ", 1)},
		{"a type mismatch", strings.Replace(ok, "y[tid] =", "GEMMParams q = p; y[tid] =", 1)},
		{"a field the struct lacks", strings.Replace(ok, "p.n", "p.rows", 1)},
		{"a misspelt attribute", strings.Replace(ok, "thread_index_in_simdgroup", "thread_index_in_simdgrup", 1)},
		{"a threadgroup pointer where a device one goes", strings.Replace(ok, "y[tid] =",
			"threadgroup float* t = 0; device float* d = t; y[tid] =", 1)},
		{"min of float and half", strings.Replace(ok, "float(p.n)", "min(float(p.n), x[0])", 1)},
		{"a missing barrier flag", strings.Replace(ok, "y[tid] =", "threadgroup_barrier(); y[tid] =", 1)},
	}
	for _, c := range cases {
		t.Run("rejects "+c.name, func(t *testing.T) {
			t.Parallel()
			if out, err := compile(cc, "broken.metal", head+c.src); err == nil {
				t.Errorf("clang accepts the snippet:\n%s\n%s", c.src, out)
			}
		})
	}
}
