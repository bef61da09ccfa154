#!/usr/bin/env bash
# Chaos fixtures: kernel strings are untrusted. Each run builds CHAOS_TREES copies of the fixture
# trees (sysfs, procfs, configfs, ethtool) with a random fifth of the files replaced by garbage
# (invalid UTF-8, NUL bytes, huge/negative/NaN numbers, empty files, 100 KB lines, control
# characters) plus a symlink loop and a dangling link, and the odd layouts of tests/fixtures/layouts
# (tests/e2e/chaos_tree.py). For each tree the
# exporter must answer /metrics with 200, `promtool check metrics` must print nothing (no parse
# error and no lint warning: the lint rules look at names and help only, which garbage cannot
# change, so a warning here is as much a bug as in test_golden.sh), no series may be served twice
# (check_series.py: promtool 2.42 does not look), and the exporter must still be running
# afterwards. The same tree scraped as protobuf must answer 200 and decode whole, with
# valid UTF-8 in every string (protobuf_check.py). Then two real Prometheus, one on text and one
# with native histograms on (protobuf), scrape the exporters of the first CHAOS_PROM_TREES trees
# and must report up == 1 and scrape_samples_scraped > 0 for every one: on Prometheus 2.42, then
# on 3.5 LTS (whose promtool also lints those trees; a 3.5 that cannot be had: exit 77).
#
#   tests/e2e/test_chaos.sh build/nvmeof_exporter                 # CHAOS_TREES=8, random seed
#   CHAOS_TREES=200 tests/e2e/test_chaos.sh build/nvmeof_exporter # the full run
#   CHAOS_SEED=1234 CHAOS_TREES=1 tests/e2e/test_chaos.sh build/nvmeof_exporter  # one tree again
# Tree i of a run uses seed CHAOS_SEED+i; a failure prints the command that rebuilds that tree.
source "$(dirname "$0")/lib.sh"
PROTOBUF_ACCEPT='application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited'
command -v protoc >/dev/null || fail "protoc is not installed (apt-get install protobuf-compiler)"
command -v promtool >/dev/null || fail "promtool is not installed (apt-get install prometheus)"

TREES=${CHAOS_TREES:-8}
SEED=${CHAOS_SEED:-$(( $(date +%s) % 1000000 ))}
PROM_TREES=${CHAOS_PROM_TREES:-4}
[ "$PROM_TREES" -le "$TREES" ] || PROM_TREES=$TREES
SCRIPT="tests/e2e/test_chaos.sh $EXPORTER"
echo "chaos: seed=$SEED trees=$TREES (reproduce: CHAOS_SEED=$SEED CHAOS_TREES=$TREES $SCRIPT)"
start_s=$(date +%s)

declare -A BROKEN=()
declare -a PROM_PORTS=() PROM_SEEDS=()
# broke SEED WHAT: records a broken tree, with the command that rebuilds just that tree.
broke() {
  BROKEN[$1]=1
  echo "BROKEN tree seed=$1: $2 (reproduce: CHAOS_SEED=$1 CHAOS_TREES=1 $SCRIPT;" \
    "tree: python3 tests/e2e/chaos_tree.py tests/fixtures /tmp/chaos $1)" >&2
}

for i in $(seq 0 $((TREES - 1))); do
  s=$((SEED + i))
  tree="$WORK/tree-$s"
  python3 "$E2E_DIR/chaos_tree.py" "$FIXTURES" "$tree" "$s"
  start_exporter "chaos-$s" --no-collector.bpf --path.sysfs="$tree/sysfs" \
    --path.procfs="$tree/procfs" --path.configfs="$tree/configfs" \
    --testing.ethtool-dir="$tree/ethtool"
  pid=$LAST_PID
  code=$(curl -sS -o "$tree/metrics.prom" -w '%{http_code}' --max-time 20 \
    "http://127.0.0.1:$PORT/metrics" 2>"$tree/curl.err") || code="curl failed: $(cat "$tree/curl.err")"
  ok=1
  if [ "$code" != 200 ]; then
    broke "$s" "/metrics answered $code"
    ok=0
  elif ! promtool check metrics <"$tree/metrics.prom" >"$tree/promtool.log" 2>&1 ||
    [ -s "$tree/promtool.log" ]; then
    broke "$s" "promtool check metrics: $(head -c 300 "$tree/promtool.log" | tr '\n' ' ')"
    ok=0
  elif ! why=$(python3 "$E2E_DIR/check_series.py" "$tree/metrics.prom"); then
    broke "$s" "$why"  # a series served twice: Prometheus rejects the whole scrape
    ok=0
  fi
  # The same tree as protobuf (what a native-histogram Prometheus asks for).
  pcode=$(curl -sS -o "$tree/metrics.pb" -w '%{http_code} %{content_type}' --max-time 20 \
    -H "Accept: $PROTOBUF_ACCEPT" "http://127.0.0.1:$PORT/metrics" 2>"$tree/curl.err") ||
    pcode="curl failed: $(cat "$tree/curl.err")"
  if [ "${pcode%% *}" != 200 ] || [[ "$pcode" != *application/vnd.google.protobuf* ]]; then
    broke "$s" "protobuf /metrics answered $pcode"
    ok=0
  elif ! why=$(python3 "$E2E_DIR/protobuf_check.py" "$tree/metrics.pb"); then
    broke "$s" "protobuf /metrics: $why"
    ok=0
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    broke "$s" "the exporter exited: $(tail -n 5 "$WORK/chaos-$s.log")"
    ok=0
  fi
  if [ "$i" -lt "$PROM_TREES" ]; then
    PROM_PORTS+=("$PORT")
    PROM_SEEDS+=("$s")
  else
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    # Keep a broken tree for a look; drop a good one (200 trees would fill /tmp).
    [ "$ok" = 1 ] && rm -rf "$tree" "$WORK/chaos-$s.log"
  fi
