#!/usr/bin/env bash
# Runs every fuzz target of the module (every `func FuzzXxx` in a _test.go
# file) for FUZZTIME each. make test runs it briefly; make fuzz for long.
#
# Go's fuzz coordinator (through 1.26) can fail a target with a bare
# "context deadline exceeded" when -fuzztime runs out while a worker is
# mid-call (golang/go#75804; fixed in 1.27). That failure writes no crasher.
# A failing input always does (pkg/testdata/fuzz/FuzzXxx/...), so a failure
# counts only if the run wrote a new input there or said something else;
# the deadline race alone is reported and the target is run once more.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}

corpus() { # the inputs a target has written so far, one path a line
  find "$1" -type f 2>/dev/null | sort || true
}

fuzz_one() { # pkg name -> 0 pass, 1 real failure, 2 deadline race only
  local pkg=$1 name=$2 dir=$1/testdata/fuzz/$2 log rc before after
  log=$(mktemp)
  before=$(corpus "$dir")
  set +e
  go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" "$pkg" </dev/null 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  after=$(corpus "$dir")
  if [ "$rc" -eq 0 ]; then rm -f "$log"; return 0; fi
  if [ "$before" != "$after" ]; then
    echo "fuzz: $name wrote a failing input under $dir"
    rm -f "$log"; return 1
  fi
  # Only the race: its one failure line and nothing that reads like a
  # crash (panic, a t.Error from the target, a timeout of a single input).
  if grep -q '^    context deadline exceeded$' "$log" &&
     ! grep -qE 'panic:|_test\.go:[0-9]+:|fuzzing process hung|Failing input' "$log"; then
    rm -f "$log"; return 2
  fi
  rm -f "$log"; return 1
}

grep -rE --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]*' --exclude-dir=.cache . | sort |
while IFS=: read -r file decl; do
  name=${decl#func }
  pkg=./$(dirname "${file#./}")
  echo "fuzz $pkg $name ($fuzztime)"
  for try in 1 2 3; do
    rc=0; fuzz_one "$pkg" "$name" || rc=$?
    [ "$rc" -eq 0 ] && break
    [ "$rc" -eq 1 ] && exit 1
    if [ "$try" -eq 3 ]; then echo "fuzz: $name failed three times on the deadline race"; exit 1; fi
    echo "fuzz: $name hit Go's fuzztime deadline race (golang/go#75804), no failing input; again"
  done
done
