#!/usr/bin/env bash
# The dashboard in a real browser: simulated incidents (the simulator's agent leaves its
# store), `faultline serve` over each on a loopback port, headless Chromium loads the page and
# runs its script; the rendered DOM must show the diagnosis, its plan in operator words, the
# diagnosis' own signal (states as steps), a readable time axis, Redfish evidence summarised
# and ruled-out layers as sentences with units. Screenshots are saved as test artifacts.
#   browser_test.sh BUILD_DIR SOURCE_DIR
# Exit 77 (skipped) when Chromium is not installed (`make deps` installs it).
# FAULTLINE_BROWSER_ONE_CASE=NAME runs that incident alone, without screenshots (the sanitizer build).
set -euo pipefail
BUILD=$1
SRC=$2
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
  echo "SKIP: chromium not installed (make deps installs it)"
  exit 77
fi
ART="$BUILD/test-artifacts"
mkdir -p "$ART"
WORK=$(mktemp -d)
SERVE_PID=""
stop_serve() {
  if [ -n "$SERVE_PID" ]; then kill "$SERVE_PID" 2>/dev/null || true; wait "$SERVE_PID" 2>/dev/null || true; fi
  SERVE_PID=""
}
cleanup() {
  stop_serve
  rm -rf "$WORK"
}
trap cleanup EXIT

# serve SCENARIO: runs the scenario with the agent and serves its store; sets URL.
serve() {
  local runs="$WORK/runs-$1"
  "$BUILD/faultline-sim" sim --scenario "$SRC/scenarios/$1.yaml" --agent --keep --workdir "$runs" >"$WORK/sim.out" 2>&1 ||
    { cat "$WORK/sim.out"; exit 1; }
  local store
  store=$(find "$runs" -name '*.db' -type f | head -1)
  [ -n "$store" ] || { echo "FAIL: the simulated run of $1 left no store"; cat "$WORK/sim.out"; exit 1; }
  : >"$WORK/serve.log"
  "$BUILD/faultline" serve --store "$store" --listen 127.0.0.1:0 2>"$WORK/serve.log" &
  SERVE_PID=$!
  local port=""
  for _ in $(seq 1 100); do
    port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$WORK/serve.log" | head -1 || true)
    [ -n "$port" ] && break
    kill -0 "$SERVE_PID" 2>/dev/null || { echo "FAIL: serve exited"; cat "$WORK/serve.log"; exit 1; }
    sleep 0.1
  done
  [ -n "$port" ] || { echo "FAIL: serve printed no port"; cat "$WORK/serve.log"; exit 1; }
  URL="http://127.0.0.1:$port/"
}

browse() {  # browse WIDTH ARGS...
  # A private profile, no network but loopback, JavaScript given time to fetch and draw.
  local width=$1
  shift
  "$CHROMIUM" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --hide-scrollbars \
    --user-data-dir="$WORK/profile" --host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE 127.0.0.1" \
    --virtual-time-budget=15000 --window-size="$width,1400" "$@" "$URL" 2>>"$WORK/chromium.log"
}

fail=0
CASE=""
DOM=""
expect() {  # expect DESCRIPTION EXTENDED-REGEX
  [ "$DOM" = /dev/null ] && return 0  # a case left out (FAULTLINE_BROWSER_ONE_CASE)
  if grep -Eq "$2" "$DOM"; then echo "ok: $CASE: $1"; else echo "FAIL: $CASE: $1"; fail=1; fi
}
expect_not() {  # expect_not DESCRIPTION EXTENDED-REGEX
  [ "$DOM" = /dev/null ] && return 0
  if grep -Eq "$2" "$DOM"; then echo "FAIL: $CASE: $1"; fail=1; else echo "ok: $CASE: $1"; fi
}

