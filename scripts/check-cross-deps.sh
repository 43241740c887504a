#!/usr/bin/env bash
# Fails when the build uses a library that scripts/cross-arm64.sh does not fetch for arm64
# (GB200/GH200 hosts are aarch64): every architecture-dependent -dev package scripts/deps.sh
# installs for building must be in the cross script's ARM64_DEV list. Cheap (no cross build),
# so `make test` runs it (tests/deploy); the cross build itself stays out of CI.
#
#   scripts/check-cross-deps.sh [DEPS_SH] [CROSS_SH]   (defaults: the repository's own)
#
# Header-only packages (Architecture: all) serve both architectures. Left out on purpose:
# libbenchmark-dev (the cross build sets FAULTLINE_BUILD_BENCH=OFF) and libclang-rt-14-dev
# (sanitizers and fuzzing run on the host only).
set -euo pipefail
cd "$(dirname "$0")/.."
DEPS=${1:-scripts/deps.sh}
CROSS=${2:-scripts/cross-arm64.sh}
NOT_CROSS=(libbenchmark-dev libclang-rt-14-dev)

# The words of a bash array assignment `NAME=( ... )` in FILE, comments dropped.
array_words() {
  sed -n "/^$2=(/,/^)/p" "$1" | sed -e "s/^$2=(//" -e 's/#.*//' -e 's/)$//' | tr -s ' \t' '\n' | grep -v '^$' || true
}

mapfile -t build < <(array_words "$DEPS" PACKAGES | grep -E -- '-dev$')
mapfile -t cross < <(array_words "$CROSS" ARM64_DEV)
if [ "${#build[@]}" -eq 0 ] || [ "${#cross[@]}" -eq 0 ]; then
  echo "check-cross-deps: could not read PACKAGES from $DEPS or ARM64_DEV from $CROSS" >&2
  exit 2
fi

missing=()
for p in "${build[@]}"; do
  case " ${NOT_CROSS[*]} ${cross[*]} " in *" $p "*) continue ;; esac
  arch=$(dpkg-query -W -f='${Architecture}' "$p" 2>/dev/null || apt-cache show --no-all-versions "$p" 2>/dev/null |
    sed -n 's/^Architecture: //p' | head -n1)
  if [ -z "$arch" ]; then
    echo "check-cross-deps: cannot tell the architecture of $p (not installed, not in apt's index)" >&2
    exit 2
  fi
  [ "$arch" = all ] || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "check-cross-deps: $CROSS does not fetch for arm64: ${missing[*]}" >&2
  echo "  add them to ARM64_DEV (or to NOT_CROSS here, saying why the cross build does not need them)" >&2
  exit 1
fi
echo "check-cross-deps: ok: the ${#build[@]} -dev packages of $DEPS are fetched for arm64 or need not be"
