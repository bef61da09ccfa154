#!/usr/bin/env bash
# A counter that restarts reaches a real Prometheus with its created timestamp
# (docs/metrics.md "Counter resets"). The exporter serves a copy of the fixture trees; rxe0's
# port 1 counter sent_pkts (3,894,121 in the fixture) is rewritten to 5 between scrapes, as when
# rxe0 is deleted and added again, and then counts on to 9. Prometheus scrapes every second:
#   3.5   protobuf, --enable-feature=created-timestamp-zero-ingestion: the raw samples hold a 0
#         after the old count's last sample and before the first 5 (the zero the new count began
#         from, at its created time), and the 0 lies within the two scrapes around the rewrite;
#         a counter that was not rewritten (rcvd_pkts) has no 0 sample;
#   2.42  OpenMetrics (its first choice; it has no such feature): the scrape stays healthy, and
#         `nvmeof_rdma_hw_counters_created` for sent_pkts is served from the rewrite on, at a
#         time between the old count's last scrape and the rewrite's first, and for no other
#         counter.
# Exit 77 when a Prometheus version cannot be had (lib.sh prom_done).
source "$(dirname "$0")/lib.sh"
require curl python3
cp -a "$FIXTURES/sysfs" "$WORK/sysfs"
FILE=$(readlink -f "$WORK/sysfs/class/infiniband/rxe0")/ports/1/hw_counters/sent_pkts
[ "$(cat "$FILE")" = 3894121 ] || fail "the fixture's rxe0 sent_pkts changed: $(cat "$FILE")"
SENT='nvmeof_rdma_hw_counters_total{rdma_device="rxe0",rdma_port="1",counter="sent_pkts"}'
RCVD='nvmeof_rdma_hw_counters_total{rdma_device="rxe0",rdma_port="1",counter="rcvd_pkts"}'

# raw SELECTOR: "time value" lines, every sample of the last 5 minutes.
raw() {
  curl -fsS --get "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1[5m]" |
    python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
for t, v in (r[0]["values"] if r else []):
    print(t, v)'
}
# samples_of SELECTOR VALUE: waits up to 20 s for a sample of VALUE.
wait_value() {
  for _ in $(seq 20); do
    raw "$1" | awk -v v="$2" '$2 == v {f = 1} END {exit !f}' && return 0
    sleep 1
  done
  fail "Prometheus $PROM_VERSION: no sample $2 of $1: $(raw "$1" | tail -n 3 | tr '\n' ' ')"
}

for v in $(prom_versions); do
  use_prometheus "$v" || continue
  # An exporter of its own per version: one that saw the last version's reset serves its
  # created timestamp still (as it should), and Prometheus would store that one's 0 too.
  echo 3894121 >"$FILE"
  start_exporter "resets-$v" --path.sysfs="$WORK/sysfs" --path.procfs="$FIXTURES/procfs" \
    --path.configfs="$FIXTURES/configfs" --testing.ethtool-dir="$FIXTURES/ethtool"
  EXPORTER_PID=$LAST_PID
  TARGET=127.0.0.1:$PORT
  if [ "$PROM_MAJOR" = 2 ]; then
    prom_config "$WORK/prometheus.yml" 1s resets "$TARGET"
    start_prometheus
  else
    prom_config "$WORK/prometheus.yml" 1s resets "$TARGET" "scrape_protocols: [PrometheusProto]"
    start_prometheus prometheus --enable-feature=created-timestamp-zero-ingestion
  fi
  prom_wait_up resets
  wait_value "$SENT" 3894121
  sleep 2
  before=$(date +%s.%N)
  echo 5 >"$FILE"
  wait_value "$SENT" 5
  after=$(date +%s.%N)
  echo 9 >"$FILE"
  wait_value "$SENT" 9
  raw "$SENT" >"$WORK/sent-$v.txt"
  raw "$RCVD" >"$WORK/rcvd-$v.txt"
  if [ "$PROM_MAJOR" = 2 ]; then
    raw "${SENT/_total/_created}" >"$WORK/created-$v.txt"
    out=$(python3 - "$WORK/sent-$v.txt" "$WORK/created-$v.txt" "$before" "$after" 2>&1 <<'EOF'
import sys
sent = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
created = [tuple(map(float, l.split())) for l in open(sys.argv[2])]
before, after = float(sys.argv[3]), float(sys.argv[4])
last_old = max(t for t, v in sent if v == 3894121)
first_new = min(t for t, v in sent if v == 5)
cts = sorted(set(v for _, v in created))
assert created, 'no _created series for sent_pkts'
assert min(t for t, _ in created) >= first_new, 'a _created sample before the rewrite was read'
assert len(cts) == 1 and last_old - 1 <= cts[0] <= first_new and cts[0] <= after, \
    'created %s, want one value within the old count last scrape %.3f and the new first %.3f' % (cts, last_old, first_new)
print('created %.3f: old count last scraped at %.3f, rewrite at %.3f, first 5 at %.3f'
      % (cts[0], last_old, before, first_new))
EOF
    ) || fail "Prometheus $v: $out"
    others=$(curl -fsS --get "http://127.0.0.1:$PROM_PORT/api/v1/query" \
      --data-urlencode 'query=count(nvmeof_rdma_hw_counters_created)' |
      python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')
    [ "$others" = 1 ] || fail "Prometheus $v: $others _created series, want 1 (sent_pkts only)"
  else
    out=$(python3 - "$WORK/sent-$v.txt" "$WORK/rcvd-$v.txt" "$before" "$after" 2>&1 <<'EOF'
import sys
sent = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
rcvd = [tuple(map(float, l.split())) for l in open(sys.argv[2])]
last_old = max(t for t, v in sent if v == 3894121)
first_new = min(t for t, v in sent if v == 5)
zeros = [t for t, v in sent if v == 0]
assert len(zeros) == 1, 'want one 0 sample (the created timestamp), got %d: %s' % (len(zeros), sent[-6:])
assert last_old < zeros[0] < first_new, 'the 0 at %.3f is not between the old count %.3f and the new %.3f' % (zeros[0], last_old, first_new)
assert not [t for t, v in rcvd if v == 0], 'rcvd_pkts, never rewritten, has a 0 sample'
print('0 at %.3f: old count last at %.3f, first 5 at %.3f' % (zeros[0], last_old, first_new))
EOF
    ) || fail "Prometheus $v: $out"
  fi
  pass "Prometheus $v: sent_pkts rewritten to 5: $out"
  stop_prometheus
  kill "$EXPORTER_PID"
  wait "$EXPORTER_PID" 2>/dev/null || true
done
prom_done
