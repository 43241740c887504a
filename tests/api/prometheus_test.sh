#!/usr/bin/env bash
# Debian's Prometheus scrapes `faultline serve` over a stored incident on loopback, and
# the series arrive with the right labels (asked through Prometheus's HTTP query API);
# `promtool check metrics` passes on the exposition. Skips (exit 77) without the
# `prometheus` package. Usage: prometheus_test.sh FAULTLINE_BIN MAKE_INCIDENT_STORE
set -euo pipefail
BIN=$1
MAKE_STORE=$2
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  echo "SKIP: Debian package prometheus not installed (apt-get install prometheus)"
  exit 77
fi
tmp=$(mktemp -d)
serve_pid=""
prom_pid=""
cleanup() {
  [ -n "$prom_pid" ] && kill "$prom_pid" 2>/dev/null && wait "$prom_pid" 2>/dev/null
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fetch() { curl -sS --noproxy '*' --max-time 10 "$@"; }

"$MAKE_STORE" "$tmp/store.db" >/dev/null
"$BIN" serve --store "$tmp/store.db" --listen 127.0.0.1:0 2>"$tmp/serve.log" &
serve_pid=$!
port=""
for _ in $(seq 1 300); do
  port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$tmp/serve.log" | head -1)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "FAIL: faultline serve did not start"; cat "$tmp/serve.log"; exit 1; }

fetch "http://127.0.0.1:$port/metrics" >"$tmp/metrics.txt"
if ! promtool check metrics <"$tmp/metrics.txt" >"$tmp/promtool.txt" 2>&1; then
  echo "FAIL: promtool check metrics"; cat "$tmp/promtool.txt"; exit 1
fi
echo "promtool check metrics: ok ($(grep -vc '^#' "$tmp/metrics.txt") samples)"

prom_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$tmp/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: faultline
    static_configs:
      - targets: ["127.0.0.1:$port"]
YAML
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" --log.level=warn >"$tmp/prometheus.log" 2>&1 &
prom_pid=$!

query() { fetch --get "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1"; }
result=""
for _ in $(seq 1 120); do
  result=$(query 'faultline_diagnosis_info' 2>/dev/null || true)
  case "$result" in *'"result":[{'*) break ;; esac
  sleep 0.5
done
ecc=$(query 'faultline_gpu_ecc_sbe_errors_total{gpu="3"}')
up=$(query 'up{job="faultline"}')
python3 - "$result" "$ecc" "$up" <<'PY'
import json, sys
info, ecc, up = (json.loads(a)["data"]["result"] for a in sys.argv[1:4])
assert len(info) == 1, info
m = info[0]["metric"]
want = {"class": "gpu_fell_off_bus", "component": "gpu/3", "action": "reset_gpu",
        "severity": "critical", "node": "gpu-node-07", "job": "faultline"}
assert all(m.get(k) == v for k, v in want.items()), m
assert info[0]["value"][1] == "1", info
assert len(ecc) == 1, ecc
e = ecc[0]["metric"]
assert e["uuid"] == "GPU-5a1c0d4e-0000-4000-8000-000000000003" and e["component"] == "gpu/3", e
assert ecc[0]["value"][1] == "42", ecc
assert up and up[0]["value"][1] == "1", up
print("prometheus scraped faultline serve: diagnosis info and ECC series with the right labels")
PY
