#!/usr/bin/env bash
# The fleet breaker against a REAL slurmctld (Debian slurm-wlm 22.05, munge) on loopback: 30
# nodes, 24 of them faulting, and 24 `faultline check --slurm --apply` (one per node, each with
# its own store) started at the same instant with a breaker limit of 2 (docs/remediation.md
# "Breaker"). Every check reads the fleet under the limit and drains; each then confirms its
# drain against sinfo ordered by (drain time, node name) and undoes it when 2 come first.
# Asserts: exactly 2 nodes stay drained with a faultline reason, the 22 others stored
# held_by_breaker (most undone by the second look, a late starter held by the first) and are
# not drained; a second simultaneous round drains nobody.
#
# Usage: slurm_breaker_test.sh FAULTLINE_BIN STORE_TOOL_BIN
# No slurmd: a node defined State=DOWN and resumed is IDLE+NOT_RESPONDING and, with
# SlurmdTimeout=0, stays so; slurmctld drains and resumes it like any other.
# Skips (exit 77) when slurm-wlm/munge are absent or we are not root. Stops only the daemons it
# started, by their pid files.
set -uo pipefail

FAULTLINE=${1:?faultline binary}
STORE_TOOL=${2:?store tool binary}
NODES=30       # in slurm.conf
FAULTING=24    # checks started at once
LIMIT=2

# shellcheck source=slurm_lib.sh
. "$(dirname "$0")/slurm_lib.sh"
slurm_require "needs root to run slurmctld as SlurmUser=root" slurmctld munged scontrol sinfo flock

T=$(mktemp -d /tmp/faultline-slurm-breaker.XXXXXX)
SAMPLER_PID=""

cleanup() {
  [ -n "$SAMPLER_PID" ] && kill "$SAMPLER_PID" 2>/dev/null
  stop_daemons
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*"
  echo "--- sinfo"; sinfo -h -N -o '%N|%T|%H|%E' 2>&1 | head -40
  echo "--- slurmctld.log (tail)"; tail -n 20 "$T/slurmctld.log" 2>/dev/null
  exit 1
}

CTLD_PORT=$(free_port)
SLURMD_PORT=$((CTLD_PORT + 1))

mkdir -p "$T/state" "$T/spool" "$T/out"
start_munged

{
  slurm_conf_common faultlinebreaker "$(hostname -s)" "$CTLD_PORT" "$SLURMD_PORT"
  cat <<EOF
SlurmdTimeout=0
NodeName=bn[01-$NODES] NodeAddr=127.0.0.1 CPUs=1 State=DOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
} >"$T/slurm.conf"
export SLURM_CONF="$T/slurm.conf"

slurmctld -c -f "$SLURM_CONF" || fail "slurmctld did not start"
STARTED_PIDFILES+=("$T/slurmctld.pid")
for _ in $(seq 100); do [ -s "$T/slurmctld.pid" ] && break; sleep 0.1; done
up=0
for _ in $(seq 100); do
  if scontrol update nodename="bn[01-$NODES]" state=resume >/dev/null 2>&1; then up=1; break; fi
  sleep 0.2
done
[ "$up" = 1 ] || fail "slurmctld never answered"
idle=$(sinfo -h -N -o '%N|%T' | grep -c '|idle')
[ "$idle" = "$NODES" ] || fail "expected $NODES idle nodes, got $idle"
echo "slurm up: $NODES nodes idle (no slurmd: IDLE+NOT_RESPONDING)"

cat >"$T/faultline.toml" <<EOF
[policy]
breaker_max_nodes = $LIMIT
breaker_max_percent = 100.0
breaker_window = "1h"
EOF

node_name() { printf 'bn%02d' "$1"; }
for i in $(seq 1 "$FAULTING"); do
  n=$(node_name "$i")
  "$STORE_TOOL" "$T/store-$n.db" "$n" >/dev/null || fail "could not write the store of $n"
done

# %T: "drained", "draining", with '*' when not responding (no slurmd here).
faultline_drains() { sinfo -h -N -o '%N|%T|%E' | grep -cE '\|drain[a-z]*\*?\|faultline: '; }

