#!/usr/bin/env bash
# Every test: the normal build's suite, the same suite under ASan+UBSan, and a brief
# run of each libFuzzer target (from the sanitizer build). Prints one closing line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
BUILD=${BUILD:-build}
ASAN_BUILD=${ASAN_BUILD:-build-asan}
FUZZ_SECONDS=${FUZZ_SECONDS:-10}
passed=0
failed=0
log=$(mktemp)
failures=$(mktemp)  # names of failed tests, repeated at the end where CI's tail shows them
trap 'rm -f "$log" "$failures"' EXIT

# Runs ctest in a build dir and adds its counts to the totals.
run_ctest() {
  local dir=$1
  ctest --test-dir "$dir" --output-on-failure -j "$JOBS" 2>&1 | tee "$log"
  local total fails
  total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)
  fails=$(sed -n 's/.* \([0-9]*\) tests failed out of.*/\1/p' "$log" | tail -1)
  if [ -z "$total" ]; then
    echo "test.sh: ctest in $dir did not report a result" >&2
    echo "  $dir: ctest reported no result" >>"$failures"
    failed=$((failed + 1))
    return
  fi
  passed=$((passed + total - fails))
  failed=$((failed + fails))
  sed -n '/The following tests FAILED:/,/^[^[:space:]]/p' "$log" | grep -E '^[[:space:]]+[0-9]+ - ' |
    sed "s|^[[:space:]]*|  $dir: |" >>"$failures"
}

# Each step's header says when it started (seconds into the run: CI stops at 5,400) and how
# much disk is left: two builds share it, and a build that runs out of space fails with a
# compiler error far from the cause.
step() { echo; echo "==== $* (at ${SECONDS}s, $(df -Ph . | awk 'NR==2 {print $4}') free) ===="; }

# Prints the summary for a build that failed and stops: nothing after it can run.
build_failed() {
  echo "  $1: build failed (disk: $(df -Ph . | awk 'NR==2 {print $4}') free)" >>"$failures"
  echo
  echo "failed:"
  cat "$failures"
  echo "faultline: $passed passed, $((failed + 1)) failed"
  exit 1
}

step "build ($BUILD)"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
  cmake --build "$BUILD" -j "$JOBS" || build_failed "$BUILD"
step "tests ($BUILD)"
run_ctest "$BUILD"

# The packagers' production configuration: no simulator, no test doubles. The faultline
# binary is the same as the one tested above (it never links a test double: the configure
# step checks its link graph, and CliSimTest.TheProductionBinaryCarriesNoTestDoubles runs it
# alone), so configuring is the check: it must succeed and generate no simulator target.
step "production configuration (-DFAULTLINE_WITH_SIM=OFF)"
PROD_BUILD=${PROD_BUILD:-build-prod}
# The target list is captured before it is searched: "ninja ... | grep -q" under pipefail
# fails whenever grep exits before ninja has written everything (SIGPIPE).
prod_log="$log.prod"
if cmake -S . -B "$PROD_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFAULTLINE_WITH_SIM=OFF >"$prod_log" 2>&1 &&
   ninja -C "$PROD_BUILD" -t targets all >"$prod_log.targets" 2>>"$prod_log" &&
   grep -q '^faultline:' "$prod_log.targets" &&
   ! grep -Eq '^(faultline-sim|fake_nvml|[^:]*faultline_sim_[^:]*|[^:]*_test):' "$prod_log.targets"; then
  echo "production configuration: faultline only, no simulator or test targets"
  passed=$((passed + 1))
else
  echo "production configuration: FAILED (configure error, or simulator/test targets generated)"
  tail -30 "$prod_log"
  grep -E '^(faultline-sim|fake_nvml|[^:]*faultline_sim_[^:]*|[^:]*_test):' "$prod_log.targets" 2>/dev/null | head
  echo "  production configuration (-DFAULTLINE_WITH_SIM=OFF)" >>"$failures"
  failed=$((failed + 1))
fi
rm -f "$prod_log" "$prod_log.targets"

# One sanitizer build serves both the suite under ASan+UBSan and the fuzz targets: clang,
# every module instrumented for ASan, UBSan and libFuzzer's coverage. Two builds (gcc ASan,
# clang fuzz) compiled every module twice more, and CI's 90 minutes did not hold them.
step "build under ASan+UBSan with fuzz targets ($ASAN_BUILD)"
# A sanitizer build dir configured earlier with gcc cannot be switched to clang in place.
if [ -f "$ASAN_BUILD/CMakeCache.txt" ] && ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++' "$ASAN_BUILD/CMakeCache.txt"; then
  echo "test.sh: $ASAN_BUILD was configured with another compiler; configuring it anew with clang"
  rm -rf "$ASAN_BUILD"
fi
CC=clang CXX=clang++ cmake -S . -B "$ASAN_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFAULTLINE_SANITIZE=ON \
  -DFAULTLINE_FUZZ=ON -DFAULTLINE_BUILD_BENCH=OFF >/dev/null &&
  cmake --build "$ASAN_BUILD" -j "$JOBS" || build_failed "$ASAN_BUILD"
step "tests under ASan+UBSan"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 run_ctest "$ASAN_BUILD"

step "fuzz targets (${FUZZ_SECONDS}s each, $JOBS at a time)"
if JOBS=$JOBS scripts/fuzz.sh "$ASAN_BUILD" "$FUZZ_SECONDS" | tee "$log"; then :; fi
fp=$(grep -c '^fuzz: PASS' "$log" || true)
ff=$(grep -c '^fuzz: FAIL' "$log" || true)
grep '^fuzz: FAIL' "$log" | sed 's|^|  |' >>"$failures" || true
if [ "$fp" -eq 0 ] && [ "$ff" -eq 0 ]; then
  echo "  $ASAN_BUILD: no fuzz target ran" >>"$failures"
  ff=1
fi
passed=$((passed + fp))
failed=$((failed + ff))

echo
if [ -s "$failures" ]; then
  echo "failed:"
  cat "$failures"
fi
echo "test.sh: took ${SECONDS}s"
echo "faultline: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
