#!/usr/bin/env bash
# Runs every libFuzzer target in a fuzz build dir for a few seconds, seeded from fuzz/corpus/<name>.
# Prints "fuzz: PASS <name>" or "fuzz: FAIL <name>" per target.
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-fuzz}
seconds=${2:-10}
status=0
for bin in "$dir"/fuzz/*_fuzzer; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  seeds="fuzz/corpus/${name%_fuzzer}"
  work=$(mktemp -d)
  [ -d "$seeds" ] && cp -r "$seeds"/. "$work"/ 2>/dev/null
  if "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/" \
      "$work" >"$work.log" 2>&1; then
    echo "fuzz: PASS $name ($(grep -o 'stat::number_of_executed_units: [0-9]*' "$work.log" | grep -o '[0-9]*$' || echo '?') runs)"
  else
    echo "fuzz: FAIL $name"
    tail -40 "$work.log"
    status=1
  fi
  rm -rf "$work" "$work.log"
done
exit $status
