package proof

import (
	"fmt"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/internal/llamacpp"
)

// Env names the file make test collects skipped proofs in.
const Env = "AKUNU_SKIPPED_PROOFS"

// Missing ends the test t, whose proof needs a tool this machine lacks:
// what is the claim left unproven ("the MSL kernels are not checked"), why
// the missing tool and how to get it. In CI it is a failure.
func Missing(t testing.TB, what, why string) {
	t.Helper()
	msg := what + ": " + why
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI installs every tool a proof needs: .ci/run)", msg)
		return
	}
	if path := os.Getenv(Env); path != "" {
		if err := record(path, t.Name()+": "+msg); err != nil {
			t.Logf("%s: %v", Env, err)
		}
	}
	t.Skip(msg)
}

// Shared is the path of a file the tests read from ../shared (the models,
// vocabularies and templates beside the checkout: llamacpp.SharedPath);
// where it is not there, t ends as Missing naming it.
func Shared(t testing.TB, elem ...string) string {
	t.Helper()
	p, err := llamacpp.SharedPath(elem...)
	if err == nil {
		_, err = os.Stat(p)
	}
	if err != nil {
		Missing(t, "../shared/"+path.Join(elem...), err.Error())
	}
	return p
}

// Elsewhere ends the test t, whose proof needs hardware that CI machines
// never have (an NVIDIA GPU): like Missing it adds what is left unproven
// to the list make test prints at its end, so the skip is seen, but in CI
// too it skips, since no tool can be installed to run it there.
func Elsewhere(t testing.TB, what, why string) {
	t.Helper()
	msg := what + ": " + why
	if path := os.Getenv(Env); path != "" {
		if err := record(path, t.Name()+": "+msg); err != nil {
			t.Logf("%s: %v", Env, err)
		}
	}
	t.Skip(msg)
}

// record appends line to path. go test checks the files a test opened
// inside the module before it replays a cached result, and never caches
// one that opened a file modified in the last two seconds: with the file
// inside the module (make test's is .cache/skipped-proofs), a skip is
// announced on every run, not only the first.
func record(path, line string) error {
	if i := strings.LastIndexByte(path, '/'); i > 0 {
		if err := os.MkdirAll(path[:i], 0o755); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
