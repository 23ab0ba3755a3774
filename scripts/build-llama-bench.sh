#!/usr/bin/env bash
# build-llama-bench.sh builds llama.cpp's own benchmark, llama-bench, from
# the pinned source (the git bundle node-llama-cpp ships; see
# fetch-llama-src.sh) the way llama.cpp's releases are built: every CPU
# variant as a loadable backend (GGML_BACKEND_DL, GGML_CPU_ALL_VARIANTS),
# the best chosen at run time, no -march=native. make bench cross-checks
# internal/llamapeer (the npm release library) against it. Needs cmake and
# a C++ compiler (Debian: cmake g++). The build lands in
# <repo>/.cache/llama-bench (gitignored); running it again does nothing once
# it is there. The last line printed is the llama-bench binary.
#
# With --cuda it builds llama.cpp's CUDA backend instead (nvcc needed;
# GGML_CUDA, for the GPU of this machine's compute capability, or
# $CUDA_ARCH), into <repo>/.cache/llama-bench-cuda: the peer of akunu's
# CUDA backend (docs/cuda.md).
#
#   scripts/build-llama-bench.sh [--cuda] [SOURCE-DIR-OR-BUNDLE]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cuda=0
if [[ "${1:-}" == "--cuda" ]]; then
	cuda=1
	shift
fi
out="$root/.cache/llama-bench"
[[ $cuda == 1 ]] && out="$root/.cache/llama-bench-cuda"
bin="$out/build/bin/llama-bench"
if [[ -x "$bin" ]]; then
	echo "$bin"
	exit 0
fi
for tool in cmake c++ git; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "build-llama-bench.sh: $tool is needed (Debian: apt-get install cmake g++ git)" >&2
		exit 1
	fi
done
src=${1:-}
if [[ -z "$src" ]]; then
	src=$("$root/scripts/fetch-llama-src.sh" | tail -n 1)
fi
mkdir -p "$out"
if [[ -f "$src" ]]; then # a bundle: clone it
	rm -rf "$out/src"
	git clone -q "$src" "$out/src" 2>/dev/null
	src="$out/src"
fi
jobs=$(nproc 2>/dev/null || echo 2)
if [[ $cuda == 1 ]]; then
	command -v nvcc >/dev/null || { echo "build-llama-bench.sh: --cuda needs nvcc" >&2; exit 1; }
	arch=${CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d .)}
	echo "build-llama-bench.sh: configuring $src (GGML_CUDA for sm_${arch:-?}), $jobs jobs" >&2
	cmake -S "$src" -B "$out/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_CUDA=ON \
		${arch:+-DCMAKE_CUDA_ARCHITECTURES=$arch} -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
		-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DBUILD_SHARED_LIBS=ON >&2
	cmake --build "$out/build" --target llama-bench -j "$jobs" >&2
	echo "$bin"
	exit 0
fi
echo "build-llama-bench.sh: configuring $src (GGML_BACKEND_DL, GGML_CPU_ALL_VARIANTS), $jobs jobs" >&2
cmake -S "$src" -B "$out/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON \
	-DGGML_CPU_ALL_VARIANTS=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
	-DLLAMA_BUILD_SERVER=OFF -DBUILD_SHARED_LIBS=ON >&2
cmake --build "$out/build" --target llama-bench -j "$jobs" >&2
# The CPU variants are loaded at run time, not linked: build them all.
targets=$(cmake --build "$out/build" --target help | sed -n 's/^\.\.\. \(ggml-cpu[a-z0-9_-]*\).*/\1/p')
if [[ -n "$targets" ]]; then
	cmake --build "$out/build" --target $targets -j "$jobs" >&2
fi
echo "$bin"
