#!/usr/bin/env bash
# Exemplars through a real Prometheus. This is a REPLAY of a real capture, not a live scrape of
# an exporter: tests/fixtures/exposition/vm-6.12-explain.{om,pb} are the OpenMetrics and protobuf
# bodies that the exporter served in the VM scenario `explain` on Debian's 6.12 kernel (NVMe/TCP,
# right after its drive-fault phase; see the README there), each exemplar naming the slowest
# recorded command of its nvmeof_command_latency_seconds series (docs/metrics.md "Exemplars and
# created timestamps"). This machine has no NVMe-oF to produce them live.
# tests/e2e/exemplar_replay.py serves them on 127.0.0.1 (a kernel-chosen port), per each
# request's Accept header (protobuf when asked, else OpenMetrics), with the exporter's
# Content-Types and the exemplars' timestamps as captured (Prometheus stores an exemplar of any
# age: nothing to rewrite). Then:
#   3.5   --enable-feature=exemplar-storage and native histograms (prom_native_flags), two jobs
#         on the replay: `om` speaks OpenMetrics 1.0 only, `pb` protobuf only.
#         /api/v1/query_exemplars?query=nvmeof_command_latency_seconds_bucket returns every
#         exemplar of the OpenMetrics body on its bucket series (command label, value,
#         timestamp); ...?query=nvmeof_command_latency_seconds the protobuf body's on the native
#         series (Histogram.exemplars; Prometheus 3.5.3 keeps those of a family's first native
#         histogram only: exemplar_replay.py, NOTE lines).
#   2.42  OpenMetrics (its default first choice), exemplar storage on and, side by side, off:
#         both scrape it healthy; on returns the OpenMetrics body's exemplars, off none.
# Every scrape: up == 1, no scrape error in /api/v1/targets, scrape_samples_scraped > 0 (for
# OpenMetrics, the body's sample lines, _created included). Exit 77 when a Prometheus version
# cannot be had (lib.sh prom_done).
source "$(dirname "$0")/lib.sh"
OM=$FIXTURES/exposition/vm-6.12-explain.om
PB=$FIXTURES/exposition/vm-6.12-explain.pb
[ -s "$OM" ] && [ -s "$PB" ] || fail "the captured bodies $OM, $PB are missing"
REPLAY=$E2E_DIR/exemplar_replay.py

python3 "$REPLAY" serve "$OM" "$PB" >"$WORK/replay.port" 2>"$WORK/replay.log" &
PIDS+=($!)
for _ in $(seq 50); do
  RPORT=$(head -n 1 "$WORK/replay.port")
  [ -n "$RPORT" ] && break
  sleep 0.1
done
[ -n "$RPORT" ] || fail "exemplar_replay.py did not start: $(cat "$WORK/replay.log")"
TARGET=127.0.0.1:$RPORT
OM_SAMPLES=$(grep -vc '^#' "$OM")

# query EXPR: the value of the single series an instant query returns.
query() {
  curl -fsS --get "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if len(r) == 1 else "")'
}
# healthy JOB [SAMPLES]: the running Prometheus ($PROM_PORT, named $PROM_NAME) scrapes JOB up,
# without a scrape error, and took SAMPLES samples (any > 0 without).
healthy() {
  local job=$1 want=${2:-} err samples
  prom_wait_up "$job"
  err=$(curl -fsS "http://127.0.0.1:$PROM_PORT/api/v1/targets" | python3 -c '
import json, sys
t = [t for t in json.load(sys.stdin)["data"]["activeTargets"] if t["labels"]["job"] == sys.argv[1]]
print("no target" if len(t) != 1 else t[0]["lastError"] or ("health " + t[0]["health"] if t[0]["health"] != "up" else ""))' "$job")
  [ -z "$err" ] || fail "Prometheus $PROM_VERSION ($PROM_NAME) job $job: scrape error: $err"
  samples=$(query "scrape_samples_scraped{job=\"$job\"}")
  if [ -n "$want" ]; then
    [ "$samples" = "$want" ] ||
      fail "Prometheus $PROM_VERSION ($PROM_NAME) job $job took ${samples:-no} samples, the body has $want"
  else
    [ "${samples:-0}" -gt 0 ] || fail "Prometheus $PROM_VERSION ($PROM_NAME) job $job took ${samples:-no} samples"
  fi
  pass "Prometheus $PROM_VERSION ($PROM_NAME) job $job: up, no scrape error, $samples samples"
}
# exemplars KIND METRIC: query_exemplars for METRIC checked by exemplar_replay.py check KIND,
# retried for 10 s (the scrape that made the target up stored them, but be lenient).
exemplars() {
  local kind=$1 metric=$2 out
  for _ in $(seq 10); do
    curl -fsS --get "http://127.0.0.1:$PROM_PORT/api/v1/query_exemplars" \
      --data-urlencode "query=$metric" --data-urlencode start=0 \
      --data-urlencode "end=$(($(date +%s) + 3600))" >"$WORK/exemplars.json" &&
      out=$(python3 "$REPLAY" check "$kind" "$OM" "$PB" <"$WORK/exemplars.json") && {
      echo "$out" | sed 's/^/  /'
      pass "Prometheus $PROM_VERSION ($PROM_NAME) query_exemplars $metric: $(echo "$out" | tail -n 1)"
      return 0
    }
    sleep 1
  done
  fail "Prometheus $PROM_VERSION ($PROM_NAME) query_exemplars $metric ($kind): $out $(cat "$WORK/exemplars.json")"
}

for v in $(prom_versions); do
  use_prometheus "$v" || continue
  : >"$WORK/replay.log"
  if [ "$PROM_MAJOR" = 2 ]; then
    declare -A ports
    for name in exemplars-on exemplars-off; do
      prom_config "$WORK/$name.yml" 1s om "$TARGET"
      flags=()
      [ $name = exemplars-off ] || flags=(--enable-feature=exemplar-storage)
      start_prometheus $name "${flags[@]}"
      ports[$name]=$PROM_PORT
    done
    for name in exemplars-on exemplars-off; do
      PROM_NAME=$name PROM_PORT=${ports[$name]}
      healthy om "$OM_SAMPLES"
      if [ $name = exemplars-on ]; then
        exemplars classic nvmeof_command_latency_seconds_bucket
      else
        exemplars none nvmeof_command_latency_seconds_bucket
      fi
    done
    ! grep -q 'served protobuf' "$WORK/replay.log" ||
      fail "Prometheus $v without native histograms asked for protobuf"
  else
    prom_config "$WORK/prometheus.yml" 1s om "$TARGET" "scrape_protocols: [OpenMetricsText1.0.0]"
    prom_job "$WORK/prometheus.yml" pb "$TARGET" "scrape_protocols: [PrometheusProto]"
    # shellcheck disable=SC2046 # the flags, one word each
    start_prometheus prometheus --enable-feature=exemplar-storage $(prom_native_flags)
    PROM_NAME=prometheus
    healthy om "$OM_SAMPLES"
    healthy pb
    exemplars classic nvmeof_command_latency_seconds_bucket
    exemplars native nvmeof_command_latency_seconds
    grep -q 'served protobuf' "$WORK/replay.log" || fail "job pb was never served protobuf"
  fi
  grep -q 'served openmetrics' "$WORK/replay.log" || fail "no scrape was served OpenMetrics"
  stop_prometheus
done
prom_done
