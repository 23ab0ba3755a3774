package llamacpp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	"github.com/ebitengine/purego"
)

// ErrNotInstalled is wrapped by Load's error when the library directory or
// one of its libraries is missing.
var ErrNotInstalled = errors.New("llama.cpp libraries not installed")

// Lib is the loaded set of llama.cpp libraries. There is one per process.
type Lib struct {
	Dir string // the library directory the libraries were loaded from

	ggml ggmlFuncs
	ll   llamaFuncs

	// logCB is the log callback load installed: the no-op that silences
	// llama.cpp, or 0 for llama.cpp's default (AKUNU_LLAMA_LOG=1).
	// LoadModelInfo puts it back after capturing a load's log.
	logCB uintptr
}

var (
	loadOnce sync.Once
	loaded   *Lib
	loadErr  error
)

// Load opens llama.cpp's libraries once per process and returns them, or the
// error of the first attempt.
func Load() (*Lib, error) {
	loadOnce.Do(func() { loaded, loadErr = load() })
	return loaded, loadErr
}

// platformDir is node-llama-cpp's name for this platform's package and its
// bins/ subdirectory.
func platformDir() (string, error) {
	switch runtime.GOOS + "/" + runtime.GOARCH {
	case "linux/amd64":
		return "linux-x64", nil
	case "linux/arm64":
		return "linux-arm64", nil
	case "darwin/arm64":
		return "mac-arm64-metal", nil
	case "darwin/amd64":
		return "mac-x64", nil
	}
	return "", fmt.Errorf("llamacpp: no prebuilt llama.cpp package for %s/%s", runtime.GOOS, runtime.GOARCH)
}

// RepoRoot returns the directory holding the module's go.mod, found by
// walking up from the working directory (tests run in their package's
// directory) and, failing that, from this source file.
func RepoRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	for _, dir := range starts {
		for d := dir; ; {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				return d, nil
			}
			parent := filepath.Dir(d)
			if parent == d {
				break
			}
			d = parent
		}
	}
	return "", errors.New("llamacpp: no go.mod above the working directory")
}

// SharedPath joins elem onto the project's shared directory, ../shared
// relative to the repository root (models, vocab test vectors).
func SharedPath(elem ...string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(append([]string{filepath.Dir(root), "shared"}, elem...)...), nil
}

// LibDir is where Load looks for the libraries: $AKUNU_LLAMA_LIB if set, else
// the directory scripts/fetch-llama.sh installs into.
func LibDir() (string, error) {
	if d := os.Getenv("AKUNU_LLAMA_LIB"); d != "" {
		return d, nil
	}
	plat, err := platformDir()
	if err != nil {
		return "", err
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".cache", "llama", "node_modules", "@node-llama-cpp", plat, "bins", plat), nil
}

func notInstalled(format string, args ...any) error {
	return fmt.Errorf("%w: %s; run scripts/fetch-llama.sh (make llama)", ErrNotInstalled, fmt.Sprintf(format, args...))
}

// findLib finds lib<name> in dir under the spellings the npm packages use:
// libggml-base.so, libllama.v0.5.0.so, libllama.dylib, libllama.0.dylib.
func findLib(dir, name string) (string, error) {
	patterns := []string{
		"lib" + name + ".so", "lib" + name + ".v*.so", "lib" + name + ".so.*",
		"lib" + name + ".dylib", "lib" + name + ".*.dylib",
	}
	for _, p := range patterns {
		m, _ := filepath.Glob(filepath.Join(dir, p))
		if len(m) > 0 {
			sort.Strings(m)
			return m[len(m)-1], nil
		}
	}
	return "", notInstalled("no lib%s in %s", name, dir)
}

