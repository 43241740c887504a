#!/usr/bin/env bash
# The .deb, end to end (cmake/Install.cmake, docs/install.md): cpack packs this build tree
# into a scratch directory, dpkg-deb -x unpacks it into a scratch root (nothing is installed
# on this machine), and then
#   - the package holds exactly the production files: the binary, the kb, the man pages, the
#     config (a conffile), the unit (naming /usr/bin and /etc), copyright and changelog;
#     no simulator, fake library or test; no secret;
#   - its postinst makes /var/lib/faultline mode 0700 and enables or starts nothing;
#   - the unpacked binary scans a fake host (healthy: 0; a downtrained link or an XID 79
#     in the kernel log: 1) and `faultline ask` finds the unpacked kb without --kb.
#   tests/deploy/package_test.sh BUILD_DIR        exit 0 pass, 1 fail, 77 skipped
set -euo pipefail
BUILD=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

for tool in cpack dpkg-deb dpkg-shlibdeps python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: $tool not installed (scripts/deps.sh --test)"
    exit 77
  fi
done
for built in "$BUILD/faultline" "$BUILD/dist/man/faultline.1.gz" "$BUILD/CPackConfig.cmake"; do
  if [ ! -e "$built" ]; then
    echo "FAIL: $built missing: build the faultline and faultline_dist targets first" >&2
    exit 1
  fi
done

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() {
  echo "FAIL: $*" >&2
  fails=$((fails + 1))
}

# --- pack and unpack ------------------------------------------------------------------------
if ! (cd "$TMP" && cpack --config "$BUILD/CPackConfig.cmake" -B "$TMP/out" >"$TMP/cpack.log" 2>&1); then
  cat "$TMP/cpack.log" >&2
  echo "FAIL: cpack" >&2
  exit 1
