package llamacpp

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ModelInfo is what llama.cpp resolved for a model, read from the log it
// prints while loading: llama_model::print_info's lines (the hyperparameters
// its API does not expose) and load_tensors' per-layer DEBUG lines (which
// layers use the sliding window). Values are as printed, so reals carry the
// printed precision: freq_base_* to 0.1 (%.1f), the norm epsilons to two
// significant digits (%.1e).
type ModelInfo struct {
	Arch      string
	CtxTrain  int   // n_ctx_train
	Embd      int   // n_embd
	Layers    int   // n_layer: the layers the graph runs
	LayersAll int   // n_layer_all: with next-token-prediction layers
	Heads     []int // n_head, per layer (of LayersAll)
	HeadsKV   []int // n_head_kv, per layer
	FFN       []int // n_ff, per layer
	Rot       int   // n_rot
	HeadDimK  int   // n_embd_head_k
	HeadDimV  int   // n_embd_head_v

	NormEps    float64 // f_norm_eps (layer norm)
	NormRMSEps float64 // f_norm_rms_eps

	RopeType    int    // RopeTypeNorm, RopeTypeNeoX, ...
	RopeScaling string // linear, yarn, ...
	FreqBase    float64
	FreqScale   float64
	// HasSWA says llama.cpp has a sliding-window type for the model and so
	// printed the SWA RoPE lines; FreqBaseSWA is 0 without them.
	HasSWA      bool
	FreqBaseSWA float64

	SWA    int    // n_swa: the window, 0 when none
	SWAAny bool   // is_swa_any
	IsSWA  []bool // per layer (of LayersAll)

	Vocab int // n_vocab

	Log string // the whole captured log
}

// logMu serializes LoadModelInfo: file descriptor 2 and llama.cpp's log
// callback are process-wide.
var logMu sync.Mutex

