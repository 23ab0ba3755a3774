package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/internal/llamacpp"
)

// TestEveryBadFlagIsOneLineAndExit2 runs each refused flag value through
// the real command entry, with a real plan, so that a flag left unchecked
// shows as what it would do: a success (exit 0), another error, a panic
// or a hang (a server that starts).
func TestEveryBadFlagIsOneLineAndExit2(t *testing.T) {
	plan := compileShared(t, "models", "stories260K.gguf")
	model, err := llamacpp.SharedPath("models", "stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		cmd  string
		flag string // the flag the line must name
		args []string
	}
	var cases []tc
	add := func(cmd, flag string, args ...string) { cases = append(cases, tc{cmd, flag, args}) }
	for _, cmd := range []string{"run", "chat"} {
		add(cmd, "n", "-n", "0")
		add(cmd, "n", "-n", "-5")
		add(cmd, "n", "-n", "many")
		add(cmd, "temp", "--temp", "-0.5")
		add(cmd, "temp", "--temp", "NaN")
		add(cmd, "temp", "--temp", "Inf")
		add(cmd, "top-p", "--top-p", "0")
		add(cmd, "top-p", "--top-p", "1.5")
		add(cmd, "top-p", "--top-p", "nan")
		add(cmd, "top-k", "--top-k", "-1")
		add(cmd, "min-p", "--min-p", "-0.1")
		add(cmd, "min-p", "--min-p", "1")
		add(cmd, "repeat-penalty", "--repeat-penalty", "0")
		add(cmd, "repeat-penalty", "--repeat-penalty", "-1")
		add(cmd, "repeat-penalty", "--repeat-penalty", "NaN")
		add(cmd, "seed", "--seed", "abc")
		add(cmd, "seed", "--seed", "-2")
		add(cmd, "seed", "--seed", "4294967296")
		add(cmd, "seed", "--seed", "99999999999999999999")
		add(cmd, "threads", "--threads", "-1")
		add(cmd, "threads", "--threads", "1000000")
		add(cmd, "bogus", "--bogus", "1")
	}
	add("run", "top-logits", "--top-logits", "-1")
	add("run", "top-logits", "--top-logits", "5")
	add("run", "json", "--json=maybe")
	add("run", "p", "-p")
	add("run", "json-object", "--grammar", "g.gbnf", "--json-object")
	add("run", "json-schema", "--grammar", "g.gbnf", "--json-schema", "s.json")
	add("chat", "json-object", "--json-schema", "s.json", "--json-object")
	add("bench", "spec", "--spec", "ngram", "--grammar", "g.gbnf")
	add("bench", "p", "-p", "0")
	add("bench", "n", "-n", "0")
	add("bench", "r", "-r", "0")
	add("bench", "r", "-r", "-3")
	add("bench", "batch", "--batch", "0")
	add("bench", "batch", "--batch", "1,x")
	add("bench", "batch", "--batch", "99999")
	add("bench", "threads", "--threads", "-3")
	add("bench", "p", "-p", "5000", "-r", "1")                         // past the plan's context of 256
	add("bench", "n", "-p", "16", "-c", "200", "-n", "100", "-r", "1") // decode past the context
	add("bench", "n", "-p", "16", "-n", "300", "-r", "1")
	add("bench", "c", "-c", "0")
	add("serve", "port", "--port", "-1")
	add("serve", "port", "--port", "65536")
	add("serve", "parallel", "--parallel", "0")
	add("serve", "parallel", "--parallel", "-4")
	add("serve", "parallel", "--parallel", "100000")
	add("serve", "ctx", "--ctx", "-1")
	add("serve", "rate-limit", "--rate-limit", "-1")
	add("serve", "max-queue", "--max-queue", "0")
	add("serve", "idle-unload", "--idle-unload", "-1s")
	add("serve", "drain", "--drain", "-5s")
	add("serve", "drain", "--drain", "5")
	add("serve", "prefill-rows", "--prefill-rows", "-1")
	add("serve", "prefill-rows-busy", "--prefill-rows-busy", "0")
	add("serve", "memory-budget", "--memory-budget", "lots")
	add("serve", "memory-budget", "--memory-budget", "-1G")
	add("serve", "threads", "--threads", "100000000")
	add("verify", "n", "-n", "-1")
	add("verify", "threads", "--threads", "-1")
	add("tokenize", "vectors", "--vectors")
	add("tokenize", "bogus", "--bogus")
	add("detokenize", "special", "--special=2")

	var clean, panics, hangs, successes int
	for _, c := range cases {
		args := []string{c.cmd, plan, "--model", model}
		if c.cmd != "verify" {
			args = append(args, "--backend", "cpu")
		}
		args = append(args, c.args...)
		if c.cmd == "tokenize" || c.cmd == "detokenize" {
			args = append([]string{c.cmd, plan}, c.args...)
		}
		t.Run(strings.Join(append([]string{c.cmd}, c.args...), " "), func(t *testing.T) {
			type result struct {
				code        int
				out, errOut string
				panicked    any
			}
			done := make(chan result, 1)
			go func() {
				var r result
				defer func() {
					if p := recover(); p != nil {
						r.panicked = p
					}
					done <- r
				}()
				var out, errOut bytes.Buffer
				r.code = runIO(args, strings.NewReader("hi\n/exit\n"), &out, &errOut)
				r.out, r.errOut = out.String(), errOut.String()
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				hangs++
				t.Fatalf("still running after 30s")
			}
			want := fmt.Sprintf("akunu %s: %s ", c.cmd, cli.Dashed(c.flag))
			switch {
			case r.panicked != nil:
				panics++
				t.Fatalf("panic: %v", r.panicked)
			case r.code == 0:
				successes++
				t.Fatalf("accepted: stdout %q, stderr %q", r.out, r.errOut)
			case r.code != 2 || !strings.HasPrefix(r.errOut, want) || strings.Count(r.errOut, "\n") != 1 || r.out != "":
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and one line starting %q", r.code, r.out, r.errOut, want)
			}
			clean++
			t.Log(strings.TrimSpace(r.errOut))
		})
	}
	t.Logf("flags: %d tries, %d clean errors, %d panics, %d hangs, %d silent successes", len(cases), clean, panics, hangs, successes)
}

// TestHelpIsHelp: -h still prints a command's help, to stdout, exit 0.
func TestHelpIsHelp(t *testing.T) {
	for _, cmd := range []string{"run", "chat", "bench", "serve", "verify", "tokenize", "detokenize"} {
		out, errOut, code := runAkunu(cmd, "-h")
		if code != 0 || !strings.HasPrefix(out, "usage: akunu "+cmd) || !strings.Contains(out, "flags:") || errOut != "" {
			t.Errorf("%s -h: exit %d, stdout %q, stderr %q", cmd, code, out, errOut)
		}
	}
}
