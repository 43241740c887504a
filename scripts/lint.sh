#!/usr/bin/env bash
# Checks formatting of the project's own sources with the root .clang-format (reports, never rewrites).
set -uo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files 'src/*.cc' 'src/*.h' 'tests/*.cc' 'bench/*.cc' 'fuzz/*.cc' | grep -v '\.inc$')
bad=0
for f in $files; do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "needs formatting: $f"
    bad=$((bad + 1))
  fi
done
echo "lint: $bad file(s) need formatting"
[ "$bad" -eq 0 ]
