#!/usr/bin/env bash
# How long `raglab gate` takes on two 15,000-query runs (the issue's goal: <= 2 s).
# SYNTHETIC runs (made here, seeded): 15,000 queries, 100 documents each, one relevant
# document per query at a random rank, 500 source documents as clusters. They measure
# speed only, never quality. The figure is the median wall time of five runs of the whole
# process (reading and scoring both runs, the clustered interval, the verdict).
#
# Needs the release binary (scripts/setup.sh). Run from the repository root:
#   scripts/bench_gate.sh
set -euo pipefail
bin="${CARGO_TARGET_DIR:-$HOME/.cache/raglab/target}/release/raglab"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY'
import random, sys
out = sys.argv[1]
rng = random.Random(15000)
queries, depth, docs = 15000, 100, 500
with open(f"{out}/qrels.tsv", "w") as qrels, open(f"{out}/clusters.tsv", "w") as clusters, \
        open(f"{out}/a.trec", "w") as a, open(f"{out}/b.trec", "w") as b:
    for q in range(queries):
        doc = rng.randrange(docs)
        target = f"d{doc}#s{q}"
        qrels.write(f"q{q} 0 {target} 1\n")
        clusters.write(f"q{q}\td{doc}\n")
        for run, shift in ((a, 0), (b, 2)):
            at = min(depth - 1, max(0, int(rng.expovariate(0.3)) + shift))
            ids = [f"x{q}-{i}" for i in range(depth)]
            ids[at] = target
            run.write("".join(f"q{q} Q0 {d} {r + 1} {depth - r} syn\n" for r, d in enumerate(ids)))
PY
echo "synthetic: 15,000 queries x 100 documents per run, $(du -h "$tmp/a.trec" | cut -f1) per run file"
"$bin" gate --qrels "$tmp/qrels.tsv" --clusters "$tmp/clusters.tsv" --baseline "$tmp/a.trec" --candidate "$tmp/b.trec" || true
# Five timed runs of the whole process; the median is the figure.
times=()
for _ in 1 2 3 4 5; do
  start=$EPOCHREALTIME
  "$bin" gate --qrels "$tmp/qrels.tsv" --clusters "$tmp/clusters.tsv" --baseline "$tmp/a.trec" \
    --candidate "$tmp/b.trec" --json >/dev/null 2>&1 || true
  times+=("$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {print b - a}')")
done
printf '%s\n' "${times[@]}" | sort -n | awk '{t[NR]=$1} END {printf "gate wall time over 5 runs: median %.2f s (min %.2f, max %.2f)\n", t[3], t[1], t[5]}'
