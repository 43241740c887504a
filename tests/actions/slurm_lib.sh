# What the real-Slurm test scripts share (sourced by slurm_real_test.sh and
# slurm_breaker_test.sh): the prerequisites (skip, exit 77, when absent), the daemons they
# start and stop by pid file, a free loopback port, munged on its own socket, and the
# slurm.conf lines every loopback cluster here needs. Each script defines fail() (what to
# print when it fails) and sets T (its temporary directory) before calling these.

skip() {
  echo "SKIP: $*"
  exit 77
}

# slurm_require WHY_ROOT TOOL...: the tools on PATH (or /usr/sbin), root, and munge's key.
slurm_require() {
  local why_root=$1
  shift
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin" command -v "$tool" >/dev/null 2>&1 ||
      skip "$tool not installed (apt-get install slurm-wlm munge, or make deps)"
  done
  export PATH="$PATH:/usr/sbin"
  [ "$(id -u)" -eq 0 ] || skip "$why_root"
  [ -r /etc/munge/munge.key ] || skip "no /etc/munge/munge.key (the munge package creates it)"
}

STARTED_PIDFILES=()

# Stops only the daemons this script started, by their pid files.
stop_daemons() {
  for f in "${STARTED_PIDFILES[@]}"; do
    if [ -s "$f" ]; then
      pid=$(cat "$f")
      kill "$pid" 2>/dev/null
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null
    fi
  done
}

# A free loopback port, chosen at random so parallel runs rarely collide.
free_port() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo 0
}

# munged with the packaged key and our own socket, pid and log files under $T/munge.
start_munged() {
  mkdir -p "$T/munge"
  chmod 0755 "$T/munge"
  munged --force --socket="$T/munge/munge.sock" --pid-file="$T/munge/munged.pid" \
    --log-file="$T/munge/munged.log" --seed-file="$T/munge/munged.seed" --key-file=/etc/munge/munge.key ||
    fail "munged did not start: $(tail -n 3 "$T/munge/munged.log" 2>/dev/null)"
  STARTED_PIDFILES+=("$T/munge/munged.pid")
}

# slurm_conf_common CLUSTER HOST CTLD_PORT SLURMD_PORT: the slurm.conf lines of a loopback
# cluster whose state, spool, pid and log files live under $T; the caller appends its own.
slurm_conf_common() {
  cat <<EOF
ClusterName=$1
SlurmctldHost=$2(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$T/munge/munge.sock
CredType=cred/munge
SlurmctldPort=$3
SlurmdPort=$4
CommunicationParameters=NoInAddrAny
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmctldLogFile=$T/slurmctld.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
EOF
}
