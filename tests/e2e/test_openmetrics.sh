#!/usr/bin/env bash
# OpenMetrics 1.0 text, for the scrapers that ask for it (Prometheus 2.x and 3.x do, first, for
# text scrapes): the reference parser accepts the exposition of the fixture trees, and it holds
# the samples of the 0.0.4 text; Prometheus 3.5 told to speak OpenMetrics only, and 2.42 with
# its defaults, scrape it and store the fixtures' values. Text 0.0.4 stays for curl and the
# scrapers that ask for it.
source "$(dirname "$0")/lib.sh"
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import prometheus_client' 2>/dev/null ||
  skip "python3-prometheus-client not installed (deploy/install-deps.sh --test)"

start_exporter om "${FIXTURE_FLAGS[@]}"
OM_ACCEPT='application/openmetrics-text;version=1.0.0;escaping=underscores;q=0.6,text/plain;version=0.0.4;q=0.3'
curl -fsS -D "$WORK/om.headers" -H "Accept: $OM_ACCEPT" "http://127.0.0.1:$PORT/metrics" -o "$WORK/om.txt"
curl -fsS -D "$WORK/text.headers" "http://127.0.0.1:$PORT/metrics" -o "$WORK/text.txt"
grep -qi '^content-type: application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores' \
  "$WORK/om.headers" || fail "OpenMetrics Content-Type: $(grep -i content-type "$WORK/om.headers")"
grep -qi '^content-type: text/plain; version=0.0.4' "$WORK/text.headers" ||
  fail "curl's */* no longer gets text 0.0.4: $(grep -i content-type "$WORK/text.headers")"
[ "$(tail -n 1 "$WORK/om.txt")" = "# EOF" ] || fail "the OpenMetrics body does not end in # EOF"
! grep -q '^# EOF' "$WORK/text.txt" || fail "text 0.0.4 has an # EOF line"
out=$(/usr/bin/python3 "$E2E_DIR/check_openmetrics.py" "$WORK/om.txt" "$WORK/text.txt") ||
  fail "OpenMetrics exposition: $out"
pass "$out"

# query EXPR: the value of the single series an instant query returns.
query() {
  curl -fsS --get "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if len(r) == 1 else "")'
}
for v in $(prom_versions); do
  use_prometheus "$v" || continue
  protocols=""
  [ "$PROM_MAJOR" = 2 ] || protocols="scrape_protocols: [OpenMetricsText1.0.0]"
  prom_config "$WORK/prometheus.yml" 1s nvmeof "127.0.0.1:$PORT" "$protocols"
  start_prometheus
  prom_wait_up nvmeof
  # The samples Prometheus took are the exposition's: a counter and a histogram series of the
  # fixtures, by their 0.0.4 names.
  series='nvmeof_rdma_hw_counters_total{rdma_device="mlx5_0",rdma_port="1",counter="local_ack_timeout_err"}'
  want=$(grep -F "$series " "$WORK/text.txt" | cut -d' ' -f2)
  [ -n "$want" ] || fail "no $series in the fixtures' scrape"
  got=$(query "$series")
  [ "$got" = "$want" ] || fail "Prometheus $v: $series is ${got:-absent}, the exposition says $want"
  samples=$(query 'scrape_samples_scraped{job="nvmeof"}')
  text_samples=$(grep -vc '^#' "$WORK/text.txt")
  [ "$samples" = "$text_samples" ] ||
    fail "Prometheus $v took $samples samples from OpenMetrics, the text has $text_samples"
  stop_prometheus
  pass "Prometheus $v: OpenMetrics scraped, $samples samples, counter values as in text"
done
prom_done
