#!/usr/bin/env bash
# The dashboard in a real browser: a simulated incident (the simulator's agent leaves its
# store), `faultline serve` over it on a loopback port, headless Chromium loads the page and
# runs its script; the rendered DOM must show the diagnosis class and component, evidence
# lines and timeline points. A screenshot is saved as a test artifact.
#   browser_test.sh BUILD_DIR SOURCE_DIR
# Exit 77 (skipped) when Chromium is not installed (`make deps` installs it).
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
cleanup() {
  if [ -n "$SERVE_PID" ]; then kill "$SERVE_PID" 2>/dev/null || true; wait "$SERVE_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

"$BUILD/faultline-sim" sim --scenario "$SRC/scenarios/gpu6-cold-plate-blocked.yaml" --agent --keep \
  --workdir "$WORK/runs" >"$WORK/sim.out" 2>&1 || { cat "$WORK/sim.out"; exit 1; }
STORE=$(find "$WORK/runs" -name '*.db' -type f | head -1)
[ -n "$STORE" ] || { echo "FAIL: the simulated run left no store"; cat "$WORK/sim.out"; exit 1; }

: >"$WORK/serve.log"
"$BUILD/faultline" serve --store "$STORE" --listen 127.0.0.1:0 2>"$WORK/serve.log" &
SERVE_PID=$!
PORT=""
for _ in $(seq 1 100); do
  PORT=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$WORK/serve.log" | head -1 || true)
  [ -n "$PORT" ] && break
  kill -0 "$SERVE_PID" 2>/dev/null || { echo "FAIL: serve exited"; cat "$WORK/serve.log"; exit 1; }
  sleep 0.1
done
[ -n "$PORT" ] || { echo "FAIL: serve printed no port"; cat "$WORK/serve.log"; exit 1; }
URL="http://127.0.0.1:$PORT/"

browse() {
  # A private profile, no network but loopback, JavaScript given time to fetch and draw.
  "$CHROMIUM" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --user-data-dir="$WORK/profile" --host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE 127.0.0.1" \
    --virtual-time-budget=15000 --window-size=1400,1200 "$@" "$URL" 2>>"$WORK/chromium.log"
}
browse --dump-dom >"$WORK/dom.html" || { echo "FAIL: chromium"; tail -20 "$WORK/chromium.log"; exit 1; }
browse --screenshot="$ART/dashboard.png" >/dev/null || true

fail=0
expect() {  # expect DESCRIPTION EXTENDED-REGEX
  if grep -Eq "$2" "$WORK/dom.html"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi
}
expect "the script finished" 'data-loaded="true"'
expect "no load error shown" '<footer id="error"[^>]*hidden'
expect "diagnosis class" 'data-testid="diagnosis-class"[^>]*>gpu thermal<'
expect "diagnosis component" 'data-testid="diagnosis-component"[^>]*>gpu/6<'
expect "evidence lines" 'data-testid="evidence-line"'
expect "timeline has points" 'data-points="[1-9][0-9]*"'
expect "timeline ticks drawn" 'class="tick"'
expect "the culprit signal is plotted" 'on gpu/6'
if [ -s "$ART/dashboard.png" ]; then echo "screenshot: $ART/dashboard.png"; else echo "note: no screenshot written"; fi
if [ "$fail" -ne 0 ]; then
  cp "$WORK/dom.html" "$ART/dashboard-dom.html"
  echo "DOM saved to $ART/dashboard-dom.html"
  exit 1
fi
