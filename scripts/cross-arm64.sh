#!/usr/bin/env bash
# Cross-builds faultline for arm64 (GB200/GH200 hosts are aarch64) with Debian's cross
# toolchain, then runs the unit tests under qemu-user. Slow (a second architecture's
# libraries; every test runs emulated), so it is not part of `make test`.
#
#   scripts/cross-arm64.sh [BUILD_DIR]     (default build-arm64; root or sudo to install)
#
# Environment: JOBS (default nproc), SKIP_DEPS=1 (toolchain and sysroot already there),
# SKIP_TESTS=1 (build the programs only), CROSS_CMAKE_ARGS (extra cmake arguments).
#
# The arm64 libraries go into a private sysroot ($BUILD/sysroot, from `apt-get download`
# + `dpkg -x`), not into the host's dpkg database: on bookworm libyaml-cpp-dev is not
# Multi-Arch: same (installing :arm64 would remove the host's), and the :arm64 copies of
# M-A: same libraries must carry the host's exact version, so installing them would
# upgrade host packages (libssl, zlib, krb5, perl...) under whatever else uses the machine.
# The host only gets the cross compiler and qemu, and dpkg learns the arm64 architecture
# (so apt can fetch arm64 package indices).
#
# Without binfmt_misc (containers) a test that execs the faultline binary as a child
# cannot start an arm64 executable; those tests are left out and the script says so.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-arm64}
JOBS=${JOBS:-$(nproc)}
SYSROOT=$PWD/$BUILD/sysroot
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# The arm64 side of what scripts/deps.sh installs for a test build (no benchmarks, no
# fuzzing). Header-only (architecture "all") packages are shared with the host.
ARM64_DEV=(
  libcurl4-openssl-dev libssl-dev zlib1g-dev libsqlite3-dev libvectorscan-dev
  libcpp-httplib-dev libyaml-cpp-dev libtomlplusplus-dev libgtest-dev libgmock-dev libstdc++6 libgcc-s1 libc6
)
HOST_TOOLS=(g++-aarch64-linux-gnu qemu-user-static file)

install_host_tools() {
  scripts/deps.sh
  export DEBIAN_FRONTEND=noninteractive
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "cross-arm64: adding the arm64 architecture to dpkg (package indices only)"
    $SUDO dpkg --add-architecture arm64
  fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends --no-remove "${HOST_TOOLS[@]}" >/dev/null
}

# Every :arm64 package the -dev packages need, recursively; the cross toolchain's own
# libc/libstdc++ development files stand in for libc6-dev and friends.
arm64_closure() {
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
    --no-enhances "${ARM64_DEV[@]/%/:arm64}" 2>/dev/null |
    grep -E '^[a-z0-9][^ ]*:arm64$' | sort -u |
    grep -vE '^(libc6-dev|libc-dev-bin|libcrypt-dev|libnsl-dev|libtirpc-dev|linux-libc-dev|rpcsvc-proto):'
}

# Absolute symlinks in a package (libfoo.so -> /lib/...) must point inside the sysroot.
relink_absolute() {
  find "$SYSROOT" -type l | while read -r link; do
    target=$(readlink "$link")
    case $target in /*) ln -sfn "$SYSROOT$target" "$link" ;; esac
  done
}

make_sysroot() {
  local debs=$PWD/$BUILD/debs
  mkdir -p "$debs" "$SYSROOT"
  mapfile -t pkgs < <(arm64_closure)
  echo "cross-arm64: sysroot from ${#pkgs[@]} arm64 packages"
  (cd "$debs" && apt-get download -qq "${pkgs[@]}")
  for deb in "$debs"/*.deb; do dpkg -x "$deb" "$SYSROOT"; done
  relink_absolute
}

if [ "${SKIP_DEPS:-0}" != 1 ]; then
  install_host_tools
  make_sysroot
fi

cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchain-aarch64-linux-gnu.cmake" -DFAULTLINE_ARM64_SYSROOT="$SYSROOT" \
  -DFAULTLINE_BUILD_BENCH=OFF ${CROSS_CMAKE_ARGS:-}
# The programs first: they are the portability check; then everything (the tests).
cmake --build "$BUILD" -j "$JOBS" --target faultline faultline-sim
file -L "$BUILD/faultline" | grep -q 'ARM aarch64' ||
  { echo "cross-arm64: $BUILD/faultline is not an arm64 executable" >&2; exit 1; }
echo "cross-arm64: built $(file -bL "$BUILD/faultline" | cut -d, -f1-2)"

[ "${SKIP_TESTS:-0}" = 1 ] && exit 0
cmake --build "$BUILD" -j "$JOBS"
exclude=()
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
  # ctest starts each test binary through qemu (CMAKE_CROSSCOMPILING_EMULATOR), but a test
  # that execs build/faultline itself needs the kernel to hand arm64 executables to qemu.
  echo "cross-arm64: no qemu-aarch64 binfmt_misc handler: leaving out the tests that exec the faultline binary"
  exclude=(-E '^(Cli|NvmlCli|DaemonProcess)')
fi
ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" "${exclude[@]}"
