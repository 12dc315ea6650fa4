# Shared by the endpoint benches (bench_endpoints.sh, bench_grounded.sh); sourced, not
# run. Sets up a throw-away workspace and config in a temp folder (removed on exit,
# with every server started), ingests and indexes six topics of the sample guidance,
# and defines `start THREADS SLOTS` (a llama-server with SmolLM2 on a free port of
# 127.0.0.1; sets $port) and `stop_all`.
#
# Needs scripts/setup.sh --test to have run (the raglab binary, tests/bin/llama-server
# and the models in tests/models). Expects to run from the repository root.
bin="${CARGO_TARGET_DIR:-$HOME/.cache/raglab/target}/release/raglab"
server="tests/bin/llama-server"
model="tests/models/SmolLM2-135M-Instruct.Q4_1.gguf"
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
export RAGLAB_CONFIG_DIR="$tmp/config" RAGLAB_DATA_DIR="$tmp/data" RAGLAB_MODELS_DIR="$PWD/tests/models"
mkdir -p "$RAGLAB_CONFIG_DIR"
: > "$RAGLAB_CONFIG_DIR/config.toml"
ws="$tmp/ws"
# A few topics of the sample guidance (a short embedding pass); the prompts are the
# same for every configuration.
mkdir -p "$tmp/docs"
for d in $(ls sample-data/guidance | head -n 6); do cp -r "sample-data/guidance/$d" "$tmp/docs/"; done
"$bin" --workspace "$ws" ingest "$tmp/docs" --index >/dev/null 2>"$tmp/ingest.err" || { cat "$tmp/ingest.err" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start() { # threads slots (8192 tokens of context each); sets $port
  port=$(free_port)
  "$server" -m "$model" --host 127.0.0.1 --port "$port" -c $((8192 * $2)) -np "$2" -t "$1" >"$tmp/server-$port.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 600); do
    python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
      "http://127.0.0.1:$port/health" 2>/dev/null && return
    sleep 0.1
  done
  echo "llama-server did not start" >&2; exit 1
}
stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; pids=(); }
