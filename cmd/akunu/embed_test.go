package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/synth"
)

// bertPlan is a small random BERT (the built-in vocabulary) compiled for
// the CPU, its GGUF file next to it.
func bertPlan(t *testing.T) string {
	t.Helper()
	return synthCPUPlan(t, synth.Options{Arch: "bert", Dim: 64, Layers: 1, Heads: 2, FFN: 128, CtxTrain: 128, DType: dtype.F16, Seed: 3}, 0)
}

// akunu embed prints one unit vector a line, the same vectors in --json
// and from -f, and says why it cannot embed with a generative plan or
// generate with an embedding one.
func TestEmbedCommand(t *testing.T) {
	plan := bertPlan(t)
	out, errOut, code := runAkunu("embed", plan, "hello world", "a second text")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), out)
	}
	var plain [][]float64
	for _, l := range lines {
		var v []float64
		var n float64
		for _, f := range strings.Fields(l) {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil {
				t.Fatal(err)
			}
			v, n = append(v, x), n+x*x
		}
		if len(v) != 64 || math.Abs(math.Sqrt(n)-1) > 1e-5 {
			t.Errorf("a vector of %d values, norm %v; want 64, 1", len(v), math.Sqrt(n))
		}
		plain = append(plain, v)
	}
	if !strings.Contains(errOut, "2 inputs") {
		t.Errorf("stderr %q lacks the summary", errOut)
	}

	texts := filepath.Join(t.TempDir(), "texts.txt")
	if err := os.WriteFile(texts, []byte("hello world\n\na second text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runAkunu("embed", plan, "-f", texts, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct {
		Dim  int `json:"dim"`
		Data []struct {
			Index     int       `json:"index"`
			Tokens    int       `json:"tokens"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Dim != 64 || len(res.Data) != 2 {
		t.Fatalf("dim %d, %d vectors", res.Dim, len(res.Data))
	}
	for i, d := range res.Data {
		for j, x := range d.Embedding {
			if math.Abs(x-plain[i][j]) > 1e-6 {
				t.Fatalf("input %d value %d: --json %v, plain %v", i, j, x, plain[i][j])
			}
		}
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"embed", plan}, "no text"},
		{[]string{"embed", synthPlan(t), "hi"}, "no embedding program"},
		{[]string{"run", plan, "-p", "hi"}, "embedding model"},
	} {
		_, errOut, code := runAkunu(c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q (want %q)", c.args, code, errOut, c.want)
		}
	}
}
