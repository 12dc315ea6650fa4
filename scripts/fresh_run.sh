#!/usr/bin/env bash
# Time the README's two commands on the freshest state one machine allows.
# DESTRUCTIVE for the machine it runs on: it removes the Debian packages that
# scripts/setup.sh installs (and what apt then autoremoves), so that setup has to
# install them again. Run it only on a throw-away or development machine, as root.
#
#   scripts/fresh_run.sh [LOG]      (default log: /tmp/raglab-fresh.log)
#
# A fresh clone of this repository goes to /tmp/raglab-fresh with an empty target
# directory and an empty data directory (the cargo registry and pip caches are kept).
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log="${1:-/tmp/raglab-fresh.log}"
: > "$log"
say() { echo "[$(date +%T)] $*" | tee -a "$log"; }
pkgs=(cmake protobuf-compiler libprotobuf-dev libclang-dev tmux build-essential pkg-config python3-venv)
apt-get remove -y -qq "${pkgs[@]}" >>"$log" 2>&1
apt-get autoremove -y -qq >>"$log" 2>&1
for p in "${pkgs[@]}"; do
  printf '%s=%s ' "$p" "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || echo absent)" >>"$log"
done
echo >>"$log"
rm -rf /tmp/raglab-fresh /tmp/raglab-fresh-target /tmp/raglab-fresh-data
git clone -q "$repo" /tmp/raglab-fresh
cd /tmp/raglab-fresh || exit 1
export CARGO_TARGET_DIR=/tmp/raglab-fresh-target RAGLAB_DATA_DIR=/tmp/raglab-fresh-data
say "start: scripts/setup.sh --test"
s=$(date +%s)
scripts/setup.sh --test >>"$log" 2>&1; rc=$?
say "setup.sh --test rc=$rc in $(( $(date +%s) - s ))s"
s=$(date +%s)
RAGLAB_EXIT_AFTER_FIRST_FRAME=1 script -qec "scripts/setup.sh --demo" /dev/null >>"$log" 2>&1; rc=$?
say "setup.sh --demo (first frame, then exit) rc=$rc in $(( $(date +%s) - s ))s"
