#!/usr/bin/env bash
# The production agent in real time against simulated faults, as operators run it (issue 24).
#
# For each scenario, N runs (several at once): `faultline sim --scenario FILE` serves the node in
# real time and writes agent.toml; the production `faultline agent --config DIR/agent.toml` (with
# FAKE_NVML_STATE as the simulator prints it) watches it; when the node's time is up,
# `faultline check --slurm --store DIR/faultline.db --node sim-node` (Slurm's health check,
# report only: never --apply) reads the store the running agent writes; then the agent is
# stopped and `faultline serve` (read-only, a free loopback port) gives its diagnoses and
# decisions (the policy's action rows) through /api/v1. One line per run, a summary table, and
# exit 1 when any expectation fails:
#   - a hardware truth (every class but user_application, workload_imbalance and none): a drain
#     decision taken (a dry run counts: the default policy) for the truth's fault class in every
#     run, no decision taken for another class, and check exits 1 with "faultline: drain:". This
#     suits classes whose plan always drains (policy/plans.cc: fell off the bus, coolant leak,
#     row remap exhausted, ...), not those that drain only when the job slows.
#   - user_application, workload_imbalance, none: no decision taken for another class (nothing
#     that blames hardware), no cordon, drain, reset_gpu, reboot_node or rma_bundle at all, and
#     check exits 0.
# "Taken" is as in `bench accuracy` (docs/scenarios.md): a ledger key that reached dry_run,
# decided, done or failed; held, withdrawn, refused, superseded and no-actuator keys were not.
#
# Speed 1 (the simulator's default), not faster: the agent runs on the wall clock. The node
# dates what it publishes at t / speed (sim/node/sim_node.h SimTimebase), so at speed S every rate
# the agent computes over its wall-clock windows (XIDs or SBEs per minute, step reports, AER
# counts) is S times the scenario's, its 1 s / 5 s / 10 s polls (agent.toml) see S times
# coarser scenario time, and the policy's 20 s settle becomes 20 x S scenario seconds. A faster
# run would show the agent different inputs than a real node would, which is what this checks.
# To keep runs short, each stops --settle seconds (default 60) after the fault starts
# (truth.start_s, read with `faultline sim --check`): the policy's 20 s settle plus the polls.
#
# Usage: scripts/live-agent.sh [--runs N] [--jobs J] [--settle S] [--build DIR] [--keep]
#                              [--verbose] [SCENARIO.yaml ...]
#   default scenarios: fell off the bus, coolant leak, remap failure and two user-program ones.
#   --jobs: runs at once (default 8; a run, its simulator and agent together, costs ~1% of a core).
#   --keep: keep the work directories (each run's store, logs) and print where.
#   --verbose: every run's diagnosis timeline and decision rows (always shown for a failed run).
# Needs a built tree (`faultline`, `faultline-sim`, the fake NVML library) and python3.
# Run times: the longest scenario's start + settle, times ceil(runs x scenarios / jobs).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RUNS=3
JOBS=8
SETTLE=60
BUILD="$ROOT/build"
KEEP=0
VERBOSE=0
SCENARIOS=()
DEFAULT_SCENARIOS=(gpu7-fell-off-bus coolant-leak row-remap-exhausted user-xid31-mmu-fault
  user-xid13-storm-with-sbe-noise)

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --settle) SETTLE="$2"; shift 2 ;;
    --build) BUILD="$2"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --verbose) VERBOSE=1; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "live-agent: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) SCENARIOS+=("$1"); shift ;;
  esac
