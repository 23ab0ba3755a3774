#!/usr/bin/env bash
# fetch-openai.sh installs OpenAI's official JavaScript client (npm: openai),
# which the server's conformance test drives against a real akunu server
# (runtime/server/conformance_test.go runs
# runtime/server/testdata/openai/conformance.mjs with node).
#
# It is pinned to one version so every checkout checks the same client; the
# package has no dependencies (ws and zod are optional peers, left out). The
# install lands in <repo>/.cache/openai (gitignored); running the script again
# does nothing once that version is there. The last line printed is the
# node_modules directory that holds it.
set -euo pipefail

version=5.23.2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix="$root/.cache/openai"
modules="$prefix/node_modules"
pkgdir="$modules/openai"

installed=""
if [[ -f "$pkgdir/package.json" ]]; then
	installed=$(sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$pkgdir/package.json" | head -n 1)
fi

if [[ "$installed" != "$version" ]]; then
	for tool in node npm; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			echo "fetch-openai.sh: $tool is needed to fetch openai@$version and run it (install Node.js >= 20: Debian's nodejs and npm)" >&2
			exit 1
		fi
	done
	mkdir -p "$prefix"
	echo "fetch-openai.sh: installing openai@$version into $prefix" >&2
	# --omit=peer: the optional peers (ws for realtime, zod for parsing
	# helpers) are not what the test uses.
	npm install --no-save --no-audit --no-fund --omit=peer --prefix "$prefix" "openai@$version" >&2
fi

if [[ ! -f "$pkgdir/package.json" ]]; then
	echo "fetch-openai.sh: openai@$version installed but $pkgdir/package.json is missing" >&2
	exit 1
fi
echo "$modules"
