#!/usr/bin/env bash
# Batch throughput of `raglab generate` on llama-server endpoints: one server vs two
# (a pool), SmolLM2-135M on this machine, and the time to first token seen by raglab.
#
#   scripts/bench_endpoints.sh [N_QUESTIONS] [MAX_TOKENS]
#
# Needs scripts/setup.sh to have run (the raglab binary, tests/bin/llama-server and the
# models in tests/models). Uses a throw-away workspace and config in a temp folder;
# prints one line per configuration: answers, wall time, answers/s, output tokens/s, and
# p50 time to first token (from the stored answers).
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-16}"
max_tokens="${2:-64}"
source scripts/bench_lib.sh
head -n "$n" sample-data/questions.jsonl > "$tmp/q.jsonl"

run() { # label, then "port:max_concurrent" entries
  local label="$1"; shift
  : > "$RAGLAB_CONFIG_DIR/config.toml"
  for e in "$@"; do
    printf '[[endpoints]]\nurl = "http://127.0.0.1:%s/v1"\nmax_concurrent = %s\n\n' "${e%%:*}" "${e##*:}" >> "$RAGLAB_CONFIG_DIR/config.toml"
  done
  local run="r$RANDOM" start end
  start=$(date +%s.%N)
  "$bin" --workspace "$ws" generate --questions "$tmp/q.jsonl" --run "$run" --k 1 --method bm25 \
    --max-tokens "$max_tokens" --temperature 0.9 >/dev/null 2>"$tmp/gen.err" || { cat "$tmp/gen.err" >&2; exit 1; }
  end=$(date +%s.%N)
  "$bin" --workspace "$ws" report answers --run "$run" --list --json > "$tmp/a.json"
  python3 - "$label" "$start" "$end" "$tmp/a.json" <<'PY'
import json, statistics, sys
label, start, end, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
a = json.load(open(path))["items"]
wall = end - start
toks = sum(x["output_tokens"] for x in a)
ttft = statistics.median(x["ttft_ms"] for x in a)
per = {}
for x in a:
    per[x["endpoint"]] = per.get(x["endpoint"], 0) + 1
print(f"{label}: {len(a)} answers in {wall:.1f} s = {len(a)/wall:.2f} answers/s, "
      f"{toks/wall:.1f} output tokens/s, p50 TTFT {ttft:.0f} ms, per endpoint {sorted(per.values())}")
PY
}

start 1 1; run "1 server, 1 thread, 1 slot" "$port:1"; stop_all
start 2 2; run "1 server, 2 threads, 2 slots" "$port:2"; stop_all
start 1 1; a=$port; start 1 1; run "2 servers, 1 thread and 1 slot each" "$a:1" "$port:1"; stop_all
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