# open_case NAME SCENARIO: the page over that incident, its DOM in $DOM and screenshots at
# 1400 and 1920 px in the artifacts; then the checks every incident must pass.
open_case() {
  CASE=$1
  ONLY=${FAULTLINE_BROWSER_ONE_CASE:-}
  if [ -n "$ONLY" ] && [ "$ONLY" != "$1" ]; then
    DOM=/dev/null  # its checks below are skipped
    return
  fi
  DOM="$WORK/$1.dom.html"
  serve "$2"
  browse 1400 --dump-dom >"$DOM" || { echo "FAIL: chromium"; tail -20 "$WORK/chromium.log"; exit 1; }
  if [ -z "$ONLY" ]; then
    for width in 1400 1920; do browse "$width" --screenshot="$ART/dashboard-$1-$width.png" >/dev/null || true; done
  fi
  stop_serve
  expect "the script finished" 'data-loaded="true"'
  expect "no load error shown" '<footer id="error"[^>]*hidden'
  expect "evidence lines" 'data-testid="evidence-line"'
  expect "timeline has points" 'data-points="[1-9][0-9]*"'
  expect "timeline ticks drawn" 'class="tick"'
  # A clock time every round step (at least four), not just the window's two ends.
  expect "time axis has round ticks" 'data-ticks="([4-9]|[1-9][0-9]+)"'
  expect "tick labels are clock times" 'class="axis-label">[0-2][0-9]:[0-5][0-9](:[0-5][0-9])?<'
  expect "one line per planned step" 'data-testid="plan-step"'
  expect_not "no step called notify user" 'data-testid="plan-step"[^>]*>[^/]*[Nn]otify user'
  expect "ruled-out layers in sentences" 'data-testid="ruled-out-line"><b>[^<]*</b>: <span class="sentence">No fault'
  expect_not "no raw kind names in a ruled-out sentence" 'class="sentence">[^<]*[a-z]_[a-z]'
  if [ "$fail" -ne 0 ]; then cp "$DOM" "$ART/dashboard-$1-dom.html"; fi
}

open_case thermal gpu6-cold-plate-blocked
expect "diagnosis class" 'data-testid="diagnosis-class"[^>]*>gpu thermal<'
expect "diagnosis component" 'data-testid="diagnosis-component"[^>]*>gpu/6<'
expect "the culprit signal is plotted" 'data-signal="temperature" data-shape="line"'
expect "its title names the part" 'class="chart-title">temperature on gpu/6'
expect "a watched fault plans nothing, in words" 'data-testid="plan-step">Nothing planned: watch it<'

open_case remap row-remap-exhausted
expect "diagnosis class" 'data-testid="diagnosis-class"[^>]*>row remap exhausted<'
expect "drain in words" 'data-action="drain"><span class="what">Drain the node<'
expect "on-call is a webhook in words" 'data-action="webhook"><span class="what">Webhook to on-call<'
# The remap failure itself, not the correctable ECC count of the same GPU; a 0/1 flag held
# between readings (only horizontal and vertical segments).
expect "the plot is the remap failure" 'class="signal" data-signal="row_remap_failure"'
expect "drawn as steps" '<path d="M[0-9.]+ [0-9.]+( [HV][0-9.]+)+"[^>]*data-signal="row_remap_failure" data-shape="step"'
expect_not "not the correctable ECC count" 'data-signal="ecc_sbe"'
expect "ruled-out readings carry units" 'class="sentence">No fault: [^<]*[0-9] (°C|W|V|RPM|Gb/s|GT/s)[;. ]'

open_case psu psu-fail-redundancy-holds
expect "PSU state as steps" 'data-signal="psu_state" data-shape="step"'
expect "on-call is a webhook in words" 'data-action="webhook"><span class="what">Webhook to on-call<'
expect "Redfish JSON summarised" 'data-testid="evidence-json"><summary>PSU3: health Critical, state UnavailableOffline'
expect "and expandable to the JSON" 'data-testid="evidence-json"><summary>[^<]*</summary><pre>\{'
expect "the SEL entry by its message" '<summary>Log entry: Power Supply PSU3 failure detected'

open_case ib ib-hca6-port-down
expect "the plot is the port state" 'data-signal="ib_port_state" data-shape="step"'
expect "the downed port drains the node" 'data-action="drain"><span class="what">Drain the node<'
expect "state names on the axis" 'class="y-label">ACTIVE<'

echo "screenshots: $ART/dashboard-*.png"
exit "$fail"
