package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/internal/llamacpp"
)

func runCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return out.String(), errOut.String(), code
}

func stories(t *testing.T) string {
	t.Helper()
	p, err := llamacpp.SharedPath("models", "stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the shared test model is missing: %v", err)
	}
	return p
}

func TestInspectShowsStories260KShape(t *testing.T) {
	out, errOut, code := runCmd(t, "inspect", stories(t))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"architecture  llama", "dim        64", "layers       5", "heads      8", "kv heads     4",
		"ffn        172", "vocab        512", "norm       rms, eps 1e-05", "bos 1, eos 2",
		"blk.4.ffn_down.weight", "f32    48",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The rendering is for people: keep it reviewed.
	path := filepath.Join("testdata", "inspect-stories260K.txt.golden")
	got := []byte(strings.Replace(out, stories(t), "stories260K.gguf", 1))
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (UPDATE_GOLDEN=1 regenerates it; review the diff):\n%s", path, got)
	}
}

func TestInspectJSONIsTheDocumentedObject(t *testing.T) {
	out, errOut, code := runCmd(t, "inspect", "--json", stories(t))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Architecture string `json:"architecture"`
		FileSize     int64  `json:"file_size"`
		Parameters   int64  `json:"parameters"`
		HParams      struct {
			Dim, Layers, Heads, KVHeads, FFN, Vocab int
		} `json:"hparams"`
		Tokenizer struct {
			Model     string `json:"model"`
			VocabSize int    `json:"vocab_size"`
			BOS       *int   `json:"bos"`
		} `json:"tokenizer"`
		Tensors []struct {
			Name  string   `json:"name"`
			Shape []uint64 `json:"shape"`
			DType string   `json:"dtype"`
			Bytes int64    `json:"bytes"`
		} `json:"tensors"`
		DTypes []struct {
			DType   string `json:"dtype"`
			Tensors int    `json:"tensors"`
		} `json:"dtypes"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&r); err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	json.Unmarshal([]byte(out), &raw)
	var hp map[string]any
	json.Unmarshal(raw["hparams"], &hp)
	got := [...]any{r.Architecture, hp["dim"], hp["layers"], hp["heads"], hp["kv_heads"], hp["ffn"], hp["vocab"], hp["norm_eps"]}
	want := [...]any{"llama", 64.0, 5.0, 8.0, 4.0, 172.0, 512.0, 1e-05}
	if got != want {
		t.Errorf("architecture, dim, layers, heads, kv_heads, ffn, vocab, norm_eps = %v, want %v", got, want)
	}
	if r.FileSize != 1185376 || r.Parameters != 292800 || len(r.Tensors) != 48 || r.Tokenizer.VocabSize != 512 || r.Tokenizer.Model != "llama" {
		t.Errorf("file_size %d, parameters %d, %d tensors, tokenizer %+v", r.FileSize, r.Parameters, len(r.Tensors), r.Tokenizer)
	}
	if len(r.DTypes) != 1 || r.DTypes[0].DType != "f32" || r.DTypes[0].Tensors != 48 {
		t.Errorf("dtypes = %+v, want 48 f32 tensors", r.DTypes)
	}
}

func TestInspectRefusesWhatIsNotAModel(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.gguf")
	os.WriteFile(bad, []byte("GGUF\x03\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\x7f"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"a missing file", []string{"inspect", "/nonexistent.gguf"}, 1, "no such file"},
		{"a truncated header", []string{"inspect", bad}, 1, "gguf"},
		{"no argument", []string{"inspect"}, 2, "usage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runCmd(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", code, errOut, tc.code, tc.want)
			}
		})
	}
}

func TestSynthThenInspect(t *testing.T) {
	out := filepath.Join(t.TempDir(), "q.gguf")
	if _, errOut, code := runCmd(t, "synth", "--arch", "qwen3", "--dim", "256", "--layers", "2", "--heads", "4",
		"--kv-heads", "2", "--head-dim", "128", "--ffn", "768", "--dtype", "q4_k", "--tied", "-o", out); code != 0 {
		t.Fatalf("synth: exit %d: %s", code, errOut)
	}
	js, errOut, code := runCmd(t, "inspect", "--json", out)
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, errOut)
	}
	var r struct {
		Architecture string
		HParams      struct {
			HeadDim    int  `json:"head_dim"`
			TiedOutput bool `json:"tied_output"`
		}
		DTypes []struct{ DType string }
	}
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatal(err)
	}
	if r.Architecture != "qwen3" || r.HParams.HeadDim != 128 || !r.HParams.TiedOutput || r.DTypes[0].DType != "q4_k" {
		t.Errorf("got %+v", r)
	}
}
