package server_test

// TestOpenAIConformance drives real akunu servers with OpenAI's official
// JavaScript client (npm: openai, pinned by scripts/fetch-openai.sh): what
// a client built on the SDK sees, through the SDK's own parsing of bodies,
// streams and errors. The checks live in testdata/openai/conformance.mjs;
// this test starts the servers, runs it with node and reports its lines.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/server"
	"github.com/akunu-dev/akunu/specs/chips"
)

// conformanceKey is the key of the keyed server; conformanceRPM the rate
// limit of the limited one (the script makes that many requests, then
// expects a 429).
const (
	conformanceKey = "sk-akunu-conformance"
	conformanceRPM = 2
)

func TestOpenAIConformance(t *testing.T) {
	node, sdk := requireOpenAISDK(t)
	gguf := conformanceModel(t)
	tmpl := conformanceTemplate(t)
	plan := conformancePlan(t, gguf)
	var logs conformanceLog
	base := server.Config{Plans: []string{plan}, Models: map[string]string{plan: gguf}, TemplateSource: tmpl, Parallel: 2, Threads: 2, Log: &logs}

	// The main server serves an embedding model beside it (a synthetic
	// BERT).
	main := base
	bert, bertGGUF := server.BERTPlan(t)
	main.Plans = []string{plan, bert}
	main.Models = map[string]string{plan: gguf, bert: bertGGUF}
	mainURL := startConformanceServer(t, main)
	keyed := base
	keyed.APIKeys = []string{conformanceKey}
	limited := base
	limited.RateLimit = conformanceRPM
	keyedURL := startConformanceServer(t, keyed)
	limitedURL := startConformanceServer(t, limited)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})

	// An ES module resolves a bare import ("openai") from its own
	// directory up, and NODE_PATH does not apply: run a copy of the
	// script next to a node_modules that links to the install.
	src, err := os.ReadFile(filepath.Join("testdata", "openai", "conformance.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "conformance.mjs")
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(sdk), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"AKUNU_BASE_URL="+mainURL+"/v1",
		"AKUNU_MODEL="+conformanceModelID,
		"AKUNU_EMBED_MODEL="+strings.TrimSuffix(filepath.Base(bert), ".plan"),
		"AKUNU_KEYED_BASE_URL="+keyedURL+"/v1",
		"AKUNU_KEYED_KEY="+conformanceKey,
		"AKUNU_LIMITED_BASE_URL="+limitedURL+"/v1",
		"AKUNU_LIMITED_RPM="+strconv.Itoa(conformanceRPM),
	)
	cmd.WaitDelay = 5 * time.Second
	out, err := runLogged(t, cmd)
	if ctx.Err() != nil {
		t.Fatalf("node %s: timed out after %s", script, 2*time.Minute)
	}
	if err != nil {
		t.Fatalf("node %s: %v (the failed cases are above)", script, err)
	}
	// Every case runs here: the script skips only those of servers it
	// was not given.
	if !bytes.Contains(out, []byte(" 0 failed, 0 skipped")) {
		t.Fatalf("node %s exited 0 without the summary line of a full run", script)
	}
}

// requireOpenAISDK finds node and the openai package scripts/fetch-openai.sh
// installs; without them the test fails with how to get them, or skips
// when AKUNU_SKIP_NODE=1.
func requireOpenAISDK(t *testing.T) (node, pkg string) {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("AKUNU_SKIP_NODE") == "1" {
			t.Skipf("AKUNU_SKIP_NODE=1: %s", msg)
		}
		t.Fatalf("%s (or set AKUNU_SKIP_NODE=1 to skip)", msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed: install Node.js >= 20 (Debian: nodejs), then run scripts/fetch-openai.sh")
	}
	root, err := llamacpp.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pkg = filepath.Join(root, ".cache", "openai", "node_modules", "openai")
	if _, err := os.Stat(filepath.Join(pkg, "package.json")); err != nil {
		missing("the openai npm package is not installed in %s: run scripts/fetch-openai.sh", pkg)
	}
	return node, pkg
}

func conformanceModel(t *testing.T) string {
	t.Helper()
	return proof.Shared(t, "models", "stories260K.gguf")
}

// conformanceTemplate is Qwen3's chat template: stories260K has none, and
// this one renders tools and knows <think>.
func conformanceTemplate(t *testing.T) string {
	t.Helper()
	p, err := llamacpp.SharedPath("templates", "Qwen-Qwen3-0.6B.jinja")
	if err != nil {
		proof.Missing(t, "Qwen3 chat template (../shared/templates)", err.Error())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		proof.Missing(t, "Qwen3 chat template (../shared/templates)", err.Error())
	}
	return string(b)
}

// conformanceModelID is the model's id: the plan's file name.
const conformanceModelID = "stories260K"

// conformancePlan compiles stories260K for a 2-core CPU target (one the
// CPU backend runs on any amd64 machine).
func conformancePlan(t *testing.T, gguf string) string {
	t.Helper()
	prof, err := chips.Resolve("cpu-avx2:2", 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := compiler.Compile(gguf, compiler.Options{Chip: prof})
	if err != nil {
		t.Fatalf("compile %s: %v", gguf, err)
	}
	out := filepath.Join(t.TempDir(), conformanceModelID+".plan")
	if err := plans.WriteFile(out, p); err != nil {
		t.Fatal(err)
	}
	return out
}

// startConformanceServer serves cfg on 127.0.0.1:0 with its model loaded,
// and shuts it down when the test ends; it returns the server's URL.
func startConformanceServer(t *testing.T, cfg server.Config) string {
	t.Helper()
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Load(ctx); err != nil {
		t.Fatal(err)
	}
	return "http://" + l.Addr().String()
}

// runLogged runs cmd, its stdout and stderr interleaved into the test's
// log line by line as they come; it returns all of it.
func runLogged(t *testing.T, cmd *exec.Cmd) ([]byte, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	var all bytes.Buffer
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		t.Log(sc.Text())
		all.Write(sc.Bytes())
		all.WriteByte('\n')
	}
	r.Close()
	return all.Bytes(), cmd.Wait()
}

// conformanceLog collects the servers' logs, shown when the test fails.
type conformanceLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *conformanceLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *conformanceLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
