#!/usr/bin/env bash
# fetch-llama.sh installs llama.cpp's prebuilt CPU libraries, which the tests
# use as the reference oracle (internal/llamacpp loads them through purego).
#
# They come from node-llama-cpp's per-platform npm packages, pinned to one
# version so every checkout compares against the same llama.cpp build. The
# install lands in <repo>/.cache/llama (gitignored); running the script again
# does nothing once the libraries are there. The last line printed is the
# library directory (what AKUNU_LLAMA_LIB would be set to).
set -euo pipefail

version=3.22.1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix="$root/.cache/llama"

os=$(uname -s)
arch=$(uname -m)
case "$os/$arch" in
Linux/x86_64 | Linux/amd64) plat=linux-x64 ;;
Linux/aarch64 | Linux/arm64) plat=linux-arm64 ;;
Darwin/arm64) plat=mac-arm64-metal ;;
Darwin/x86_64) plat=mac-x64 ;;
*)
	echo "fetch-llama.sh: no prebuilt llama.cpp package for $os/$arch" >&2
	exit 1
	;;
esac

pkg="@node-llama-cpp/$plat"
pkgdir="$prefix/node_modules/$pkg"
libdir="$pkgdir/bins/$plat"

installed=""
if [[ -f "$pkgdir/package.json" ]]; then
	installed=$(sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$pkgdir/package.json" | head -n 1)
fi

if [[ "$installed" != "$version" || ! -d "$libdir" ]]; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "fetch-llama.sh: npm is needed to fetch $pkg@$version (install Node.js >= 20)" >&2
		exit 1
	fi
	mkdir -p "$prefix"
	echo "fetch-llama.sh: installing $pkg@$version into $prefix" >&2
	# The platform packages declare os/cpu/libc; --force is not used, so npm
	# refuses a package that does not fit this machine instead of installing
	# libraries that cannot load.
	npm install --no-save --no-audit --no-fund --prefix "$prefix" "$pkg@$version" >&2
fi

if [[ ! -d "$libdir" ]]; then
	echo "fetch-llama.sh: $pkg@$version installed but $libdir is missing" >&2
	exit 1
fi
echo "$libdir"
