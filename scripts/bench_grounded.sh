#!/usr/bin/env bash
# Throughput of `raglab answers ground` (grounded metrics) on llama-server endpoints: one
# server against a pool of two, SmolLM2-135M judging on this machine, side by side in
# one run.
#
#   scripts/bench_grounded.sh [N_QUESTIONS] [K]
#
# Needs scripts/setup.sh --test to have run (the raglab binary, tests/bin/llama-server
# and the models in tests/models). Uses a throw-away workspace and config in a temp
# folder: N sample questions (default 4) are answered once by the local SmolLM2 (k = K
# chunks in the prompt, default 1; a sample chunk can run to ~1,800 tokens, and one
# llama-server thread reads about 80 prompt tokens/s), 48 tokens each,
# then the same answers are grounded from a copy of that workspace by each
# configuration. Prints one line per configuration: answers, judge requests, wall time,
# answers/s, and the ratio of the pool's throughput to one server's.
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-4}"
k="${2:-1}"
source scripts/bench_lib.sh
head -n "$n" sample-data/questions.jsonl > "$tmp/q.jsonl"
"$bin" --workspace "$ws" generate --questions "$tmp/q.jsonl" --run answers --k "$k" --method bm25 \
  --max-tokens 48 >/dev/null 2>"$tmp/gen.err" || { cat "$tmp/gen.err" >&2; exit 1; }

declare -A rate
run() { # label, then ports
  local label="$1"; shift
  : > "$RAGLAB_CONFIG_DIR/config.toml"
  for p in "$@"; do
    printf '[[endpoints]]\nurl = "http://127.0.0.1:%s/v1"\nmax_concurrent = 1\ntimeout_s = 300\n\n' "$p" >> "$RAGLAB_CONFIG_DIR/config.toml"
  done
  local copy="$tmp/ws-$#" start end out
  rm -rf "$copy"; cp -r "$ws" "$copy"
  start=$(date +%s.%N)
  # Answer correctness's similarity left out (--weights 1,0): the servers' work only.
  out=$("$bin" --workspace "$copy" answers ground --run answers --weights 1,0 2>"$tmp/ground.err") \
    || { cat "$tmp/ground.err" >&2; exit 1; }
  end=$(date +%s.%N)
  rate[$#]=$(python3 -c "import sys; print($n / ($end - $start))")
  # Each answer's grounded record (its requests' times and the server that judged it).
  "$bin" --workspace "$copy" report answers --run answers --list --json > "$tmp/a.json"
  rm -f "$tmp"/g-*.json
  i=0
  for id in $(python3 -c 'import json,sys; print(" ".join(a["answer_id"] for a in json.load(open(sys.argv[1]))["items"]))' "$tmp/a.json"); do
    i=$((i + 1)); "$bin" --workspace "$copy" answers show-grounded "$id" --json > "$tmp/g-$i.json"
  done
  python3 - "$label" "$start" "$end" "$n" "$out" "$tmp"/g-*.json <<'PY'
import json, re, sys
label, start, end, n, out, paths = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6:]
req = re.search(r"(\d+) judge request", out)
wall = end - start
busy, times = {}, []
for path in paths:
    for r in json.load(open(path))["items"]:
        for url, ms in zip(r["request_endpoints"], r["request_ms"]):
            busy[url] = busy.get(url, 0.0) + ms / 1000
        times += r["request_ms"]
share = ", ".join(f"{b / wall:.0%}" for b in sorted(busy.values()))
print(f"{label}: {n} answers, {req.group(1) if req else '?'} judge requests in {wall:.1f} s = {n / wall:.3f} answers/s; "
      f"each server busy {share} of the wall time; mean request {sum(times) / len(times) / 1000:.2f} s")
PY
}

start 1 1; run "1 server (1 thread, 1 slot)" "$port"; stop_all
start 1 1; a=$port; start 1 1; run "2 servers (1 thread, 1 slot each)" "$a" "$port"; stop_all
python3 -c "print(f'pool / one server: {${rate[2]} / ${rate[1]}:.2f}x')"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
