#!/usr/bin/env bash
# check-msl.sh: syntax- and type-check every kernels/metal/*.metal file with
# clang through the MSL shim (kernels/metal/shim), as `go test ./kernels/metal`
# does. It cannot prove what only the Metal compiler can: docs/metal.md.
#   scripts/check-msl.sh [file.metal ...]
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG=${CLANG:-clang++}
command -v "$CLANG" >/dev/null || { echo "check-msl: $CLANG not found (apt-get install clang)" >&2; exit 1; }
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(kernels/metal/*.metal)
status=0
for f in "${files[@]}"; do
  # The two rewrites the shim's header comment explains; a line marker keeps
  # clang's messages pointing at the .metal file.
  if ! { printf '# 1 "%s"\n' "$f"
         sed -e 's/\[\[threadgroup(/[[threadgroup_binding(/g' \
             -e 's/template \[\[host_name(\("[^"]*"\))\]\]/template \/* host_name(\1) *\//' "$f"
       } | "$CLANG" --target=arm64-apple-macos13 -x c++ -std=c++17 -fsyntax-only \
             -nostdinc -nostdinc++ -ffreestanding -D__METAL_VERSION__=310 \
             -I kernels/metal/shim -I kernels/metal -I kernels/gpu \
             -Wall -Wextra -Wno-unused-parameter -Werror -Werror=unknown-attributes - ; then
    status=1
  else
    echo "ok   $f"
  fi
done
exit $status