done
echo "chaos: $((TREES - ${#BROKEN[@]})) of $TREES trees served valid /metrics"

# Two real Prometheus of each version (lib.sh: 2.42, then 3.5 LTS) scrape the kept exporters:
# it rejects a whole scrape on one invalid label. That version's promtool lints their trees too.
prom_config "$WORK/chaos-scrape.yml" 1s chaos "" "static_configs:" "$(
  for k in "${!PROM_PORTS[@]}"; do
    echo "  - {targets: [\"127.0.0.1:${PROM_PORTS[$k]}\"], labels: {chaos_seed: \"${PROM_SEEDS[$k]}\"}}"
  done)"
# query EXPR: "seed value" lines of an instant query.
query() {
  curl -fsS --get "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys; d=json.load(sys.stdin)
for r in d["data"]["result"]: print(r["metric"].get("chaos_seed","?"), r["value"][1])'
}
for v in $(prom_versions); do
use_prometheus "$v" || continue
for s in "${PROM_SEEDS[@]}"; do
  [ -f "$WORK/tree-$s/metrics.prom" ] || continue
  if ! promtool check metrics <"$WORK/tree-$s/metrics.prom" >"$WORK/tree-$s/promtool-$v.log" 2>&1 ||
    [ -s "$WORK/tree-$s/promtool-$v.log" ]; then
    broke "$s" "promtool $v check metrics: $(head -c 300 "$WORK/tree-$s/promtool-$v.log" | tr '\n' ' ')"
  fi
done
cp "$WORK/chaos-scrape.yml" "$WORK/prometheus.yml"
start_prometheus
TEXT_PROM_PORT=$PROM_PORT
# A second one with native histograms on scrapes the same exporters over protobuf.
cp "$WORK/chaos-scrape.yml" "$WORK/pb.yml"
start_prometheus pb $(prom_native_flags)
PB_PROM_PORT=$PROM_PORT
for mode in text:$TEXT_PROM_PORT protobuf:$PB_PROM_PORT; do
PROM_PORT=${mode#*:}
for _ in $(seq 60); do
  n=$(query 'scrape_samples_scraped{job="chaos"}' 2>/dev/null | wc -l) || n=0
  [ "$n" -ge "${#PROM_PORTS[@]}" ] && break
  sleep 1
done
declare -A UP=() SAMPLES=()
while read -r seed v2; do UP[$seed]=$v2; done < <(query 'up{job="chaos"}')
while read -r seed v2; do SAMPLES[$seed]=$v2; done < <(query 'scrape_samples_scraped{job="chaos"}')
for s in "${PROM_SEEDS[@]}"; do
  if [ "${UP[$s]:-none}" != 1 ] || [ "${SAMPLES[$s]:-0}" = 0 ]; then
    err=$(curl -fsS "http://127.0.0.1:$PROM_PORT/api/v1/targets" | python3 -c 'import json,sys
for t in json.load(sys.stdin)["data"]["activeTargets"]:
    if t["labels"].get("chaos_seed") == sys.argv[1]: print(t["lastError"])' "$s")
    broke "$s" "Prometheus $v (${mode%%:*}): up=${UP[$s]:-none} scrape_samples_scraped=${SAMPLES[$s]:-none} $err"
  fi
done
unset UP SAMPLES
done
stop_prometheus
echo "chaos: two Prometheus $v (text; protobuf with native histograms) scraped the first ${#PROM_SEEDS[@]} trees"
done

broken=${#BROKEN[@]}
echo "chaos: $broken of $TREES trees broke (seed=$SEED) in $(( $(date +%s) - start_s )) s"
[ "$broken" = 0 ] || fail "$broken broken chaos trees; reproduce: CHAOS_SEED=$SEED CHAOS_TREES=$TREES $SCRIPT"
prom_done
