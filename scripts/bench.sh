#!/usr/bin/env bash
# Runs every benchmark program in a build dir and prints its figures.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
for b in "$dir"/bench/bench_*; do
  [ -x "$b" ] || continue
  echo "==== $(basename "$b")"
  "$b" --benchmark_min_time=0.5
done
