#!/usr/bin/env bash
# Smoke test of the NVML collector on a real NVIDIA machine (not run in CI: it needs a
# GPU and its driver). Runs `faultline collect nvml --json`, then checks:
#   - it exits 0 and prints one JSON sample;
#   - the GPU count (and UUIDs) match `nvidia-smi` when nvidia-smi is installed;
#   - every GPU has identity, temperature, power + limit, SM/mem clocks, clock event
#     reasons and PCIe link gen/width (ECC, remap, HBM temperature and NVLink fields
#     are reported but only warned about: consumer and older GPUs lack them);
#   - no GPU is reported lost and no call failed for the whole node;
# and measures the collector's CPU cost per sample on real NVML (user + sys).
#
# Usage: scripts/gpu-smoke.sh [path/to/faultline]   (default ./build/faultline)
# Exit: 0 all checks passed, 1 a check failed, 2 cannot run here (no binary, no python3).
set -uo pipefail
bin=${1:-./build/faultline}
if [ ! -x "$bin" ]; then
  echo "gpu-smoke: $bin is not an executable faultline binary" >&2
  exit 2
fi
if ! command -v python3 >/dev/null; then
  echo "gpu-smoke: python3 is needed to check the JSON output" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$bin" collect nvml --json --count 1 >"$work/sample.json" 2>"$work/stderr"
rc=$?
if [ $rc -ne 0 ]; then
  echo "gpu-smoke: FAIL: 'faultline collect nvml --json' exited $rc"
  cat "$work/stderr"
  exit 1
fi

if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,uuid --format=csv,noheader >"$work/smi.csv" 2>/dev/null || : >"$work/smi.csv"
else
  echo "gpu-smoke: note: nvidia-smi not found; GPU count not cross-checked"
fi

python3 - "$work/sample.json" "$work/smi.csv" <<'PY' || exit 1
import json, os, sys
lines = [l for l in open(sys.argv[1]) if l.strip()]
fails, warns = [], []
if len(lines) != 1:
    print(f"gpu-smoke: FAIL: expected 1 JSON sample, got {len(lines)} lines"); sys.exit(1)
s = json.loads(lines[0])
n = s.get("gpu_count", 0)
if n <= 0: fails.append("no GPUs reported")
smi = []
if os.path.exists(sys.argv[2]):
    smi = [l.split(",")[1].strip() for l in open(sys.argv[2]) if "," in l]
if smi and len(smi) != n: fails.append(f"GPU count {n} != nvidia-smi's {len(smi)}")
by_gpu = {}
for o in s["observations"]:
    idx = o["component"].get("keys", {}).get("index")
    by_gpu.setdefault(idx, []).append(o)
def has(obs, kind, **attrs):
    return any(o["kind"] == kind and all(o.get("attrs", {}).get(k) == v for k, v in attrs.items()) for o in obs)
required = [("gpu_identity", {}), ("temperature", {"sensor": "gpu"}), ("power", {}), ("power_limit", {}),
            ("clock", {"clock": "sm"}), ("clock", {"clock": "mem"}), ("clock_throttle", {}),
            ("pcie_link_gen", {}), ("pcie_link_width", {})]
optional = [("ecc_sbe", {}), ("ecc_dbe", {}), ("retired_pages", {}), ("row_remap_pending", {}),
            ("temperature", {"sensor": "memory"}), ("pcie_replay", {}), ("nvlink_state", {})]
uuids = set()
for i in range(n):
    obs = by_gpu.get(str(i), [])
    if has(obs, "gpu_lost"): fails.append(f"gpu {i} reported lost"); continue
    for kind, attrs in required:
        if not has(obs, kind, **attrs): fails.append(f"gpu {i}: no {kind} {attrs or ''}")
    for kind, attrs in optional:
        if not has(obs, kind, **attrs): warns.append(f"gpu {i}: no {kind} {attrs or ''} (unsupported here?)")
    ident = [o for o in obs if o["kind"] == "gpu_identity"]
    if ident:
        a = ident[0].get("attrs", {})
        if not a.get("uuid", "").startswith("GPU-"): fails.append(f"gpu {i}: bad uuid {a.get('uuid')!r}")
        if not a.get("bdf"): fails.append(f"gpu {i}: no PCI bus id")
        uuids.add(a.get("uuid"))
if smi and uuids and uuids != set(smi): fails.append("GPU UUIDs differ from nvidia-smi's")
for e in s.get("errors", []):
    (fails if e["gpu"] < 0 else warns).append("NVML error: " + e["message"])
for note in s.get("notes", []): warns.append("note: " + note)
for w in warns: print("gpu-smoke: warn:", w)
for f in fails: print("gpu-smoke: FAIL:", f)
print(f"gpu-smoke: {n} GPU(s), {len(s['observations'])} observations, {len(fails)} failure(s)")
sys.exit(1 if fails else 0)
PY

# CPU per sample on real NVML: (6 samples - 1 sample) / 5, so process start-up cancels.
# Table output (not --json) so the figure is the collector's, not JSON serialisation's.
python3 - "$bin" <<'PY'
import resource, subprocess, sys
def cpu(count):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.argv[1], "collect", "nvml", "--count", str(count), "--interval", "1"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
per_sample = (cpu(6) - cpu(1)) / 5
print(f"gpu-smoke: CPU per sample {per_sample * 1e3:.2f} ms (user+sys, collect + table) = "
      f"{per_sample * 100:.3f}% of a core at a 1 s interval")
PY
echo "gpu-smoke: PASS"