// LoadModelInfo loads the model at path on the CPU with llama.cpp's default
// logger, which writes every level to stderr (llama_log_set(NULL, NULL)
// restores it, see llama-impl.cpp), captures file descriptor 2 in a
// temporary file while it loads, puts both back, and parses the log.
// The fields the API also gives (n_embd, n_layer, n_head, n_head_kv, rope
// type, n_vocab) are checked against it, so a change in the log's format is
// an error rather than a wrong value. The model is freed before it returns.
//
// It must not run concurrently with anything else that writes to stderr or
// loads a model: their output lands in the capture (Go's own writes to
// os.Stderr included), and llama.cpp's log from other threads is unsilenced
// for the duration. Should llama.cpp abort while loading, its last words
// are in the temporary file, not on the terminal.
func (l *Lib) LoadModelInfo(path string) (*ModelInfo, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("llamacpp: %w", err)
	}
	logMu.Lock()
	defer logMu.Unlock()

	var m *Model
	text, err := captureStderr(func() error {
		l.ll.logSet(0, 0)
		defer l.ll.logSet(l.logCB, 0)
		var err error
		m, err = l.LoadModel(path)
		return err
	})
	if l.logCB == 0 {
		// AKUNU_LLAMA_LOG=1: the log was meant for the terminal.
		os.Stderr.WriteString(text)
	}
	if err != nil {
		return nil, fmt.Errorf("%w; llama.cpp's log ends:\n%s", err, lastLines(text, 8))
	}
	defer m.Close()
	info, err := ParseModelInfo(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := info.agrees(m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return info, nil
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// captureStderr runs fn with file descriptor 2 pointing at a temporary file
// and returns what was written there. x/sys/unix's Dup2 is used because the
// syscall package has none on linux/arm64 (unix.Dup2 is Dup3 there).
func captureStderr(fn func() error) (string, error) {
	f, err := os.CreateTemp("", "akunu-llama-log-*.txt")
	if err != nil {
		return "", fmt.Errorf("llamacpp: capturing llama.cpp's log: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	// Close-on-exec, so a child started meanwhile does not inherit the
	// real stderr under another number.
	saved, err := unix.FcntlInt(2, unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("llamacpp: dup of stderr: %w", err)
	}
	defer unix.Close(saved)
	if err := unix.Dup2(int(f.Fd()), 2); err != nil {
		return "", fmt.Errorf("llamacpp: redirecting stderr: %w", err)
	}
	fnErr := func() error {
		defer func() {
			if err := unix.Dup2(saved, 2); err != nil {
				panic(fmt.Sprintf("llamacpp: cannot restore stderr: %v", err))
			}
		}()
		return fn()
	}()
	// llama.cpp's default logger flushes after every message, and C's
	// stderr is unbuffered: everything is in the file now.
	data, err := os.ReadFile(f.Name())
	if err != nil {
		return "", fmt.Errorf("llamacpp: reading llama.cpp's log: %w", err)
	}
	return string(data), fnErr
}

var (
	// print_info: n_head                = [8, 8, 4]
	printInfoLine = regexp.MustCompile(`^print_info: (\S(?:.*\S)?)\s+= (.*)$`)
	// load_tensors: layer   3 assigned to device CPU, is_swa = 1
	layerLine = regexp.MustCompile(`^load_tensors: layer\s+(\d+) assigned to device .*, is_swa = (\d+)$`)
)

// ParseModelInfo reads a log of llama.cpp loading one model. Every line it
// needs and cannot read is reported, by its print_info name.
func ParseModelInfo(log string) (*ModelInfo, error) {
	p := infoParser{kv: map[string]string{}}
	swa := map[int]bool{}
	for _, line := range strings.Split(log, "\n") {
		line = strings.TrimRight(line, "\r ")
		if m := printInfoLine.FindStringSubmatch(line); m != nil {
			if _, seen := p.kv[m[1]]; !seen {
				p.kv[m[1]] = strings.TrimSpace(m[2])
			}
			continue
		}
		if m := layerLine.FindStringSubmatch(line); m != nil {
			il, _ := strconv.Atoi(m[1])
			swa[il] = m[2] != "0"
		}
	}
	info := &ModelInfo{Log: log}
	info.Arch = p.str("arch")
	info.CtxTrain = p.int("n_ctx_train")
	info.Embd = p.int("n_embd")
	info.Layers = p.int("n_layer")
	info.LayersAll = p.int("n_layer_all")
	info.Heads = p.list("n_head", info.LayersAll)
	info.HeadsKV = p.list("n_head_kv", info.LayersAll)
	info.FFN = p.list("n_ff", info.LayersAll)
	info.Rot = p.int("n_rot")
	info.HeadDimK = p.int("n_embd_head_k")
	info.HeadDimV = p.int("n_embd_head_v")
	info.NormEps = p.float("f_norm_eps")
	info.NormRMSEps = p.float("f_norm_rms_eps")
	info.RopeType = p.int("rope type")
	info.RopeScaling = p.str("rope scaling")
	info.FreqBase = p.float("freq_base_train")
	info.FreqScale = p.float("freq_scale_train")
	if _, ok := p.kv["freq_base_swa"]; ok {
		info.HasSWA = true
		info.FreqBaseSWA = p.float("freq_base_swa")
	}
	info.SWA = p.int("n_swa")
	info.SWAAny = p.int("is_swa_any") != 0
	info.Vocab = p.int("n_vocab")

	// load_tensors also prints layer n_layer_all, the output layer, which
	// is never a sliding one.
	if info.LayersAll > 0 && info.LayersAll <= 1<<16 {
		info.IsSWA = make([]bool, info.LayersAll)
		var missing []string
		for il := range info.IsSWA {
			v, ok := swa[il]
			if !ok {
				missing = append(missing, strconv.Itoa(il))
			}
			info.IsSWA[il] = v
		}
		if len(missing) > 0 {
			p.errs = append(p.errs, fmt.Errorf("no load_tensors line for layer %s (is the log at DEBUG level?)", strings.Join(missing, ", ")))
		}
	}
	if len(p.errs) > 0 {
		return nil, fmt.Errorf("llamacpp: reading llama.cpp's log: %w", errors.Join(p.errs...))
	}
	return info, nil
}

// infoParser reads print_info values by name, collecting every failure.
type infoParser struct {
	kv   map[string]string
	errs []error
}

func (p *infoParser) str(key string) string {
	v, ok := p.kv[key]
	if !ok {
		p.errs = append(p.errs, fmt.Errorf("no print_info line for %s", key))
	}
	return v
}

func (p *infoParser) int(key string) int {
	s, ok := p.kv[key]
	if !ok {
		p.errs = append(p.errs, fmt.Errorf("no print_info line for %s", key))
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("print_info: %s = %q is not an integer", key, s))
	}
	return n
}

func (p *infoParser) float(key string) float64 {
	s, ok := p.kv[key]
	if !ok {
		p.errs = append(p.errs, fmt.Errorf("no print_info line for %s", key))
		return 0
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("print_info: %s = %q is not a number", key, s))
	}
	return x
}

// list reads a per-layer value, which print_info writes as one number when
// every layer has the same and as "[a, b, ...]" otherwise; either way the
// result has n entries.
func (p *infoParser) list(key string, n int) []int {
	s, ok := p.kv[key]
	if !ok {
		p.errs = append(p.errs, fmt.Errorf("no print_info line for %s", key))
		return nil
	}
	if n <= 0 || n > 1<<16 {
		return nil // n_layer_all is missing or absurd, and reported as such
	}
	if !strings.HasPrefix(s, "[") {
		x, err := strconv.Atoi(s)
		if err != nil {
			p.errs = append(p.errs, fmt.Errorf("print_info: %s = %q is not an integer", key, s))
			return nil
		}
		out := make([]int, n)
		for i := range out {
			out[i] = x
		}
		return out
	}
	inner, closed := strings.CutSuffix(s[1:], "]")
	parts := strings.Split(inner, ",")
	if !closed || len(parts) != n {
		p.errs = append(p.errs, fmt.Errorf("print_info: %s = %q is not a list of %d layers", key, s, n))
		return nil
	}
	out := make([]int, n)
	for i, part := range parts {
		x, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			p.errs = append(p.errs, fmt.Errorf("print_info: %s = %q: entry %d is not an integer", key, s, i))
			return nil
		}
		out[i] = x
	}
	return out
}

// agrees holds the parsed log to what llama.cpp's API says of the model.
func (info *ModelInfo) agrees(m *Model) error {
	first := func(xs []int) int {
		if len(xs) == 0 {
			return -1
		}
		return xs[0]
	}
	var errs []error
	for _, c := range []struct {
		name     string
		log, api int
	}{
		{"n_embd", info.Embd, m.NEmbd()},
		{"n_layer", info.Layers, m.NLayer()},
		{"n_head", first(info.Heads), m.NHead()},
		{"n_head_kv", first(info.HeadsKV), m.NHeadKV()},
		{"n_ctx_train", info.CtxTrain, m.NCtxTrain()},
		{"rope type", info.RopeType, m.RopeType()},
		{"n_vocab", info.Vocab, m.NVocab()},
	} {
		if c.log != c.api {
			errs = append(errs, fmt.Errorf("the log says %s = %d, the API %d", c.name, c.log, c.api))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("llamacpp: llama.cpp's log and API disagree (has the log's format changed?): %w", errors.Join(errs...))
	}
	return nil
}
