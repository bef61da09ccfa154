#!/usr/bin/env bash
# HTTP keep-alive with a real Prometheus (issue 32): scraping every second, Prometheus keeps one
# connection to the exporter over 20+ scrapes, over plain HTTP and over TLS with basic auth.
# Counted two ways: the exporter's nvmeof_exporter_http_connections_total as Prometheus stored
# it (1 at every scrape: no reconnect), and the established sockets to each port (`ss`: one,
# from the same client port, throughout). A third exporter whose --web.connection-timeout is
# below its scrape interval shows the count does move when connections are not kept.
# On both Prometheus versions (lib.sh); a version that cannot be had is a visible skip (77).
source "$(dirname "$0")/lib.sh"
command -v ss >/dev/null || fail "ss is not installed (iproute2)"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
HASH=$(htpasswd -nbBC 10 prom 's3cret' | cut -d: -f2)
cat >"$WORK/web.yml" <<YAML
tls_server_config: {cert_file: cert.pem, key_file: key.pem}
basic_auth_users: {prom: '$HASH'}
YAML
# Only the rdma collector (every other one off, as --help lists them), on the fixture sysfs.
mapfile -t OTHERS < <("$EXPORTER" --help | sed -n 's/^        \([a-z_]*\) (default .*/\1/p' |
  grep -vx rdma)
ONLY_RDMA=(--path.sysfs="$FIXTURES/sysfs" "${OTHERS[@]/#/--no-collector.}")

# query EXPR: the values of an instant query, one a line.
query() {
  curl -fsS --get "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys; d=json.load(sys.stdin)
for r in d["data"]["result"]: print(r["value"][1])'
}
# peers PORT: the client ends of the connections established to 127.0.0.1:PORT.
peers() { ss -Htn state established "( sport = :$1 )" | awk '{print $NF}' | sort; }

for v in $(prom_versions); do
  use_prometheus "$v" || continue
  # Fresh exporters per version: their counters start at 0, so Prometheus' connection is the 1.
  start_exporter "plain-$v" "${ONLY_RDMA[@]}"
  PLAIN=$PORT
  start_exporter "tls-$v" "${ONLY_RDMA[@]}" --web.config.file="$WORK/web.yml"
  TLS=$PORT
  start_exporter "short-$v" "${ONLY_RDMA[@]}" --web.connection-timeout=1
  SHORT=$PORT
  extra=$(prom_text_fallback)
  prom_config "$WORK/prometheus.yml" 1s plain "127.0.0.1:$PLAIN" "$extra"
  prom_job "$WORK/prometheus.yml" tls "127.0.0.1:$TLS" "$extra" "scheme: https" \
    "tls_config: {ca_file: $WORK/cert.pem}" "basic_auth: {username: prom, password: s3cret}"
  prom_job "$WORK/prometheus.yml" short "127.0.0.1:$SHORT" "scrape_interval: 3s" "$extra"
  start_prometheus

  for _ in $(seq 60); do
    [ "$(query 'count(up{job=~"plain|tls"} == 1)' 2>/dev/null)" = 2 ] && break
    sleep 1
  done
  [ "$(query 'count(up{job=~"plain|tls"} == 1)')" = 2 ] ||
    fail "Prometheus $v never scraped both exporters: $(query 'up')"
  # The sockets, sampled while the scrapes go on: the same single client end throughout.
  first_plain=$(peers "$PLAIN") first_tls=$(peers "$TLS")
  [ "$(echo "$first_plain" | grep -c .)" = 1 ] || fail "$v plain: established: '$first_plain'"
  [ "$(echo "$first_tls" | grep -c .)" = 1 ] || fail "$v TLS: established: '$first_tls'"
  for _ in $(seq 21); do
    sleep 1
    [ "$(peers "$PLAIN")" = "$first_plain" ] ||
      fail "$v plain: connection changed: was $first_plain, now '$(peers "$PLAIN")'"
    [ "$(peers "$TLS")" = "$first_tls" ] ||
      fail "$v TLS: connection changed: was $first_tls, now '$(peers "$TLS")'"
  done
  # What Prometheus stored: every scrape so far saw one connection accepted, its own.
  for job in plain tls; do
    peer=$first_plain
    [ "$job" = tls ] && peer=$first_tls
    sel="nvmeof_exporter_http_connections_total{job=\"$job\"}"
    scrapes=$(query "count_over_time(${sel}[5m])")
    [ "${scrapes:-0}" -ge 20 ] || fail "$v $job: only ${scrapes:-0} scrapes stored"
    range=$(query "min_over_time(${sel}[5m])")-$(query "max_over_time(${sel}[5m])")
    [ "$range" = 1-1 ] || fail "$v $job: connections accepted over $scrapes scrapes (min-max): $range"
    pass "Prometheus $v, $job: $scrapes scrapes on one connection (connections accepted: 1 at every scrape; client $peer throughout)"
  done
  # The counter does count reconnects: an idle timeout below the scrape interval closes each
  # connection before the next scrape.
  short=$(query 'max_over_time(nvmeof_exporter_http_connections_total{job="short"}[5m])')
  short_scrapes=$(query 'count_over_time(up{job="short"}[5m])')
  [ "${short%.*}" -ge 3 ] ||
    fail "$v short: $short connections over $short_scrapes scrapes with a 1 s idle timeout and 3 s scrapes"
  pass "Prometheus $v: with --web.connection-timeout=1 below a 3 s interval, $short connections over $short_scrapes scrapes"
  stop_prometheus
done
prom_done
