package llamacpp_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/akunu-dev/akunu/internal/llamacpp"
)

// gemma3Log is what llama.cpp printed at every level while loading a
// synthetic gemma3 of 9 layers with a window of 32 and a sliding pattern of
// 4 (akunuc synth), the per-tensor lines of layers 1-8 cut.
func gemma3Log(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "gemma3-9-layers.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func repeat[T any](x T, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = x
	}
	return out
}

func TestParseModelInfoReadsACapturedLoad(t *testing.T) {
	log := gemma3Log(t)
	got, err := llamacpp.ParseModelInfo(log)
	if err != nil {
		t.Fatal(err)
	}
	got.Log = ""
	want := &llamacpp.ModelInfo{
		Arch: "gemma3", CtxTrain: 2048, Embd: 64, Layers: 9, LayersAll: 9,
		Heads: repeat(2, 9), HeadsKV: repeat(2, 9), FFN: repeat(100, 9),
		Rot: 32, HeadDimK: 32, HeadDimV: 32,
		NormEps: 0, NormRMSEps: 1e-5,
		RopeType: llamacpp.RopeTypeNeoX, RopeScaling: "linear", FreqBase: 10000, FreqScale: 1,
		HasSWA: true, FreqBaseSWA: 10000,
		SWA: 32, SWAAny: true,
		IsSWA: []bool{true, true, true, false, true, true, true, false, true},
		Vocab: 336,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed\n%+v\nwant\n%+v", got, want)
	}
}

func TestParseModelInfoVariants(t *testing.T) {
	log := gemma3Log(t)
	edit := func(old, new string) string {
		t.Helper()
		if !strings.Contains(log, old) {
			t.Fatalf("the sample has no %q", old)
		}
		return strings.Replace(log, old, new, 1)
	}
	cases := []struct {
		name  string
		log   string
		check func(*llamacpp.ModelInfo) string // "" when right
		err   []string                         // substrings of the error, when one is wanted
	}{
		{
			name: "per-layer counts printed as a list are read layer by layer",
			log:  edit("n_head_kv             = 2\n", "n_head_kv             = [2, 2, 1, 1, 2, 2, 1, 1, 2]\n"),
			check: func(m *llamacpp.ModelInfo) string {
				if want := []int{2, 2, 1, 1, 2, 2, 1, 1, 2}; !reflect.DeepEqual(m.HeadsKV, want) {
					return fmt.Sprintf("HeadsKV = %v, want %v", m.HeadsKV, want)
				}
				if !reflect.DeepEqual(m.FFN, repeat(100, 9)) {
					return fmt.Sprintf("FFN = %v", m.FFN)
				}
				return ""
			},
		},
		{
			name: "a model without a sliding-window type has no SWA RoPE base",
			log:  edit("print_info: freq_base_swa         = 10000.0\n", ""),
			check: func(m *llamacpp.ModelInfo) string {
				if m.HasSWA || m.FreqBaseSWA != 0 {
					return fmt.Sprintf("HasSWA %v, FreqBaseSWA %g", m.HasSWA, m.FreqBaseSWA)
				}
				return ""
			},
		},
		{
			name: "a list of the wrong length is an error",
			log:  edit("n_ff                  = 100\n", "n_ff                  = [100, 200]\n"),
			err:  []string{`n_ff = "[100, 200]" is not a list of 9 layers`},
		},
		{
			name: "every missing line is reported, by name",
			log: strings.Replace(edit("print_info: n_embd                = 64\n", ""),
				"load_tensors: layer   3 assigned to device CPU, is_swa = 0\n", "", 1),
			err: []string{"no print_info line for n_embd", "no load_tensors line for layer 3"},
		},
		{
			name: "a value that is not a number is an error",
			log:  edit("freq_base_train       = 10000.0", "freq_base_train       = ten thousand"),
			err:  []string{`freq_base_train = "ten thousand" is not a number`},
		},
		{
			name: "carriage returns are ignored",
			log:  strings.ReplaceAll(log, "\n", "\r\n"),
			check: func(m *llamacpp.ModelInfo) string {
				if m.Vocab != 336 || len(m.IsSWA) != 9 {
					return fmt.Sprintf("Vocab %d, IsSWA %v", m.Vocab, m.IsSWA)
				}
				return ""
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := llamacpp.ParseModelInfo(tc.log)
			if tc.err != nil {
				if err == nil {
					t.Fatal("no error")
				}
				for _, s := range tc.err {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg := tc.check(m); msg != "" {
				t.Error(msg)
			}
		})
	}
}

// TestLoadModelInfoPutsStderrAndTheSilenceBack loads stories260K through
// the log capture, then checks that file descriptor 2 is the file it was
// and that a plain load prints nothing again.
func TestLoadModelInfoPutsStderrAndTheSilenceBack(t *testing.T) {
	l, _ := stories(t)
	path, err := llamacpp.SharedPath("models", "stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	var before, after unix.Stat_t
	if err := unix.Fstat(2, &before); err != nil {
		t.Fatal(err)
	}
	info, err := l.LoadModelInfo(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Fstat(2, &after); err != nil {
		t.Fatal(err)
	}
	if before.Dev != after.Dev || before.Ino != after.Ino {
		t.Error("file descriptor 2 is not the file it was before the capture")
	}
	if info.Arch != "llama" || info.FFN[0] != 172 || info.HeadDimK != 8 || info.NormRMSEps != 1e-5 || info.FreqBase != 10000 {
		t.Errorf("stories260K: %+v", info)
	}
	if !strings.Contains(info.Log, "print_info: n_ff                  = 172") {
		t.Error("the captured log lacks the n_ff line")
	}

	if os.Getenv("AKUNU_LLAMA_LOG") == "1" {
		return // llama.cpp is meant to talk
	}
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved, err := unix.Dup(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Dup2(int(f.Fd()), 2); err != nil {
		t.Fatal(err)
	}
	m, loadErr := l.LoadModel(path)
	if err := unix.Dup2(saved, 2); err != nil {
		panic(err)
	}
	unix.Close(saved)
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	m.Close()
	if out, _ := os.ReadFile(f.Name()); len(out) > 0 {
		t.Errorf("llama.cpp is no longer silenced after LoadModelInfo: it wrote %d bytes, starting %.200q", len(out), out)
	}
}