fi
debs=("$TMP"/out/faultline_*.deb)
if [ ${#debs[@]} -ne 1 ] || [ ! -f "${debs[0]}" ]; then
  echo "FAIL: no single faultline_*.deb in ${debs[*]}" >&2
  exit 1
fi
DEB=${debs[0]}
PKG="$TMP/root"
dpkg-deb -x "$DEB" "$PKG"
dpkg-deb -e "$DEB" "$TMP/control"
echo "package: $(basename "$DEB"), $(stat -c %s "$DEB") bytes"

# --- what it holds --------------------------------------------------------------------------
# Every file outside the kb and the man pages, exactly: anything else (a test double, the
# simulator, a leftover) fails here by name.
(cd "$PKG" && find . -type f ! -path './usr/share/faultline/kb/*' ! -path './usr/share/man/man1/*' | sort) >"$TMP/files"
cat >"$TMP/expected" <<'EOF'
./etc/faultline/agent.toml
./lib/systemd/system/faultline-agent.service
./usr/bin/faultline
./usr/share/doc/faultline/changelog.gz
./usr/share/doc/faultline/copyright
EOF
diff -u "$TMP/expected" "$TMP/files" >&2 || fail "unexpected file list (above: - missing, + extra)"
[ -x "$PKG/usr/bin/faultline" ] || fail "usr/bin/faultline is not executable"

# The whole knowledge base, file for file.
(cd "$ROOT/kb" && find . -type f | sort) >"$TMP/kb.src"
(cd "$PKG/usr/share/faultline/kb" && find . -type f | sort) >"$TMP/kb.pkg"
diff -u "$TMP/kb.src" "$TMP/kb.pkg" >&2 || fail "usr/share/faultline/kb differs from kb/"

# Man pages: the command and its subcommands, valid gzip, a whatis line; none for the
# simulator's subcommands, which the package cannot run.
for page in faultline faultline-scan faultline-ask faultline-agent faultline-collect-kmsg; do
  gz="$PKG/usr/share/man/man1/$page.1.gz"
  if ! gzip -t "$gz" 2>/dev/null; then
    fail "man page $page.1.gz missing or not gzip"
  elif ! gzip -dc "$gz" | grep -q "^$page \\\\- ."; then
    fail "man page $page.1.gz has no NAME line '$page - ...'"
  fi
done
for page in faultline-sim faultline-mock-bmc faultline-bench-accuracy; do
  [ ! -e "$PKG/usr/share/man/man1/$page.1.gz" ] || fail "man page for a simulator command: $page"
done

# No test double, simulator or secret anywhere in the package.
if (cd "$PKG" && find . | grep -Ei 'faultline-sim|fake|mock|libnvidia-ml|libamd_smi|_test|password|secret|token|\.pem$|\.key$|\.creds$'); then
  fail "a test double, simulator part or secret-looking file is packaged (listed above)"
fi
if grep -Ein '^[[:space:]]*(password|token|secret|key)[[:space:]]*=' "$PKG/etc/faultline/agent.toml"; then
  fail "agent.toml holds a secret value (listed above)"
fi

# The config: every file under /etc is a conffile, and the config loads.
conffiles=$(cat "$TMP/control/conffiles" 2>/dev/null || true)
for f in $(cd "$PKG" && find etc -type f); do
  grep -qx "/$f" <<<"$conffiles" || fail "/$f is not in conffiles ($conffiles)"
done
"$PKG/usr/bin/faultline" agent --config "$PKG/etc/faultline/agent.toml" --check-config >"$TMP/check" 2>&1 ||
  fail "installed agent.toml does not load: $(cat "$TMP/check")"
grep -q "policy dry run only" "$TMP/check" || fail "installed agent.toml is not a dry run: $(cat "$TMP/check")"

# The unit runs the packaged binary on the packaged config.
unit="$PKG/lib/systemd/system/faultline-agent.service"
grep -qx 'ExecStart=/usr/bin/faultline agent --config /etc/faultline/agent.toml' "$unit" ||
  fail "unit ExecStart: $(grep ExecStart "$unit")"

grep -q '^Depends: .*libc6' "$TMP/control/control" || fail "no computed Depends: $(grep Depends "$TMP/control/control")"

# --- the postinst, run against command stubs that record what it would do ---------------------
mkdir -p "$TMP/stubs"
for cmd in mkdir chown chmod systemctl deb-systemd-helper deb-systemd-invoke; do
  printf '#!/bin/sh\necho "%s $*" >>"%s"\n' "$cmd" "$TMP/postinst.calls" >"$TMP/stubs/$cmd"
  chmod +x "$TMP/stubs/$cmd"
done
PATH="$TMP/stubs:$PATH" sh "$TMP/control/postinst" configure || fail "postinst configure exited $?"
grep -qx 'mkdir -p /var/lib/faultline' "$TMP/postinst.calls" || fail "postinst does not create /var/lib/faultline"
grep -qx 'chmod 0700 /var/lib/faultline' "$TMP/postinst.calls" || fail "postinst does not make /var/lib/faultline 0700"
if grep -E 'enable|start|unmask' "$TMP/postinst.calls"; then fail "postinst enables or starts the agent (above)"; fi

# --- the unpacked binary, end to end --------------------------------------------------------
# A fake host: a root port and an H100 behind it, the link at x16 of x16.
HOST="$TMP/host"
dev="$HOST/sys/devices/pci0000:00/0000:00:01.0"
pcie() { # DIR CLASS VENDOR DEVICE
  mkdir -p "$1" "$HOST/sys/bus/pci/devices"
  printf '%s\n' "$2" >"$1/class"
  printf '%s\n' "$3" >"$1/vendor"
  printf '%s\n' "$4" >"$1/device"
  printf '32.0 GT/s PCIe\n' | tee "$1/current_link_speed" >"$1/max_link_speed"
  printf '16\n' | tee "$1/current_link_width" >"$1/max_link_width"
  ln -s "../../..${1#"$HOST"/sys}" "$HOST/sys/bus/pci/devices/$(basename "$1")"
}
pcie "$dev" 0x060400 0x8086 0x352a
pcie "$dev/0000:01:00.0" 0x030200 0x10de 0x2330
printf '%s\n' '[    0.000000] Linux version 6.5.0-1018-nvidia (buildd@lcy02-amd64-061) #18-Ubuntu SMP' \
  '[    5.120000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07' >"$HOST/kern.log"

cd "$TMP"  # no ./kb here: ask must find the packaged one
export TMPDIR="$TMP"
scan() { "$PKG/usr/bin/faultline" scan --node n1 --root "$HOST" --kmsg "$HOST/kern.log" --skip nvml --skip amd --skip ethernet "$@"; }
json() { python3 -c "import json, sys; j = json.load(open(sys.argv[1])); print($2)" "$1"; }

rc=0; scan --json >"$TMP/healthy.json" 2>"$TMP/scan.err" || rc=$?
[ "$rc" -eq 0 ] || fail "scan of a healthy host exited $rc: $(cat "$TMP/scan.err")"
[ "$(json "$TMP/healthy.json" "j['verdict'], [s['state'] for s in j['sources'] if s['name'] == 'sysfs']")" = "healthy ['read']" ] ||
  fail "healthy scan: $(json "$TMP/healthy.json" "j['verdict'], j['sources']")"

printf '8\n' >"$dev/0000:01:00.0/current_link_width"
rc=0; scan >"$TMP/downtrained.txt" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "scan of a downtrained link exited $rc, not 1"
grep -q "NEEDS ACTION: pcie_link_degraded on pcie/0000:01:00.0" "$TMP/downtrained.txt" ||
  fail "downtrained link not named: $(head -20 "$TMP/downtrained.txt")"
printf '16\n' >"$dev/0000:01:00.0/current_link_width"

echo '[  812.445120] NVRM: Xid (PCI:0000:01:00): 79, pid=0, GPU has fallen off the bus.' >>"$HOST/kern.log"
rc=0; scan --json >"$TMP/xid.json" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "scan of a kernel log with XID 79 exited $rc, not 1"
[ "$(json "$TMP/xid.json" "j['primary']['fault_class']")" = "gpu_fell_off_bus" ] ||
  fail "XID 79 not diagnosed: $(json "$TMP/xid.json" "j['primary']")"

# A note only the unpacked kb holds: found, so the kb came from beside the unpacked binary
# (usr/bin/../share/faultline/kb), not from /usr/share or ./kb.
cat >"$PKG/usr/share/faultline/kb/reference/package-test-marker.md" <<'EOF'
---
kind: reference
component: gpu
---
# Package test marker: the quasarwidget

A quasarwidget is mentioned only in the knowledge base of the unpacked package.
EOF
rc=0; "$PKG/usr/bin/faultline" ask --json "what is a quasarwidget?" >"$TMP/ask.json" 2>"$TMP/ask.err" || rc=$?
[ "$rc" -eq 0 ] || fail "ask exited $rc: $(cat "$TMP/ask.err")"
[ "$(json "$TMP/ask.json" "[r['path'] for r in j['runbooks']][:1]")" = "['reference/package-test-marker.md']" ] ||
  fail "ask did not read the unpacked kb: $(json "$TMP/ask.json" "j['runbooks'], j['notes']")"

if [ "$fails" -ne 0 ]; then
  echo "FAIL: $fails check(s) failed" >&2
  exit 1
fi
echo "PASS"
