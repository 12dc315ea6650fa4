#!/usr/bin/env bash
# Pack what scripts/gpu_bench.sh needs on a GPU machine that has no Rust and no
# network: the CUDA build of raglab (scripts/setup.sh --cuda), its llama/ggml libraries
# and cudart, and the two test models, as one xz tar split into parts small enough to
# be carried one per call (a call carries at most 64 MiB, the repository included).
# xz, not zstd: the GPU machine may have no zstd, and Python's tarfile reads xz.
#
#   scripts/gpu_bundle.sh [PART_MIB]     # default 48 (the checkout itself travels too)
#
# Writes .gpu-bundle/p1/bundle.part, .gpu-bundle/p2/bundle.part, ... (ignored by git)
# and prints the parts. Also packs ../shared/data's PubMedQA and MedQuAD samples (real
# passages and questions for the embedding figures). cuBLAS and cuBLASLt (about 600 MB)
# are not packed: the GPU machine's PyTorch environment has CUDA 13 copies, which
# gpu_bench.sh finds.
# Environment: RAGLAB_CUDA_PREFIX (default DATA_DIR/cuda), RAGLAB_DATA_DIR.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
part_mib="${1:-48}"
data_dir="${RAGLAB_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/raglab}"
prefix="${RAGLAB_CUDA_PREFIX:-$data_dir/cuda}"
[ -x "$prefix/raglab" ] || { echo "gpu_bundle: no CUDA build in $prefix (run scripts/setup.sh --cuda first)" >&2; exit 1; }
for m in SmolLM2-135M-Instruct.Q4_1.gguf all-MiniLM-L6-v2.F16.gguf; do
  [ -s "tests/models/$m" ] || { echo "gpu_bundle: tests/models/$m missing (run scripts/setup.sh)" >&2; exit 1; }
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/raglab-gpu/lib" "$stage/raglab-gpu/models"
cp "$prefix/raglab" "$stage/raglab-gpu/"
for f in "$prefix"/lib/*; do
  case "$(basename "$f")" in
    libcublas*) ;;  # from the GPU machine's own CUDA 13
    *) cp "$f" "$stage/raglab-gpu/lib/";;
  esac
done
cp -L tests/models/SmolLM2-135M-Instruct.Q4_1.gguf tests/models/all-MiniLM-L6-v2.F16.gguf "$stage/raglab-gpu/models/"
# Real passages and questions for the embedding figures (PubMedQA PQA-L's abstracts and
# the MedQuAD CDC sample, with their licences): the GPU machine cannot see ../shared.
# Without them gpu_bench.sh skips those figures.
shared="$here/../shared/data"
if [ -s "$shared/pubmedqa_pqal/corpus.jsonl" ] && [ -s "$shared/medquad_cdc_sample/corpus.jsonl" ]; then
  mkdir -p "$stage/raglab-gpu/data"
  for d in pubmedqa_pqal medquad_cdc_sample; do
    cp "$shared/$d/corpus.jsonl" "$stage/raglab-gpu/data/$d.jsonl"
    cp "$shared/$d/queries.jsonl" "$stage/raglab-gpu/data/$d.queries.jsonl"
    cp "$shared/$d"/LICENSE* "$stage/raglab-gpu/data/"
  done
else
  echo "gpu_bundle: no ../shared/data samples: the bundle has no real passages (gpu_bench.sh skips those figures)" >&2
fi

rm -rf .gpu-bundle && mkdir -p .gpu-bundle
tar -C "$stage" -cf - raglab-gpu | xz -6 -T0 -c | split -b "${part_mib}M" -d -a 2 - "$stage/bundle.part."
i=1
for p in "$stage"/bundle.part.*; do
  mkdir -p ".gpu-bundle/p$i"
  mv "$p" ".gpu-bundle/p$i/bundle.part"
  i=$((i + 1))
done
du -h .gpu-bundle/p*/bundle.part
