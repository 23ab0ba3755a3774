#!/usr/bin/env bash
# fetch-llama-src.sh installs llama.cpp's source, as node-llama-cpp ships it
# (llama/gitRelease.bundle, a git bundle of the release it builds), pinned to
# the version of the prebuilt libraries scripts/fetch-llama.sh installs. The
# tests read llama.cpp's own test cases from it as data (the grammar parser
# and integration cases, the JSON-schema converter's cases) and the grammar
# benchmark builds its C driver against its headers. It lands in
# <repo>/.cache/llama-src/llama.cpp (gitignored); running the script again
# does nothing once it is there. The last line printed is that directory.
set -euo pipefail

version=3.22.1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix="$root/.cache/llama-src"
dest="$prefix/llama.cpp"
stamp="$prefix/version"

if [[ -d "$dest/.git" && -f "$stamp" && "$(cat "$stamp")" == "$version" ]]; then
	echo "$dest"
	exit 0
fi
for tool in npm tar git; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "fetch-llama-src.sh: $tool is needed to fetch node-llama-cpp@$version's llama.cpp source" >&2
		exit 1
	fi
done
rm -rf "$prefix"
mkdir -p "$prefix"
echo "fetch-llama-src.sh: fetching node-llama-cpp@$version (llama/gitRelease.bundle) into $prefix" >&2
(cd "$prefix" && npm pack --silent "node-llama-cpp@$version" >/dev/null)
tar -xzf "$prefix/node-llama-cpp-$version.tgz" -C "$prefix" package/llama/gitRelease.bundle
git clone -q "$prefix/package/llama/gitRelease.bundle" "$dest" 2>/dev/null
rm -rf "$prefix/package" "$prefix/node-llama-cpp-$version.tgz"
if [[ ! -f "$dest/tests/test-grammar-integration.cpp" ]]; then
	echo "fetch-llama-src.sh: the bundle of node-llama-cpp@$version holds no tests/test-grammar-integration.cpp" >&2
	exit 1
fi
echo "$version" >"$stamp"
echo "$dest"
