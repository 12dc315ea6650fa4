#!/usr/bin/env bash
# Build raglab with CUDA offload, without a system CUDA install, and install it so that
# it finds its libraries by itself (no LD_LIBRARY_PATH).
#
#   scripts/build_cuda.sh PYTHON [--arch 90[,89...]]
#
# Called by `scripts/setup.sh --cuda` (PYTHON: the tool environment's python). Steps:
#  1. the CUDA 13.0 toolkit from PyPI wheels into that environment (nvcc, runtime, crt,
#     nvvm, cuBLAS, CCCL); they land in site-packages/nvidia/cu13/;
#  2. the two fixes the wheel layout needs: plain-name links
#     (libcudart.so -> libcudart.so.13, same for cuBLAS, cuBLASLt) so CMake's
#     FindCUDAToolkit finds them, and lib64 -> lib (nvcc.profile links -L$(TOP)/lib64);
#  3. a CMake toolchain file, passed through the CMAKE_TOOLCHAIN_FILE environment
#     variable that the cmake crate reads: CMAKE_CUDA_ARCHITECTURES (ggml would
#     otherwise compile seven architectures; CUDAARCHS alone does not stop it) and
#     CMAKE_INSTALL_RPATH=$ORIGIN, so every llama/ggml library finds its neighbours
#     (cudart, cuBLAS) in its own folder;
#  4. cargo with `--features "cuda llama-cpp-2/dynamic-link llama-cpp-2/cuda-no-vmm"`
#     (dynamic: the wheels ship no static cuBLAS; no-vmm: no driver-API link, so no
#     libcuda stub is needed) into its own target dir, first filled with a slim copy of
#     the CPU target (compiled dependencies only) so that only llama-cpp-sys-2,
#     llama-cpp-2 and raglab compile. `cargo rustc` adds the binary's RPATH
#     ($ORIGIN/lib) to the final link only: RUSTFLAGS would change every crate's
#     fingerprint and rebuild lance and datafusion;
#  5. installs raglab, the ggml/llama libraries and cudart/cuBLAS/cuBLASLt into
#     PREFIX (default DATA_DIR/cuda), links PREFIX/raglab as ~/.local/bin/raglab-cuda,
#     and checks with ldd that every library resolves inside PREFIX/lib.
#
# Architectures: `--arch 90` or `--arch 90,89` (compute capability without the dot);
# default: the GPUs of this machine (nvidia-smi --query-gpu=compute_cap), else --arch is
# required. Each is compiled as real code only (`90-real`): the smallest library.
#
# Environment: RAGLAB_DATA_DIR, RAGLAB_CUDA_PREFIX (install folder),
# RAGLAB_CUDA_TARGET_DIR (default ~/.cache/raglab/target-cuda), CARGO_TARGET_DIR (the
# CPU target dir copied from, default ~/.cache/raglab/target).
set -euo pipefail

python="${1:?usage: build_cuda.sh PYTHON [--arch 90[,89...]]}"
shift
archs=""
while (($#)); do
  case "$1" in
    --arch) archs="${2:?--arch needs a list such as 90 or 90,89}"; shift 2;;
    --arch=*) archs="${1#--arch=}"; shift;;
    *) echo "build_cuda: unknown option $1" >&2; exit 2;;
  esac
done
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
data_dir="${RAGLAB_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/raglab}"
prefix="${RAGLAB_CUDA_PREFIX:-$data_dir/cuda}"
cpu_target="${CARGO_TARGET_DIR:-$HOME/.cache/raglab/target}"
target="${RAGLAB_CUDA_TARGET_DIR:-$HOME/.cache/raglab/target-cuda}"
say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
CUDA_WHEELS=(nvidia-cuda-nvcc==13.0.* nvidia-cuda-runtime==13.0.* nvidia-cuda-crt==13.0.*
  nvidia-nvvm==13.0.* nvidia-cublas==13.0.* nvidia-cuda-cccl==13.0.*)