# Every check waits on a shared lock the script holds, so all start at the same instant.
run_round() {
  local round=$1
  exec 9>"$T/go.lock"
  flock -x 9
  for i in $(seq 1 "$FAULTING"); do
    n=$(node_name "$i")
    (
      exec 9>&-
      flock -s "$T/go.lock" true
      exec "$FAULTLINE" check --slurm --apply --store "$T/store-$n.db" --node "$n" --slurm-node "$n" \
        --config "$T/faultline.toml"
    ) >"$T/out/$round-$n.txt" 2>&1 &
  done
  sleep 0.5 # every check is waiting on the lock
  local start
  start=$(date +%s%N)
  flock -u 9
  exec 9>&-
  wait_checks
  echo "round $round: $FAULTING checks in $((($(date +%s%N) - start) / 1000000)) ms"
}
wait_checks() {
  local pid
  for pid in $(jobs -p); do [ "$pid" = "$SAMPLER_PID" ] || wait "$pid"; done
}

# Sample sinfo while the checks run: the count drains reach before the confirmations undo them.
(
  max=0
  while [ ! -e "$T/stop-sampling" ]; do
    c=$(faultline_drains 2>/dev/null) || c=0
    [ "$c" -gt "$max" ] && max=$c && echo "$max" >"$T/max-drains"
    sleep 0.1
  done
) &
SAMPLER_PID=$!

run_round 1
touch "$T/stop-sampling"
wait "$SAMPLER_PID" 2>/dev/null
SAMPLER_PID=""
echo "most faultline drains sampled at once while the checks ran: $(cat "$T/max-drains" 2>/dev/null || echo 0)"

drained=$(faultline_drains)
echo "faultline drains after round 1: $drained (limit $LIMIT)"
sinfo -h -N -o '%N|%T|%H|%E' | grep 'faultline: '
held=0
undone=0 # held by the second look: drained, ranked over the limit, undone
kept=0
for i in $(seq 1 "$FAULTING"); do
  n=$(node_name "$i")
  latest=$("$STORE_TOOL" --latest "$T/store-$n.db" "$n") || fail "cannot read the store of $n"
  state=${latest%%$'\t'*}
  line=$(sinfo -h -N -n "$n" -o '%T|%E')
  case "$state" in
  held_by_breaker)
    held=$((held + 1))
    # A check that started late is held by the first look (it already sees the limit reached).
    if echo "$latest" | grep -q "ranks [0-9]* of [0-9]* taken out by faultline.*drain undone"; then
      undone=$((undone + 1))
    else
      echo "$latest" | grep -q "node(s) taken out by faultline in the last" || fail "$n: hold without a reason: $latest"
    fi
    echo "$line" | grep -q 'faultline: ' && fail "$n is held_by_breaker but still drained: $line"
    ;;
  done)
    kept=$((kept + 1))
    echo "$line" | grep -qE '^drain[a-z]*\*?\|faultline: ' || fail "$n is done but not drained: $line"
    ;;
  *) fail "$n: unexpected latest drain decision: $latest ($(cat "$T/out/1-$n.txt"))" ;;
  esac
done
echo "stored: $kept done, $held held_by_breaker ($undone drained and undone by the second look)"
echo "sample hold: $("$STORE_TOOL" --latest "$T/store-$(node_name "$FAULTING").db" "$(node_name "$FAULTING")")"
[ "$drained" -le "$LIMIT" ] || fail "$drained nodes drained by faultline, over the limit $LIMIT"
[ "$drained" -eq "$LIMIT" ] || fail "$drained nodes drained by faultline, expected exactly $LIMIT"
[ "$kept" -eq "$LIMIT" ] || fail "$kept drain decisions done, expected $LIMIT"
[ "$held" -eq $((FAULTING - LIMIT)) ] || fail "$held held_by_breaker, expected $((FAULTING - LIMIT))"
# The checks did act at the same instant: the first look alone would have let them all drain.
[ "$undone" -ge 1 ] || fail "no check got past the first look: nothing tested the second"

# Round 2: the held ones are looked at again, all at once: the first look now holds them.
before=$(sinfo -h -N -o '%N|%H|%E' | grep 'faultline: ' | sort)
run_round 2
after=$(sinfo -h -N -o '%N|%H|%E' | grep 'faultline: ' | sort)
[ "$before" = "$after" ] || fail "round 2 changed the drains: before [$before] after [$after]"
for i in $(seq 1 "$FAULTING"); do
  n=$(node_name "$i")
  grep -q "drain" "$T/out/2-$n.txt" || fail "$n: round 2 printed no drain line: $(cat "$T/out/2-$n.txt")"
done

echo "PASS ($FAULTING simultaneous checks, $NODES nodes, limit $LIMIT: $drained drained, $held held)"
exit 0
