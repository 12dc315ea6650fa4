#!/usr/bin/env bash
# GPU figures of the CUDA build, run on the GPU machine from the bundle that
# scripts/gpu_bundle.sh packs (no Rust, no network there). Writes JSON under $OUT:
#   gpu.txt                    nvidia-smi's name, driver, memory
#   index_gpu.json / _cpu.json `raglab index --json` of the sample corpus (261 chunks):
#                              embeddings/s with every MiniLM layer on the GPU / none
#   bench_gpu_kK.json / _cpu_  `raglab bench generate --json` (SmolLM2, k = 3 and 10
#                              chunks in the prompt): prompt and generation tokens/s
#                              with every layer on the GPU / none, device and layers
#                              offloaded as raglab reports them
#   index_real_gpu.json        `raglab index --json` of 1,261 real passages (PubMedQA
#                              PQA-L abstracts + the MedQuAD CDC sample) on the GPU
#   embed_gpu.json / _cpu.json `raglab bench embed --json`: passages/s and query
#                              embedding p50/p95, one text per call and packed
#   eval_real_gpu_time.json    wall time and peak RSS of `eval retrieval` over 15,000
#                              real questions (repeated) on those passages, every
#                              method, both sparse sides, the alpha sweep
#   summary.json               the figures above in one object
#
# Carry the parts with the device tool, one call each while the machine stays warm
# (ignored paths already there are kept between calls):
#   call 1..N-1: carry [".gpu-bundle/pI"], command `ls -l .gpu-bundle`
#   call N:      carry [".gpu-bundle/pN"], command `scripts/gpu_bench.sh`
# It needs libcublas.so.13 / libcublasLt.so.13 on the machine (PyTorch's CUDA 13
# wheels have them; found under the Python prefixes, or RAGLAB_CUBLAS_DIR).
# RAGLAB_BENCH_KS (default "3 10"), RAGLAB_BENCH_REPEAT (default 5), RAGLAB_EMBED_LIMIT
# (abstracts, default 1000), RAGLAB_EMBED_CPU_LIMIT (default 128) and RAGLAB_EVAL_QUERIES
# (default 15000) shorten a dry run.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
out="${OUT:-$here/gpu-out}"
mkdir -p "$out"
work="${RAGLAB_GPU_WORK:-/tmp/raglab-gpu-work}"
rm -rf "$work" && mkdir -p "$work"
log() { echo "[$(date -u +%T)] $*" | tee -a "$out/log.txt" >&2; }

# The bundle, reassembled from its parts (in order).
parts=$(ls .gpu-bundle/p*/bundle.part 2>/dev/null | sort -V || true)
[ -n "$parts" ] || { log "no .gpu-bundle/p*/bundle.part here: carry the parts first"; exit 1; }
log "unpacking $(echo "$parts" | wc -l) parts"
# shellcheck disable=SC2086
cat $parts | python3 -c '
import sys, tarfile
t = tarfile.open(fileobj=sys.stdin.buffer, mode="r|xz")
try:
    t.extractall(sys.argv[1], filter="tar")  # keeps the exec bits
except TypeError:  # a Python without extraction filters
    t.extractall(sys.argv[1])
' "$work"
bundle="$work/raglab-gpu"
bin="$bundle/raglab"

# cuBLAS from the machine's own CUDA 13 (not carried: ~600 MB).
cublas_dir="${RAGLAB_CUBLAS_DIR:-}"
if [ -z "$cublas_dir" ]; then
  for py in python3 /opt/conda/bin/python3 /usr/bin/python3; do
    command -v "$py" >/dev/null 2>&1 || continue
    for root in $("$py" -c 'import site, sys; print(" ".join(site.getsitepackages() + [sys.prefix]))' 2>/dev/null); do
      f=$(find "$root" -name 'libcublasLt.so.13*' 2>/dev/null | head -n1 || true)
      if [ -n "$f" ]; then cublas_dir=$(dirname "$f"); break 2; fi
    done
  done
fi
if [ -z "$cublas_dir" ]; then
  f=$(find / -xdev -name 'libcublasLt.so.13*' 2>/dev/null | head -n1 || true)
  if [ -n "$f" ]; then cublas_dir=$(dirname "$f"); fi
fi
[ -n "$cublas_dir" ] || { log "libcublasLt.so.13 not found (set RAGLAB_CUBLAS_DIR)"; exit 1; }
log "cuBLAS from $cublas_dir"
export LD_LIBRARY_PATH="$cublas_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ldd "$bin" > "$out/ldd.txt" 2>&1 || true
if grep -q "not found" "$out/ldd.txt"; then log "unresolved libraries:"; grep "not found" "$out/ldd.txt" >&2; exit 1; fi
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv > "$out/gpu.txt" 2>&1 || true
log "GPU: $(tail -n1 "$out/gpu.txt")"

export RAGLAB_MODELS_DIR="$bundle/models" RAGLAB_LOG=info
real_ws=""
run() { # NAME LAYERS ARGS... : one raglab command in its own config/data folders
  # (workspace: $real_ws when set, else one per layer count)
  local name=$1 layers=$2; shift 2
  RAGLAB_CONFIG_DIR="$work/$name/config" RAGLAB_DATA_DIR="$work/$name/data" \
    timeout 300 "$bin" --workspace "${real_ws:-$work/ws-$layers}" --gpu-layers "$layers" "$@"
}
for layers in 999 0; do
  tag=$([ "$layers" = 0 ] && echo cpu || echo gpu)
  log "ingest + index ($tag)"
  run "$tag" "$layers" ingest sample-data/guidance > "$out/ingest_$tag.txt"
  run "$tag" "$layers" index --json > "$out/index_$tag.json"
  for k in ${RAGLAB_BENCH_KS:-3 10}; do
    log "bench generate k=$k ($tag)"
    run "$tag" "$layers" bench generate --questions sample-data/questions.jsonl \
      --k "$k" --max-tokens 128 --repeat "${RAGLAB_BENCH_REPEAT:-5}" --json > "$out/bench_${tag}_k$k.json"
  done
