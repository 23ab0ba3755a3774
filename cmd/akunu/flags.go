package main

import (
	"fmt"
	"math"
	goruntime "runtime"
	"strconv"
	"time"

	"github.com/akunu-dev/akunu/internal/cli"
)

// Every numeric flag is checked right after parsing, before any file is
// read: a refused value is one line naming the flag and what it takes
// (cli.FlagError, exit status 2). A flag the runtime would clamp or
// replace with a default is refused instead, so that no command does
// something other than what it was told.

// firstError is the first non-nil error of checks.
func firstError(checks ...error) error {
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return nil
}

func badFlag(name string, v any, format string, args ...any) error {
	return cli.FlagError{Flag: name, Msg: fmt.Sprintf("%v: ", v) + fmt.Sprintf(format, args...)}
}

// atLeast refuses v below lo; note says what the smallest value means.
func atLeast(name string, v, lo int, note string) error {
	if v < lo {
		return badFlag(name, v, "must be at least %d%s", lo, note)
	}
	return nil
}

// intIn refuses v outside [lo, hi].
func intIn(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return badFlag(name, v, "must be in [%d, %d]", lo, hi)
	}
	return nil
}

// floatIn refuses v outside lo..hi (open at either end where asked), NaN
// and infinities among them.
func floatIn(name string, v, lo, hi float64, loOpen, hiOpen bool) error {
	below := v < lo || (loOpen && v == lo)
	above := v > hi || (hiOpen && v == hi)
	if math.IsNaN(v) || math.IsInf(v, 0) || below || above {
		l, r := "[", "]"
		if loOpen {
			l = "("
		}
		if hiOpen {
			r = ")"
		}
		hs := strconv.FormatFloat(hi, 'g', -1, 64)
		if math.IsInf(hi, 1) {
			hs = "∞"
		}
		return badFlag(name, strconv.FormatFloat(v, 'g', -1, 64), "must be a number in %s%s, %s%s", l, strconv.FormatFloat(lo, 'g', -1, 64), hs, r)
	}
	return nil
}

// notNegative refuses a negative duration.
func notNegative(name string, d time.Duration) error {
	if d < 0 {
		return badFlag(name, d, "must not be negative")
	}
	return nil
}

// maxThreads bounds --threads: past a few threads a core they only wait
// on each other, and a million of them hang the process starting them.
func maxThreads() int { return 4 * goruntime.NumCPU() }

func checkThreads(v int) error {
	if v < 0 {
		return badFlag("threads", v, "must be at least 0 (0: every core)")
	}
	if hi := maxThreads(); v > hi {
		return badFlag("threads", v, "must be at most %d (4 × the %d cores here; more threads only wait on each other)", hi, goruntime.NumCPU())
	}
	return nil
}

// check is the load flags' part.
func (lf loadFlags) check() error { return checkThreads(*lf.threads) }

// maxSeed is the largest seed: the samplers' state is 32 bits, and a
// larger one would be cut to its low bits, another seed than the one
// asked for.
const maxSeed = math.MaxUint32

// check refuses sampling settings that mean nothing (llama.cpp's meanings).
func (f samplingFlags) check() error {
	return firstError(
		floatIn("temp", *f.temp, 0, math.Inf(1), false, true),
		atLeast("top-k", *f.topK, 0, " (0: every token)"),
		floatIn("top-p", *f.topP, 0, 1, true, false),
		floatIn("min-p", *f.minP, 0, 1, false, true),
		floatIn("repeat-penalty", *f.rep, 0, math.Inf(1), true, true),
		func() error {
			if *f.seed < -1 || *f.seed > maxSeed {
				return badFlag("seed", *f.seed, "must be in [-1, %d] (-1: a fresh one)", uint64(maxSeed))
			}
			return nil
		}(),
	)
}

// checkTopLogits: --top-logits is a field of the JSON object, nothing
// else prints it.
func checkTopLogits(k int, asJSON bool) error {
	if k < 0 {
		return badFlag("top-logits", k, "must be at least 0")
	}
	if k > 0 && !asJSON {
		return badFlag("top-logits", k, "needs --json (the pairs are a field of its object)")
	}
	return nil
}