func load() (*Lib, error) {
	dir, err := LibDir()
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, notInstalled("library directory %s is missing", dir)
	}
	l := &Lib{Dir: dir}
	// Load order matters: libggml and libllama resolve libggml-base by
	// soname, and RTLD_GLOBAL lets the CPU backend, loaded later by ggml
	// itself, find the base library's symbols.
	var handles [3]uintptr
	for i, name := range []string{"ggml-base", "ggml", "llama"} {
		path, err := findLib(dir, name)
		if err != nil {
			return nil, err
		}
		h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			return nil, fmt.Errorf("llamacpp: dlopen %s: %w", path, err)
		}
		handles[i] = h
	}
	if err := l.ggml.bind(handles[0], handles[1]); err != nil {
		return nil, err
	}
	if err := l.ll.bind(handles[2]); err != nil {
		return nil, err
	}
	if os.Getenv("AKUNU_LLAMA_LOG") != "1" {
		noop, err := silence(handles[2], l.ll.logSet)
		if err != nil {
			return nil, err
		}
		l.logCB = noop
	}
	l.ll.backendInit()
	// The CPU backend is a separate library per instruction-set level
	// (libggml-cpu-haswell.so, ...); ggml scores them and loads the best.
	l.ggml.loadAllFromPath(dir)
	return l, nil
}

// silence points llama.cpp's (and ggml's) log callback at a C function that
// takes no arguments and has no effects, so every message is dropped. A Go
// callback would be nicer but unsafe: without cgo, purego callbacks cannot
// run on threads that C created, and ggml logs from its worker threads.
// Calling a no-argument function with extra arguments is harmless on every
// ABI we run on (the caller owns argument registers and the stack).
func silence(llama uintptr, logSet func(cb, userData uintptr)) (uintptr, error) {
	noop, err := purego.Dlsym(llama, "llama_max_devices")
	if err != nil {
		return 0, fmt.Errorf("llamacpp: %w", err)
	}
	logSet(noop, 0)
	return noop, nil
}

// binder registers C functions into Go function variables and remembers the
// first symbol that is missing, so a version mismatch is one clear error.
type binder struct {
	err error
}

func (b *binder) fn(h uintptr, name string, fptr any) {
	if b.err != nil {
		return
	}
	sym, err := purego.Dlsym(h, name)
	if err != nil {
		b.err = fmt.Errorf("llamacpp: symbol %s not found (wrong llama.cpp version? run scripts/fetch-llama.sh): %w", name, err)
		return
	}
	purego.RegisterFunc(fptr, sym)
}

func (b *binder) sym(h uintptr, name string) uintptr {
	if b.err != nil {
		return 0
	}
	sym, err := purego.Dlsym(h, name)
	if err != nil {
		b.err = fmt.Errorf("llamacpp: symbol %s not found (wrong llama.cpp version? run scripts/fetch-llama.sh): %w", name, err)
	}
	return sym
}

// TB is the part of testing.TB that Require uses (kept small so this package
// does not import testing).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// Require loads the libraries or ends the test: it fails with the reason
// (and the hint to run make llama), or skips when AKUNU_SKIP_LLAMA=1.
func Require(t TB) *Lib {
	t.Helper()
	l, err := Load()
	if err != nil {
		if os.Getenv("AKUNU_SKIP_LLAMA") == "1" {
			t.Skipf("AKUNU_SKIP_LLAMA=1: %v", err)
		}
		t.Fatalf("%v", err)
	}
	return l
}

// SourceDir is llama.cpp's source tree of the pinned release, which
// scripts/fetch-llama-src.sh installs (tests read its test cases as data):
// $AKUNU_LLAMA_SRC if set, else <repo>/.cache/llama-src/llama.cpp. The error
// wraps ErrNotInstalled when it is not there.
func SourceDir() (string, error) {
	dir := os.Getenv("AKUNU_LLAMA_SRC")
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, ".cache", "llama-src", "llama.cpp")
	}
	if _, err := os.Stat(filepath.Join(dir, "tests")); err != nil {
		return "", fmt.Errorf("%w: llama.cpp's source is not in %s; run scripts/fetch-llama-src.sh (make llama-src)", ErrNotInstalled, dir)
	}
	return dir, nil
}

// SourceFile reads a file of llama.cpp's pinned source, rel to its root
// (tests read llama.cpp's test cases this way); the error wraps
// ErrNotInstalled when the source is not there.
func SourceFile(rel string) (string, error) {
	dir, err := SourceDir()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		return "", fmt.Errorf("llama.cpp source %s: %w", rel, err)
	}
	return string(b), nil
}
