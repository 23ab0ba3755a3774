#!/usr/bin/env bash
# Runs every fuzz target of the module (every `func FuzzXxx` in a _test.go
# file) for FUZZTIME each. make test runs it briefly; make fuzz for long.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
grep -rE --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]*' --exclude-dir=.cache . | sort |
while IFS=: read -r file decl; do
  name=${decl#func }
  pkg=./$(dirname "${file#./}")
  echo "fuzz $pkg $name ($fuzztime)"
  go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" "$pkg" </dev/null
done
