#!/usr/bin/env bash
# A real Prometheus server scrapes the exporter (on the fixture trees) every second; the series
# a user alerts on must arrive with the fixtures' values, as Prometheus stored them. On both
# Prometheus versions, one after the other (Debian 12's 2.42 and 3.5 LTS: fetch_prometheus.sh;
# a version that cannot be had is a visible skip, exit 77).
source "$(dirname "$0")/lib.sh"

start_exporter prom-target "${FIXTURE_FLAGS[@]}"

# query EXPR: prints "labels value" lines of an instant query.
query() {
  curl -fsS --get "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys; d=json.load(sys.stdin)
for r in d["data"]["result"]: print(r["value"][1])'
}
# expect EXPR VALUE: the query returns exactly one series with that value.
expect() {
  local got
  got=$(query "$1")
  [ "$got" = "$2" ] || fail "$1: expected $2, got '${got:-nothing}'"
  pass "$1 = $2"
}

# On each Prometheus version (lib.sh): 2.42, then 3.5 LTS with deploy/prometheus/prometheus-3.yml's
# scrape settings (its defaults: text without native histograms).
for v in $(prom_versions); do
  use_prometheus "$v" || continue
  prom_config "$WORK/prometheus.yml" 1s nvmeof "127.0.0.1:$PORT" "$(prom_text_fallback)"
  start_prometheus
  prom_wait_up nvmeof
  EXPECT_FILE="$E2E_DIR/prometheus_expect.txt"
  while IFS='|' read -r expr value; do
    [[ -z "$expr" || "$expr" == \#* ]] && continue
    expect "$expr" "$value"
  done <"$EXPECT_FILE"
  expect 'min(nvmeof_exporter_collector_success)' 1
  stop_prometheus
  pass "Prometheus $v: every expected series with the fixtures' values"
done
prom_done
