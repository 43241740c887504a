#!/usr/bin/env bash
# faultline check --slurm / faultline resolve against a REAL slurmctld + slurmd (Debian
# slurm-wlm 22.05, munge), started here on loopback in a temporary directory.
#
# Usage: slurm_real_test.sh FAULTLINE_BIN MAKE_STORE_BIN
#   MAKE_STORE_BIN writes a store holding one drain-worthy diagnosis (tests/actions/slurm_store_tool.cc).
# Skips (exit 77, ctest SKIP_RETURN_CODE) with a message when slurm-wlm/munge are absent or we are
# not root (slurmd must run as root here). Stops only the daemons it started, by their pid files.
set -uo pipefail

FAULTLINE=${1:?faultline binary}
MAKE_STORE=${2:?store tool binary}

# shellcheck source=slurm_lib.sh
. "$(dirname "$0")/slurm_lib.sh"
slurm_require "needs root to run slurmd" slurmctld slurmd munged scontrol sinfo

T=$(mktemp -d /tmp/faultline-slurm.XXXXXX)
NODE=$(hostname -s)

cleanup() {
  stop_daemons
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*"
  echo "--- slurmctld.log (tail)"; tail -n 20 "$T/slurmctld.log" 2>/dev/null
  echo "--- slurmd.log (tail)"; tail -n 20 "$T/slurmd.log" 2>/dev/null
  exit 1
}

CTLD_PORT=$(free_port)
SLURMD_PORT=$(free_port)
[ "$SLURMD_PORT" != "$CTLD_PORT" ] || SLURMD_PORT=$((CTLD_PORT + 1))

mkdir -p "$T/state" "$T/spool"
start_munged

{
  slurm_conf_common faultlinetest "$NODE" "$CTLD_PORT" "$SLURMD_PORT"
  cat <<EOF
SlurmdPidFile=$T/slurmd.pid
SlurmdLogFile=$T/slurmd.log
ReturnToService=2
SlurmdTimeout=30
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
} >"$T/slurm.conf"
export SLURM_CONF="$T/slurm.conf"

slurmctld -c -f "$SLURM_CONF" || fail "slurmctld did not start"
STARTED_PIDFILES+=("$T/slurmctld.pid")
slurmd -f "$SLURM_CONF" || fail "slurmd did not start"
STARTED_PIDFILES+=("$T/slurmd.pid")
for f in "$T/slurmctld.pid" "$T/slurmd.pid"; do
  for _ in $(seq 100); do [ -s "$f" ] && break; sleep 0.1; done
done

node_line() { scontrol show node -o "$NODE" 2>&1; }
# Wait until the node registered (IDLE), so a drain is a real state change.
ready=0
for _ in $(seq 150); do
  if node_line | grep -q "State=IDLE"; then ready=1; break; fi
  sleep 0.2
done
[ "$ready" = 1 ] || fail "node never became IDLE: $(node_line)"
echo "slurm up: $(sinfo -h -N -o '%N %T')"

STORE="$T/faultline.db"
DIAG_ID=$("$MAKE_STORE" "$STORE" "$NODE") || fail "could not write the store"
echo "store holds diagnosis $DIAG_ID"

# 1. Without --apply: non-zero, nothing drained.
start=$(date +%s%N)
out=$("$FAULTLINE" check --slurm --store "$STORE" --slurm-node "$NODE")
rc=$?
end=$(date +%s%N)
echo "check (dry): rc=$rc $out ($(((end - start) / 1000000)) ms)"
[ "$rc" -ne 0 ] || fail "a drain-worthy diagnosis must exit non-zero"
node_line | grep -q "DRAIN" && fail "dry check drained the node"

# 2. --apply drains through scontrol with our reason.
start=$(date +%s%N)
out=$("$FAULTLINE" check --slurm --store "$STORE" --slurm-node "$NODE" --apply)
rc=$?
end=$(date +%s%N)
echo "check --apply: rc=$rc $out ($(((end - start) / 1000000)) ms)"
[ "$rc" -ne 0 ] || fail "check --apply must exit non-zero for a drain-worthy diagnosis"
line=$(node_line)
echo "$line" | grep -q "State=[A-Z+]*DRAIN" || fail "node not DRAIN after --apply: $line"
# The tag names the diagnosing node (the store's) and its diagnosis: ids are per store.
echo "$line" | grep -q "Reason=faultline: hbm_uncorrectable gpu/3 $NODE/d$DIAG_ID " || fail "reason missing: $line"
sinfo -h -N -o '%N|%T|%E' | grep -q "^$NODE|drained|faultline: hbm_uncorrectable" ||
  fail "sinfo does not show the drain: $(sinfo -h -N -o '%N|%T|%E')"