done
for n in "$RUNS" "$JOBS" "$SETTLE"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "live-agent: --runs, --jobs and --settle take positive integers" >&2; exit 2; }
done
if [ ${#SCENARIOS[@]} -eq 0 ]; then
  for s in "${DEFAULT_SCENARIOS[@]}"; do SCENARIOS+=("$ROOT/scenarios/$s.yaml"); done
fi
FL="$BUILD/faultline"
for f in "$FL" "$BUILD/faultline-sim"; do
  [ -x "$f" ] || { echo "live-agent: $f is not built (flb --target faultline faultline-sim fake_nvml)" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "live-agent: needs python3 (scripts/deps.sh)" >&2; exit 2; }

PARENT="$(mktemp -d "${TMPDIR:-/tmp}/live-agent.XXXXXX")"
mkdir -p "$PARENT/results" "$PARENT/logs"

# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  local p
  for p in $(jobs -pr); do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$KEEP" = 1 ]; then echo "live-agent: work directories kept in $PARENT"; else rm -rf "$PARENT"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# "NAME TRUTH_CLASS START_S DURATION_S" from the simulator's own reading of the file.
scenario_facts() {
  local out
  out="$("$FL" sim --check --scenario "$1")" || return 1
  local name dur class start
  read -r name dur <<<"$(sed -n 's/^scenario \([^ ]*\) (\([0-9.]*\)s, seed .*/\1 \2/p' <<<"$out")"
  read -r class start <<<"$(sed -n 's/^truth: \([a-z_]*\) .* from t=\([0-9.]*\)s.*/\1 \2/p' <<<"$out")"
  [ -n "${dur:-}" ] && [ -n "${start:-}" ] || return 1
  echo "$name $class $start $dur"
}

# Waits (up to 60 s) for `pattern` in `file` while `pid` lives; prints the first match's group 1.
wait_for() {
  local file="$1" pattern="$2" pid="$3" i got
  for ((i = 0; i < 300; i++)); do
    got="$(sed -n "s/$pattern/\1/p" "$file" 2>/dev/null | head -n1)"
    if [ -n "$got" ]; then echo "$got"; return 0; fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}

# One run: node, agent, health check, then the store read back. Prints its line and writes
# its result row (results/NAME-K.tsv) for the summary.
run_one() {
  set +e
  local file="$1" k="$2" name truth start dur
  read -r name truth start dur <<<"$(scenario_facts "$file")"
  if [ -z "${dur:-}" ]; then
    name="$(basename "$file")"
    echo "$name #$k: FAIL cannot read the scenario (faultline sim --check)"
    printf '%s\t%s\t?\t0\t0\t0\t-\t-\tunread\n' "$name" "$k" >"$PARENT/results/$name-$k.tsv"
    return 1
  fi
  local until_s
  until_s="$(python3 -c "import math; print(min(float('$dur'), math.ceil(float('$start') + $SETTLE)))")"
  local dir="$PARENT/$name-$k" log="$PARENT/logs/$name-$k"
  # Not `local`: the EXIT trap runs after the function's scope is gone (each run_one is a
  # subshell of its own, so these globals are its own too).
  sim_pid="" agent_pid="" serve_pid=""
  trap 'kill -TERM $sim_pid $agent_pid $serve_pid 2>/dev/null; wait 2>/dev/null' EXIT
  trap 'exit 143' TERM
  local t0
  t0="$(date +%s%N)"  # the scenario's t = 0, within the simulator's start-up (milliseconds)
  "$FL" sim --scenario "$file" --workdir "$dir" --duration "$until_s" >"$log.sim" 2>&1 &
  sim_pid=$!
  local nvml
  if ! nvml="$(wait_for "$log.sim" '.*FAKE_NVML_STATE=\([^ ]*\) .*' "$sim_pid")"; then
    echo "$name #$k: FAIL the simulator did not start: $(tail -n 3 "$log.sim" | tr '\n' ' ')"
    printf '%s\t%s\t%s\t0\t0\t0\t-\t-\tsimulator failed\n' "$name" "$k" "$truth" >"$PARENT/results/$name-$k.tsv"
    return 1
  fi
  FAKE_NVML_STATE="$nvml" "$FL" agent --config "$dir/agent.toml" >"$log.agent" 2>&1 &
  agent_pid=$!
  wait "$sim_pid"
  sim_pid=""
  local check check_rc
  check="$("$FL" check --slurm --store "$dir/faultline.db" --node sim-node 2>&1)"
  check_rc=$?
  local agent_alive=1
  kill -0 "$agent_pid" 2>/dev/null || agent_alive=0
  kill -TERM "$agent_pid" 2>/dev/null
  wait "$agent_pid"
  local agent_rc=$?
  agent_pid=""
  "$FL" serve --store "$dir/faultline.db" --node sim-node --listen 127.0.0.1:0 >"$log.serve" 2>&1 &
  serve_pid=$!
  local port
  port="$(wait_for "$log.serve" '.*(port \([0-9]*\)).*' "$serve_pid")" || port=0
  python3 "$PARENT/summarise.py" --port "$port" --name "$name" --run "$k" --truth "$truth" --start "$start" \
    --t0-ns "$t0" --check-rc "$check_rc" --check "$(head -n1 <<<"$check")" --agent-alive "$agent_alive" \
    --agent-rc "$agent_rc" --verbose "$VERBOSE" --result "$PARENT/results/$name-$k.tsv" --workdir "$dir"
  local rc=$?
  kill -TERM "$serve_pid" 2>/dev/null
  wait "$serve_pid" 2>/dev/null
  serve_pid=""
  return $rc
}

# Reads one run's store through the API, judges it, prints its line (and details), writes its row.
cat >"$PARENT/summarise.py" <<'PY'
import argparse, json, sys, urllib.parse, urllib.request

QUIET = {"user_application", "workload_imbalance", "none"}  # truths that must not drain or blame
DISRUPTIVE = {"cordon", "drain", "reset_gpu", "reboot_node", "rma_bundle"}
TAKEN = {"dry_run", "decided", "done", "failed"}

p = argparse.ArgumentParser()
for a in ("port", "name", "run", "truth", "start", "t0-ns", "check-rc", "check", "agent-alive", "agent-rc",
          "verbose", "result", "workdir"):
    p.add_argument("--" + a, required=True)
a = p.parse_args()
t0 = int(a.t0_ns)

def get(path, key):
    """Every row of a paged /api/v1 list."""
    rows, cursor = [], None
    while True:
        q = {"limit": "1000"}
        if cursor:
            q["cursor"] = cursor
        url = "http://127.0.0.1:%s/api/v1/%s?%s" % (a.port, path, urllib.parse.urlencode(q))
        with urllib.request.urlopen(url, timeout=30) as r:
            page = json.load(r)
        rows += page.get(key, [])
        cursor = page.get("next_cursor")
        if not cursor:
            return rows

def secs(ns):
    return "%.1f" % ((ns - t0) / 1e9) if ns else "-"  # 0: a `none` diagnosis has no time span

try:
    node = json.load(urllib.request.urlopen("http://127.0.0.1:%s/api/v1/node" % a.port, timeout=30))
    diagnoses = get("diagnoses", "diagnoses")
    actions = get("actions", "actions")
except Exception as e:  # no store, no server: the run failed before any judgement
    node, diagnoses, actions = None, [], []
    error = "cannot read the store through faultline serve: %s" % e
else:
    error = ""

def attr(r, k):
    return r.get("attrs", {}).get(k, "")

# Ledger keys: the latest state of each, and the first time it was taken.
latest, first_taken, rows_by_key = {}, {}, {}
for r in sorted(actions, key=lambda r: r["time_ns"]):
    key = attr(r, "key")
    if not key:
        continue
    latest[key] = r
    rows_by_key.setdefault(key, []).append(r)
    if attr(r, "state") in TAKEN and key not in first_taken:
        first_taken[key] = r

quiet = a.truth in QUIET
taken, wrong = [], []
drain = False
for key, r in sorted(first_taken.items(), key=lambda kv: kv[1]["time_ns"]):
    cls, fault = attr(r, "class"), attr(r, "fault").split("|")[0]
    state = attr(latest[key], "state")
    desc = "%s/%s/%s" % (cls, fault, state)
    taken.append(desc)
    if fault != a.truth or (quiet and cls in DISRUPTIVE):
        wrong.append("t=%ss %s (%s)" % (secs(r["time_ns"]), desc, attr(r, "fault")))
    if cls == "drain" and fault == a.truth:
        drain = True
first = min((r["time_ns"] for r in first_taken.values()), default=None)
first_s = secs(first) if first is not None else "-"

active = (node or {}).get("active_diagnosis")
final = "%s %s" % (active["fault_class"], active["component"].get("id", "")) if active else "none"
check_rc = int(a.check_rc)
if quiet:
    ok = not wrong and check_rc == 0
else:
    ok = drain and not wrong and check_rc == 1 and a.check.startswith("faultline: drain:")
problems = []
if error:
    ok = False
    problems.append(error)
if a.agent_alive != "1" or a.agent_rc != "0":
    ok = False
    problems.append("agent %s (exit %s)" % ("stopped" if a.agent_alive == "1" else "died early", a.agent_rc))

print("%s #%s: %s truth=%s final=%s first_decision=%s taken=[%s] wrong=%d drain=%s check=%d %r%s" % (
    a.name, a.run, "PASS" if ok else "FAIL", a.truth, final, first_s + ("s" if first is not None else ""),
    ", ".join(taken), len(wrong), "yes" if drain else "no", check_rc, a.check,
    "".join(" [" + p + "]" for p in problems)))
if not ok or a.verbose == "1":
    print("  fault starts at ~t=%ss; files %s" % (a.start, a.workdir))
    print("  diagnoses (one row per change of the primary; t = first..last seen):")
    for d in sorted(diagnoses, key=lambda d: (d.get("first_ns", 0), d.get("id", 0))):
        print("    t=%s..%s %s %s -> %s (%s)" % (secs(d.get("first_ns", 0)), secs(d.get("last_ns", 0)),
              d["fault_class"], d["component"].get("id", ""), d["action"], d.get("severity", "")))
    print("  decision rows (the policy's ledger, in order):")
    for key, rows in sorted(rows_by_key.items(), key=lambda kv: kv[1][0]["time_ns"]):
        for r in rows:
            print("    t=%ss %s %s %s %s%s" % (secs(r["time_ns"]), attr(r, "class"), attr(r, "fault"),
                  attr(r, "state"), "dry run " if r.get("dry_run") else "", r.get("outcome", "")))
    for w in wrong:
        print("  WRONG: " + w)
with open(a.result, "w") as f:
    f.write("\t".join([a.name, a.run, a.truth, "1" if ok else "0", "1" if drain else "0", str(len(wrong)),
                       first_s, str(check_rc), final]) + "\n")
sys.exit(0 if ok else 1)
PY

echo "live-agent: ${#SCENARIOS[@]} scenario(s) x $RUNS run(s), $JOBS at once, speed 1, each until ~${SETTLE}s after its fault; work in $PARENT"
for ((k = 1; k <= RUNS; k++)); do
  for f in "${SCENARIOS[@]}"; do
    while [ "$(jobs -pr | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
    run_one "$f" "$k" &
  done
done
while [ "$(jobs -pr | wc -l)" -gt 0 ]; do wait -n || true; done

# The summary: one row per scenario over its runs.
fail=0
echo
echo "summary (first decision: scenario seconds, min..max over the runs that took one):"
python3 - "$PARENT/results" "$RUNS" "${SCENARIOS[@]}" <<'PY' || fail=1
import glob, os, sys
results, runs = sys.argv[1], int(sys.argv[2])
rows = [l.rstrip("\n").split("\t") for f in sorted(glob.glob(os.path.join(results, "*.tsv"))) for l in open(f)]
by = {}
for r in rows:
    by.setdefault(r[0], []).append(r)
fmt = "%-34s %-20s %-12s %5s %5s %6s %6s %-13s %s"
print(fmt % ("scenario", "truth", "expect", "runs", "pass", "drains", "wrong", "first", "check exits"))
bad = False
for name in sorted(by):
    rs = by[name]
    truth = rs[0][2]
    expect = "no drain" if truth in ("user_application", "workload_imbalance", "none") else "drain"
    passed = sum(r[3] == "1" for r in rs)
    firsts = [float(r[6]) for r in rs if r[6] != "-"]
    first = "%.0f..%.0f" % (min(firsts), max(firsts)) if firsts else "-"
    print(fmt % (name, truth, expect, len(rs), passed, sum(r[4] == "1" for r in rs),
                 sum(int(r[5]) for r in rs), first, ",".join(r[7] for r in rs)))
    bad = bad or passed != len(rs) or len(rs) != runs
expected = runs * (len(sys.argv) - 3)
if len(rows) != expected:
    print("%d of %d runs reported a result" % (len(rows), expected))
    bad = True
print("RESULT: " + ("FAIL" if bad else "PASS"))
sys.exit(1 if bad else 0)
PY
exit $fail
