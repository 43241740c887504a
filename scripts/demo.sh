#!/usr/bin/env bash
# The main job on the embedded default: diagnose each sample node log in examples/.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/faultline}
for log in examples/*.dmesg examples/*.journal examples/*.kmsg; do
  echo "################ $log"
  "$bin" diagnose --gpu-map examples/gpu-map.json "$log"
done
