#!/usr/bin/env bash
# A real Prometheus server scrapes the exporter (on the fixture trees) every second; the series
# a user alerts on must arrive with the fixtures' values, as Prometheus stored them.
source "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || fail "prometheus is not installed (apt-get install prometheus)"

start_exporter prom-target "${FIXTURE_FLAGS[@]}"
cat >"$WORK/prometheus.yml" <<YAML
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: nvmeof
    static_configs: [{targets: ["127.0.0.1:$PORT"]}]
YAML
start_prometheus

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

for _ in $(seq 60); do
  [ "$(query 'up{job="nvmeof"}' 2>/dev/null)" = 1 ] && break
  sleep 1
done
[ "$(query 'up{job="nvmeof"}')" = 1 ] || fail "Prometheus never scraped the exporter successfully"
EXPECT_FILE="$E2E_DIR/prometheus_expect.txt"
while IFS='|' read -r expr value; do
  [[ -z "$expr" || "$expr" == \#* ]] && continue
  expect "$expr" "$value"
done <"$EXPECT_FILE"
expect 'min(nvmeof_exporter_collector_success)' 1