reason_time1=$(echo "$line" | sed -n 's/.*Reason=.*\[\(.*\)\].*/\1/p')

# 3. A second run does not drain again (same reason timestamp; one 'done' action stored).
sleep 1.1
out=$("$FAULTLINE" check --slurm --store "$STORE" --slurm-node "$NODE" --apply)
rc=$?
echo "check --apply (again): rc=$rc $out"
line=$(node_line)
reason_time2=$(echo "$line" | sed -n 's/.*Reason=.*\[\(.*\)\].*/\1/p')
[ "$reason_time1" = "$reason_time2" ] || fail "drained again: reason time $reason_time1 -> $reason_time2"
done_count=$("$MAKE_STORE" --count-done "$STORE" "$NODE") || fail "could not read actions"
[ "$done_count" = 1 ] || fail "expected one done drain in the store, got $done_count"

# 4. An operator's own drain is never undone by resolve; ours is.
out=$("$FAULTLINE" resolve --diagnosis "$DIAG_ID" --fixed-by "replaced GPU 3 (test)" --store "$STORE" \
  --slurm-node "$NODE")
rc=$?
echo "resolve: rc=$rc $out"
[ "$rc" -eq 0 ] || fail "resolve failed"
line=$(node_line)
echo "$line" | grep -q "DRAIN" && fail "resolve did not resume the node: $line"
out=$("$FAULTLINE" check --slurm --store "$STORE" --slurm-node "$NODE")
rc=$?
echo "check after resolve: rc=$rc $out"
[ "$rc" -eq 0 ] || fail "check after resolve must be fine"

scontrol update nodename="$NODE" state=drain reason="operator maintenance" || fail "operator drain failed"
DIAG2=$("$MAKE_STORE" "$STORE" "$NODE" --later) || fail "second diagnosis"
"$FAULTLINE" check --slurm --store "$STORE" --slurm-node "$NODE" --apply >/dev/null
"$FAULTLINE" resolve --diagnosis "$DIAG2" --fixed-by "test" --store "$STORE" --slurm-node "$NODE" >/dev/null
line=$(node_line)
echo "$line" | grep -q "Reason=operator maintenance" || fail "the operator's drain was touched: $line"

# 4b. A drain tagged as faultline wrote before tags named the node ("... d<id>"): whose diagnosis
# <id> is cannot be told, so resolve leaves it drained and says how to resume it by hand.
scontrol update nodename="$NODE" state=resume >/dev/null 2>&1
DIAG_OLD=$("$MAKE_STORE" "$STORE" "$NODE" --later3) || fail "fourth diagnosis"
"$FAULTLINE" check --slurm --store "$STORE" --slurm-node "$NODE" --apply >/dev/null
node_line | grep -q "Reason=faultline: hbm_uncorrectable gpu/7 $NODE/d$DIAG_OLD " || fail "no drain: $(node_line)"
scontrol update nodename="$NODE" state=drain reason="faultline: hbm_uncorrectable gpu/7 d$DIAG_OLD" ||
  fail "old-format drain failed"
out=$("$FAULTLINE" resolve --diagnosis "$DIAG_OLD" --fixed-by "test" --store "$STORE" --slurm-node "$NODE")
echo "resolve (old tag): $out"
node_line | grep -q "DRAIN" || fail "resolve resumed a drain whose tag names no node: $(node_line)"
echo "$out" | grep -q "scontrol update nodename=$NODE state=resume" || fail "no hint to resume by hand: $out"

# 5. slurmctld down: check --apply reports the failure, never success.
scontrol update nodename="$NODE" state=resume >/dev/null 2>&1
DIAG3=$("$MAKE_STORE" "$STORE" "$NODE" --later2) || fail "third diagnosis"
ctld_pid=$(cat "$T/slurmctld.pid")
kill "$ctld_pid"
for _ in $(seq 50); do kill -0 "$ctld_pid" 2>/dev/null || break; sleep 0.1; done
start=$(date +%s%N)
out=$(timeout 60 "$FAULTLINE" check --slurm --store "$STORE" --slurm-node "$NODE" --apply 2>&1)
rc=$?
end=$(date +%s%N)
echo "check --apply with slurmctld down: rc=$rc $out ($(((end - start) / 1000000)) ms)"
[ "$rc" -ne 0 ] || fail "must fail with slurmctld down"
echo "$out" | grep -qi "failed" || fail "the failure is not reported: $out"
failed_count=$("$MAKE_STORE" --count-failed "$STORE" "$NODE") || fail "could not read actions"
[ "$failed_count" -ge 1 ] || fail "the failure was not stored"

echo "PASS (diagnoses $DIAG_ID $DIAG2 $DIAG_OLD $DIAG3)"
exit 0
