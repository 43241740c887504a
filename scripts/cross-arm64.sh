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
#
# A newcomer on a bookworm x86-64 machine runs it as is (it installs what it needs). Again
# after a change: SKIP_DEPS=1 scripts/cross-arm64.sh; one program by hand:
#   qemu-aarch64-static -L build-arm64/sysroot build-arm64/faultline diagnose FILE
# If the source tree changes while it builds, it builds again what read the changed files
# (see build_settled).
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
  libxapian-dev libnats-dev  # the assistant's kb index, the fleet transport
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

# Outputs (objects, archives, programs) whose recorded dependencies include one of the given
# source files, relative to the build directory. `ninja -t deps` prints "OUTPUT: #deps N, ..."
# and then one indented dependency per line, relative to the build directory or absolute.
outputs_reading() {
  local f names=()
  for f in "$@"; do names+=("$(realpath -m "$f")" "$(realpath -m --relative-to="$BUILD" "$f")"); done
  ninja -C "$BUILD" -t deps | awk -v list="$(printf '%s\n' "${names[@]}")" '
    BEGIN { n = split(list, a, "\n"); for (i = 1; i <= n; i++) if (a[i] != "") changed[a[i]] = 1 }
    /^[^ ].*: #deps / { out = substr($0, 1, index($0, ": #deps ") - 1); next }
    /^    / { dep = substr($0, 5); if ((dep in changed) && !(out in done)) { print out; done[out] = 1 } }'
}

# Builds, and builds again while the source tree changed during the build. A cross build takes
# long (an hour on two loaded cores), and in a shared working tree a header edited while a
# compile that includes it is running leaves an object compiled against the old header; ninja
# links it into the programs of that same run, and bookworm's ninja (1.11.1) never rebuilds it
# later, the object being newer than the header. Two layouts of one struct in one program is silent memory
# corruption: `faultline-sim sim --agent` aborted under qemu with "free(): invalid pointer"
# because store.cc.o still had the AppendStats of before `duplicate_indexes` was added. So every
# output that read a file changed since the build started is removed and built again.
build_settled() {
  local stamp=$BUILD/.cross-arm64-build-start changed stale attempt
  for attempt in 1 2 3; do
    touch "$stamp"
    cmake --build "$BUILD" -j "$JOBS" "$@"
    mapfile -t changed < <(find src tests fuzz bench cmake CMakeLists.txt -type f -newer "$stamp" 2>/dev/null)
    stale=()
    if [ ${#changed[@]} -gt 0 ]; then mapfile -t stale < <(outputs_reading "${changed[@]}"); fi
    if [ ${#stale[@]} -eq 0 ]; then return 0; fi
    echo "cross-arm64: ${#changed[@]} source file(s) changed during the build (${changed[*]:0:3}...):" \
      "building the ${#stale[@]} output(s) that read them again"
    (cd "$BUILD" && rm -f -- "${stale[@]}")
  done
  echo "cross-arm64: the source tree kept changing during three builds; build again when it is quiet" >&2
  return 1
}

cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchain-aarch64-linux-gnu.cmake" -DFAULTLINE_ARM64_SYSROOT="$SYSROOT" \
  -DFAULTLINE_BUILD_BENCH=OFF ${CROSS_CMAKE_ARGS:-}
# The programs first: they are the portability check; then everything (the tests).
build_settled --target faultline faultline-sim
file -L "$BUILD/faultline" | grep -q 'ARM aarch64' ||
  { echo "cross-arm64: $BUILD/faultline is not an arm64 executable" >&2; exit 1; }
echo "cross-arm64: built $(file -bL "$BUILD/faultline" | cut -d, -f1-2)"

[ "${SKIP_TESTS:-0}" = 1 ] && exit 0
build_settled
exclude=()
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
  # ctest starts each test binary through qemu (CMAKE_CROSSCOMPILING_EMULATOR), but a test
  # that execs build/faultline itself needs the kernel to hand arm64 executables to qemu.
  # These suites run build/faultline (popen/execv): the CLI end-to-end tests (CliDiagnose,
  # CliSnapshot, CliSim, CliCollectKmsg, CliBenchAgentRest), NvmlCli, DaemonProcess,
  # PolicyCheckBinary, ApiServeCli and BundleTest.CommandWritesTheBundleAndRefusesBadInput.
  # A new test that execs the binary belongs here.
  echo "cross-arm64: no qemu-aarch64 binfmt_misc handler: leaving out the tests that exec the faultline binary"
  exclude=(-E '^(Cli|NvmlCli|DaemonProcess|PolicyCheckBinary|ApiServeCli|BundleTest\.CommandWritesTheBundle)')
fi
ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" "${exclude[@]}"
