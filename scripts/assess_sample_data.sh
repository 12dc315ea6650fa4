#!/usr/bin/env bash
# Writes tests/data/assess/{bm25.trec,targets.qrels,grown.qrels} with raglab's own
# commands on the shipped sample (the inputs of scripts/assess_reference.py):
# a BM25 and a TF-IDF run of the sample questions, a pool of both (depth 3, 20
# questions sampled with seed 1), the targets-only qrels exported before grading, and
# the grown qrels exported after one assessor (alice) graded her whole queue by a
# stated rule: 2 for the chunk BM25 ranks first for the question, 0 for every other.
# The stored run keeps each question's top 10 lines (all that P@1 and Judged@10 read).
# Usage (from the repository root): scripts/assess_sample_data.sh [RAGLAB_BINARY]
set -euo pipefail
BIN=${1:-target/release/raglab}
T=$(mktemp -d)
export RAGLAB_CONFIG_DIR=$T/config RAGLAB_DATA_DIR=$T/data
r() { "$BIN" --workspace "$T/ws" "$@"; }
OUT=tests/data/assess
Q=sample-data/questions.jsonl
r ingest sample-data/guidance >/dev/null
r index --sparse-only >/dev/null
r eval retrieval --queries "$Q" --methods bm25,tfidf --run-out "$T/runs" >/dev/null
r assess pool --queries "$Q" --runs "$T/runs/bm25.trec,$T/runs/tfidf.trec" --depth 3 --sample 20 --seed 1
r qrels export --out "$OUT/targets.qrels"
# The BM25 top chunk of each question: the run is written in rank order.
declare -A top
while read -r q _ d _; do [[ -n ${top[$q]:-} ]] || top[$q]=$d; done <"$T/runs/bm25.trec"
while true; do
  next=$(r --reviewer alice assess next)
  [[ $next == *"nothing left to grade"* ]] && break
  q=$(sed -n '1s/^question \([^:]*\):.*/\1/p' <<<"$next")
  c=$(sed -n '2s/^chunk \([^ ]*\) .*/\1/p' <<<"$next")
  if [[ $c == "${top[$q]}" ]]; then g=2; else g=0; fi
  r --reviewer alice assess grade "$q" "$c" "$g" >/dev/null
done
r assess progress
r qrels export --out "$OUT/grown.qrels"
awk '{ if (++n[$1] <= 10) print }' "$T/runs/bm25.trec" >"$OUT/bm25.trec"
rm -rf "$T"
