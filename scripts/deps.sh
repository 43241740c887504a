#!/usr/bin/env bash
# Installs the Debian bookworm packages faultline needs, only those missing.
# Idempotent and quiet when everything is present. Needs root (or sudo) only to install.
#   scripts/deps.sh          what building (and `make demo`) needs
#   scripts/deps.sh --test   plus the real components the tests start (`make test`)
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git python3
  clang libclang-rt-14-dev
  nlohmann-json3-dev libcli11-dev libcurl4-openssl-dev libssl-dev zlib1g-dev libsqlite3-dev
  libvectorscan-dev libcpp-httplib-dev libyaml-cpp-dev libtomlplusplus-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libxapian-dev     # assistant knowledge base index (src/assistant/kb)
  libnats-dev       # fleet transport: NATS JetStream C client (src/fleet/nats)
  openssl curl sqlite3 gzip
)
TEST_PACKAGES=(
  slurm-wlm munge   # tests/actions/slurm_real_test.sh runs a real slurmctld + slurmd
  prometheus        # tests/api/prometheus_test.sh: Prometheus scrapes `faultline serve`; promtool
  chromium fonts-dejavu-core  # tests/dashboard/browser_test.sh: the dashboard in headless Chromium
  systemd           # tests/deploy: systemd-analyze verify on the unit (nothing is started)
  nats-server       # tests/fleet_nats: a real nats-server -js (and a 3-server cluster) on loopback
  dpkg-dev          # tests/deploy/package_test.sh: cpack's dpkg-shlibdeps (build-essential has it too)
)
if [ "${1:-}" = "--test" ]; then PACKAGES+=("${TEST_PACKAGES[@]}"); fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