done

# The embedding-bound figures of the million-chunk issue, on real text: its goals are
# set for two CPU cores (query embedding <= 3.5 ms, >= 40 passages/s, the 15,000-query
# evaluation <= 90 s); these say what the GPU gives. Skipped when the bundle has no data.
data="$bundle/data"
if [ -s "$data/pubmedqa_pqal.jsonl" ]; then
  real_ws="$work/ws-real"
  log "ingest + index of PubMedQA + MedQuAD passages (gpu)"
  run real 999 ingest "$data/pubmedqa_pqal.jsonl" "$data/medquad_cdc_sample.jsonl" --chunker none > "$out/ingest_real.txt"
  run real 999 index --json > "$out/index_real_gpu.json"
  for layers in 999 0; do
    tag=$([ "$layers" = 0 ] && echo cpu || echo gpu)
    limit=$([ "$layers" = 0 ] && echo "${RAGLAB_EMBED_CPU_LIMIT:-128}" || echo "${RAGLAB_EMBED_LIMIT:-1000}")
    log "bench embed, $limit abstracts and $((limit / 2)) questions ($tag)"
    run real "$layers" bench embed --texts "$data/pubmedqa_pqal.jsonl" --limit "$limit" --group 64 --rounds 2 \
      --queries "$data/pubmedqa_pqal.queries.jsonl" --query-limit $((limit / 2)) \
      --variant seqs=1 --variant seqs=8,tokens=1024 --variant seqs=32,tokens=8192 --json > "$out/embed_$tag.json"
  done
  n="${RAGLAB_EVAL_QUERIES:-15000}"
  python3 scripts/repeat_queries.py "$work/q.jsonl" "$n" "$data/pubmedqa_pqal.queries.jsonl" "$data/medquad_cdc_sample.queries.jsonl" >&2
  log "eval retrieval, $n queries, every method, both sparse sides, alpha sweep (gpu)"
  # Wall time and the child's peak RSS, as /usr/bin/time -v would say (it may be absent).
  python3 - "$out/eval_real_gpu_time.json" env RAGLAB_CONFIG_DIR="$work/real/config" RAGLAB_DATA_DIR="$work/real/data" \
    timeout 300 "$bin" --workspace "$real_ws" --gpu-layers 999 eval retrieval \
    --queries "$work/q.jsonl" --methods bm25,tfidf,dense,hybrid,linear --sparse bm25,tfidf --alpha-sweep --json <<'PY' > "$work/eval_real_gpu.json"
import json, resource, subprocess, sys, time
t = time.time()
rc = subprocess.call(sys.argv[2:])
wall = time.time() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
json.dump({"rc": rc, "wall_s": wall, "peak_rss_mb": rss}, open(sys.argv[1], "w"))
sys.exit(rc)
PY
  python3 - "$work/eval_real_gpu.json" "$out/eval_real_gpu_time.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))
t = json.load(open(sys.argv[2]))
t["queries"] = e.get("queries")
t["seconds"] = e.get("seconds")
json.dump(t, open(sys.argv[2], "w"))
PY
  real_ws=""
fi

python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
def load(n):
    with open(os.path.join(out, n)) as f:
        return json.load(f)
s = {"gpu": open(os.path.join(out, "gpu.txt")).read().strip().splitlines()[-1]}
for tag in ("gpu", "cpu"):
    s[f"embeddings_per_s_{tag}"] = load(f"index_{tag}.json")["chunks_per_second"]
    for k in (3, 10):
        if not os.path.exists(os.path.join(out, f"bench_{tag}_k{k}.json")):
            continue
        b = load(f"bench_{tag}_k{k}.json")
        s[f"generate_{tag}_k{k}"] = {x: b.get(x) for x in (
            "device", "layers_offloaded", "layers_total", "threads", "prompt_tokens",
            "output_tokens", "raglab_prompt_tokens_per_s", "llama_prompt_tokens_per_s",
            "raglab_gen_tokens_per_s", "llama_gen_tokens_per_s", "ttft_ms")}
if os.path.exists(os.path.join(out, "index_real_gpu.json")):
    s["real_passages_index_gpu"] = {x: load("index_real_gpu.json").get(x) for x in (
        "embedded", "embed_seconds", "chunks_per_second")}
    for tag in ("gpu", "cpu"):
        if os.path.exists(os.path.join(out, f"embed_{tag}.json")):
            b = load(f"embed_{tag}.json")
            s[f"bench_embed_{tag}"] = {"texts": b["texts"], "mean_tokens": b["mean_tokens"],
                "queries": b["queries"], "variants": [{x: v.get(x) for x in (
                    "label", "threads", "chunks_per_s", "query_p50_ms", "query_p95_ms",
                    "worst_cosine_to_first", "query_worst_cosine_to_first")}
                    for v in b["variants"]]}
    s["eval_real_gpu"] = load("eval_real_gpu_time.json")
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(s, f, indent=2)
print(json.dumps(s, indent=2))
PY
log "done: figures in $out"