# Architectures: the flag, else the machine's GPUs.
if [ -z "$archs" ]; then
  if command -v nvidia-smi >/dev/null && caps=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null) && [ -n "$caps" ]; then
    archs=$(echo "$caps" | tr -d ' .' | sort -u | paste -sd, -)
    say "GPU architectures of this machine: $archs"
  else
    echo "build_cuda: no GPU found here (nvidia-smi); say which architectures to build, e.g. --arch 90 (H100/H200) or --arch 90,89" >&2
    exit 2
  fi
fi
cmake_archs=""
for a in ${archs//,/ }; do
  [[ "$a" =~ ^[0-9]{2,3}[af]?$ ]] || { echo "build_cuda: bad architecture '$a' (expected e.g. 90, 89, 120a)" >&2; exit 2; }
  cmake_archs+="${cmake_archs:+;}${a}-real"
done

# 1. The toolkit from PyPI.
if ! "$python" -c 'import nvidia, os, sys; p = os.path.join(list(nvidia.__path__)[0], "cu13", "bin", "nvcc"); sys.exit(0 if os.access(p, os.X_OK) else 1)' 2>/dev/null \
  || ! "$python" -m pip show -q nvidia-cublas nvidia-cuda-cccl nvidia-nvvm nvidia-cuda-crt >/dev/null 2>&1; then
  say "installing the CUDA 13.0 toolkit wheels (${CUDA_WHEELS[*]})"
  "$python" -m pip install -q --disable-pip-version-check "${CUDA_WHEELS[@]}"
fi
tk=$("$python" -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13"))')
[ -x "$tk/bin/nvcc" ] || { echo "build_cuda: no nvcc in $tk/bin after installing the wheels" >&2; exit 1; }

# 2. The layout fixes.
for l in cudart cublas cublasLt; do
  [ -e "$tk/lib/lib$l.so.13" ] || { echo "build_cuda: $tk/lib/lib$l.so.13 missing" >&2; exit 1; }
  ln -sfn "lib$l.so.13" "$tk/lib/lib$l.so"
done
[ -e "$tk/lib64" ] || ln -s lib "$tk/lib64"
nvcc_version=$("$tk/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')

# 3. The toolchain file, named by its architectures (cargo re-runs llama-cpp-sys-2's build
#    script when the variable's value changes).
cache="$HOME/.cache/raglab/cuda"
mkdir -p "$cache"
toolchain="$cache/toolchain-${archs//,/_}.cmake"
cat > "$toolchain" <<EOF
# Written by scripts/build_cuda.sh: the CUDA architectures to compile (ggml's own list
# has seven) and the install RPATH of the llama/ggml libraries.
set(CMAKE_CUDA_ARCHITECTURES "$cmake_archs" CACHE STRING "" FORCE)
set(CMAKE_INSTALL_RPATH "\$ORIGIN" CACHE STRING "" FORCE)
EOF

# 4. The target dir: a slim copy of the CPU one (compiled libraries and build-script
#    outputs, not the test executables or raglab's incremental caches).
if [ ! -d "$target/release" ] && [ -d "$cpu_target/release/deps" ]; then
  say "seeding $target from $cpu_target (compiled dependencies only)"
  mkdir -p "$target/release/deps"
  cp -a "$cpu_target/release/build" "$cpu_target/release/.fingerprint" "$target/release/"
  find "$cpu_target/release/deps" -maxdepth 1 \( -name '*.rlib' -o -name '*.rmeta' -o -name '*.d' -o -name '*.so' -o -name '*.a' \) \
    -exec cp -a -t "$target/release/deps" {} +
fi
# A different architecture list must recompile ggml: its CMake build is configured once.
stamp="$target/raglab-cuda-archs"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" != "$cmake_archs" ]; then
  say "architectures changed ($(cat "$stamp") -> $cmake_archs): rebuilding llama.cpp"
  for d in "$target"/release/build/llama-cpp-sys-2-*; do
    [ -d "$d/out" ] && grep -qs GGML_CUDA:BOOL=ON "$d/out/build/CMakeCache.txt" && rm -rf "$d"
  done
fi
mkdir -p "$target"
echo "$cmake_archs" > "$stamp"

say "building raglab for CUDA ($cmake_archs; nvcc $nvcc_version; target dir $target)"
start=$(date +%s)
# shellcheck disable=SC2016 # $ORIGIN is for the dynamic loader, not the shell
CUDA_PATH="$tk" CUDAToolkit_ROOT="$tk" CUDACXX="$tk/bin/nvcc" PATH="$tk/bin:$PATH" \
  CMAKE_TOOLCHAIN_FILE="$toolchain" CARGO_TARGET_DIR="$target" \
  cargo rustc --release --locked --bin raglab \
  --features "cuda llama-cpp-2/dynamic-link llama-cpp-2/cuda-no-vmm" -- \
  -C 'link-arg=-Wl,-rpath,$ORIGIN/lib' -C link-arg=-Wl,--disable-new-dtags \
  -C "link-arg=-Wl,-rpath-link,$tk/lib"
secs=$(( $(date +%s) - start ))

# 5. Install.
outlib=""
for d in $(ls -td "$target"/release/build/llama-cpp-sys-2-*/out 2>/dev/null); do
  for l in lib lib64; do
    if [ -e "$d/$l/libggml-cuda.so" ]; then outlib="$d/$l"; break 2; fi
  done
done
[ -n "$outlib" ] || { echo "build_cuda: no libggml-cuda.so under $target/release/build/llama-cpp-sys-2-*/out" >&2; exit 1; }
rm -rf "$prefix.part" && mkdir -p "$prefix.part/lib"
cp "$target/release/raglab" "$prefix.part/raglab"
strip "$prefix.part/raglab" 2>/dev/null || true
# Each real file once, under its soname (what the loader asks for: libllama.so.0 ...).
for f in "$outlib"/lib*.so*; do
  [ -f "$f" ] && [ ! -L "$f" ] || continue
  soname=$(readelf -d "$f" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
  cp "$f" "$prefix.part/lib/${soname:-$(basename "$f")}"
done
for l in cudart cublas cublasLt; do cp -L "$tk/lib/lib$l.so.13" "$prefix.part/lib/"; done
strip --strip-unneeded "$prefix.part"/lib/libggml*.so* "$prefix.part"/lib/libllama*.so* 2>/dev/null || true
rm -rf "$prefix" && mv "$prefix.part" "$prefix"
mkdir -p "$HOME/.local/bin"
ln -sf "$prefix/raglab" "$HOME/.local/bin/raglab-cuda"

# Every library must resolve inside the install folder (libcuda.so.1, the driver, comes
# from the GPU machine and is loaded by cudart at run time, not linked).
unresolved=$(ldd "$prefix/raglab" | grep -E 'not found' || true)
outside=$(ldd "$prefix/raglab" | grep -E 'lib(llama|ggml|cudart|cublas)' | grep -v "$prefix/lib/" || true)
if [ -n "$unresolved$outside" ]; then
  echo "build_cuda: libraries not resolved from $prefix/lib:" >&2
  echo "$unresolved$outside" >&2
  exit 1
fi
size_bin=$(du -m "$prefix/raglab" | cut -f1)
size_all=$(du -sm "$prefix" | cut -f1)
echo "raglab CUDA build ($cmake_archs, nvcc $nvcc_version) in ${secs}s with $(nproc) cores on $(date -u +%F); binary ${size_bin} MB stripped, install folder ${size_all} MB" \
  | tee "$cache/build-time.txt" >&2
say "installed in $prefix (run it as ~/.local/bin/raglab-cuda)"
