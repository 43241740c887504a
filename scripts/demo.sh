#!/usr/bin/env bash
# The main job on the embedded default: "this node got slow: why?"
# Starts the simulated HGX node of scenarios/demo-psu-degrading-power-brake.yaml (a
# degrading PSU makes the board brake every GPU while a user job logs a harmless XID 13),
# serves it through the mock Redfish BMC, the fake NVML library, a kmsg-format log, a fake
# sysfs tree and the job's step-time reports, runs the agent against it, and prints the
# diagnosis with its evidence chain and what was ruled out.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/faultline}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" sim --scenario scenarios/demo-psu-degrading-power-brake.yaml --agent --workdir "$work" --keep
# The assistant over the store the agent left: the same diagnosis explained, with its
# evidence ids and the runbook sections from kb/ (offline: no model is called).
store=$(ls -d "$work"/*/faultline.db 2>/dev/null | head -1)
if [ -n "$store" ]; then
  echo
  echo "==== faultline ask \"why is this node slow?\" (offline, kb/) ===="
  "$bin" ask --store "$store" --kb kb "why is this node slow?" || true
fi
echo
echo "More: scenarios/ holds $(ls scenarios/*.yaml | wc -l) scenarios;" \
  "'$bin bench accuracy --scenarios scenarios' scores them all;" \
  "'$bin diagnose examples/gpu-fell-off-bus.dmesg' reads a saved kernel log."
