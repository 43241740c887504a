#!/usr/bin/env bash
# Runs every libFuzzer target in a build dir for a few seconds each, seeded from
# fuzz/corpus/<name>, as many at once as there are cores (JOBS): each target is one
# single-threaded process, and CI's time is bounded. Prints "fuzz: PASS <name>" or
# "fuzz: FAIL <name>" (then the end of its log) per target, as each ends.
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-asan}
seconds=${2:-10}
jobs=${JOBS:-$(nproc)}

# One target: its report is printed in one go, after the run, so parallel runs do not interleave.
run_one() {
  local bin=$1 seconds=$2 name seeds work report
  name=$(basename "$bin")
  seeds="fuzz/corpus/${name%_fuzzer}"
  work=$(mktemp -d)
  [ -d "$seeds" ] && cp -r "$seeds"/. "$work"/ 2>/dev/null
  if "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="$work/" "$work" >"$work.log" 2>&1; then
    report="fuzz: PASS $name ($(grep -o 'stat::number_of_executed_units: [0-9]*' "$work.log" | grep -o '[0-9]*$' || echo '?') runs)"
  else
    report="fuzz: FAIL $name"$'\n'"$(tail -40 "$work.log")"
  fi
  rm -rf "$work" "$work.log"
  printf '%s\n' "$report"
}
export -f run_one

targets=()
for bin in "$dir"/fuzz/*_fuzzer; do
  [ -x "$bin" ] && targets+=("$bin")
done
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz.sh: no fuzz targets in $dir/fuzz (configure it with -DFAULTLINE_FUZZ=ON and clang)" >&2
  exit 1
fi
results=$(mktemp)
trap 'rm -f "$results"' EXIT
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one "$1" "$2"' _ {} "$seconds" | tee "$results"
! grep -q '^fuzz: FAIL' "$results"
