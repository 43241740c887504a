#!/usr/bin/env bash
# scripts/check-cross-deps.sh passes on the repository's own lists and fails, naming the
# package, when the cross script lacks a library the build installs.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$ROOT/scripts/check-cross-deps.sh"
sed 's/ libnats-dev//' "$ROOT/scripts/cross-arm64.sh" > "$TMP/cross.sh"
if "$ROOT/scripts/check-cross-deps.sh" "$ROOT/scripts/deps.sh" "$TMP/cross.sh" 2> "$TMP/err"; then
  echo "FAIL: a cross script without libnats-dev passed" >&2
  exit 1
fi
grep -q "does not fetch for arm64: libnats-dev" "$TMP/err" || { cat "$TMP/err" >&2; exit 1; }
echo "PASS"
