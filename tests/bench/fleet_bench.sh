#!/usr/bin/env bash
# A fleet on one machine: what N nvmeof_exporter nodes cost a real Prometheus (Debian's 2.42
# and/or Prometheus 3.5 LTS), text and native histograms, against prometheus-node-exporter's
# default collectors as the reference on the same server version. tests/bench/README.md "Fleet"
# has the results and what each figure means.
#
#   tests/bench/fleet_bench.sh [-n N]... [--prom-version 2.42|3.5]... [--modes "node_exporter native text"]
#       [--settle SECONDS] [--interval SECONDS] [--reps R] [--deadline SECONDS] [--keep]
#       [--wal-replay]
#
# -n N (repeatable, default 200): fleet sizes, each run on its own (one after the other).
# --prom-version V (repeatable, or a list "2.42 3.5" / "2.42,3.5"; default 2.42): which
#   Prometheus, from tests/e2e/fetch_prometheus.sh (2.42: Debian's /usr/bin; 3.5: the cached
#   Debian unstable .deb). Each version runs every mode, in turn.
# --modes: which Prometheus servers to run per N and version (default all three), ONE AT A TIME:
#   each server is started, settled, measured and stopped before the next starts, so its CPU and
#   its wall-clock figures (rule evaluation, query latency) are its own:
#   node_exporter  N targets replaying one real node_exporter scrape (the reference)
#   native         the fleet (fleet_server.py) to a Prometheus with
#                  --enable-feature=native-histograms (protobuf, native schema-3 histograms;
#                  the same flag on 2.42 and 3.5, tests/e2e/lib.sh prom_native_flags)
#   text           the fleet to a Prometheus without it (text, 16 classic buckets)
# Every server but the reference loads the shipped rules (deploy/prometheus/*.rules.yml),
# scrapes every --interval (default 15 s), and is measured once its head has settled (--settle,
# default 300 s after the start; at least two rule evaluations of every group):
# fleet_measure.py. Before them, an empty Prometheus of the same version (no targets, no rules)
# runs alone for 20 s: its RSS is subtracted, so RSS per node is what the nodes add.
# The one process beside each server is the fleet server (fleet_server.py), which it scrapes.
# --wal-replay: after the measurement, fleet_wal_replay.sh -n N: an agent remote-writes the
#   fleet to a central server, which is killed for 60 s and restarted; samples per series
#   across the outage, and whether any were lost (tests/e2e/test_fleet.sh checks the same
#   path at N=20 in CI, without the outage).
# --reps R: each dashboard query R times (p50, p99 of those); --deadline: seconds for all the
#   dashboard queries of one server (the rest are reported as not run).
# Exit 0 when it ran; the table says which budgets were met (a missed budget is a result).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
SIZES=()
VERSIONS=()
MODES="node_exporter native text"
SETTLE=300
INTERVAL=15
REPS=10
DEADLINE=1800
KEEP=0
WAL=0
while [ $# -gt 0 ]; do
  case $1 in
    -n) SIZES+=("$2"); shift 2 ;;
    --prom-version) for v in ${2//,/ }; do VERSIONS+=("$v"); done; shift 2 ;;
    --modes) MODES=$2; shift 2 ;;
    --settle) SETTLE=$2; shift 2 ;;
    --interval) INTERVAL=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --deadline) DEADLINE=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --wal-replay) WAL=1; shift ;;
    *) sed -n '2,36p' "$0" >&2; exit 2 ;;
  esac
done
[ ${#SIZES[@]} -gt 0 ] || SIZES=(200)
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=(2.42)
for tool in python3 curl; do
  command -v $tool >/dev/null || { echo "fleet_bench: $tool not installed" >&2; exit 2; }
done
declare -A PROM_BIN=()
for v in "${VERSIONS[@]}"; do
  dir=$("$REPO/tests/e2e/fetch_prometheus.sh" "$v") || { echo "fleet_bench: no Prometheus $v (fetch_prometheus.sh exited $?)" >&2; exit 2; }
  PROM_BIN[$v]=$dir/prometheus
  echo "Prometheus $v: $("$dir/prometheus" --version 2>&1 | sed -n '1s/^prometheus, version \([^ ]*\).*/\1/p') ($dir)"
done
if [[ " $MODES " == *" node_exporter "* ]] && ! command -v prometheus-node-exporter >/dev/null; then
  echo "fleet_bench: prometheus-node-exporter not installed (apt-get install prometheus-node-exporter)" >&2
  exit 2
fi

WORK=$(mktemp -d /tmp/nvmeof-fleet.XXXXXX)
PIDS=()
stop_all() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  PIDS=()
}
finish() {
  stop_all
  if [ "$KEEP" = 1 ]; then echo "fleet_bench: kept $WORK"; else rm -rf "$WORK"; fi
}
trap finish EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ready() {  # wait_ready URL SECONDS

  for _ in $(seq "$(( $2 * 5 ))"); do curl -fsS "$1/-/ready" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "fleet_bench: $1 not ready after $2 s" >&2; return 1
}

# The reference: one real scrape of node_exporter's default collectors on this machine.
if [[ " $MODES " == *" node_exporter "* ]]; then
  NEP=$(free_port)
  prometheus-node-exporter --web.listen-address="127.0.0.1:$NEP" >"$WORK/node_exporter.log" 2>&1 &
  NE_PID=$!
  for _ in $(seq 50); do curl -fsS "127.0.0.1:$NEP/metrics" -o "$WORK/node_exporter.prom" 2>/dev/null && break; sleep 0.2; done
  kill "$NE_PID"; wait "$NE_PID" 2>/dev/null || true
  [ -s "$WORK/node_exporter.prom" ] || { echo "fleet_bench: node_exporter did not answer" >&2; exit 1; }
  echo "reference: prometheus-node-exporter $(prometheus-node-exporter --version 2>&1 | head -1 | awk '{print $3}'), default collectors:" \
    "$(grep -vc '^#' "$WORK/node_exporter.prom") samples per scrape on this machine ($(nproc) CPUs)"
fi

# scrape_config JOB KIND N PORT: N targets of one kind of node, all on the fleet server's port.
scrape_config() {
  local job=$1 kind=$2 n=$3 port=$4
  python3 - "$job" "$kind" "$n" "$port" "$INTERVAL" <<'PY'
import sys
job, kind, n, port, interval = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
names = ["r%05d" % i if kind == "r" else "hhtb"[i % 4] + "%05d" % i for i in range(n)]
print(f"""  - job_name: {job}
    scrape_interval: {interval}s
    scrape_timeout: {min(10, int(interval))}s
    metrics_path: /metrics
    static_configs:
      - targets: [{", ".join(names)}]
    relabel_configs:  # one server, N nodes: the node goes in the URL, the name in instance
      - {{source_labels: [__address__], target_label: __param_node}}
      - {{source_labels: [__address__], target_label: instance}}
      - {{target_label: __address__, replacement: "127.0.0.1:{port}"}}""")
PY
}

start_prom() {  # start_prom VERSION NAME CONFIG [flags]: sets PROM_URL, PROM_PID
  local ver=$1 name=$2 cfg=$3; shift 3
  local port
  port=$(free_port)
  "${PROM_BIN[$ver]}" --config.file="$cfg" --storage.tsdb.path="$WORK/tsdb-$name" \
    --web.listen-address="127.0.0.1:$port" --enable-feature=extra-scrape-metrics "$@" \
    >"$WORK/prometheus-$name.log" 2>&1 &
  PROM_PID=$!
  PIDS+=("$PROM_PID")
  PROM_URL=http://127.0.0.1:$port
  wait_ready "$PROM_URL" 60
}
stop_prom() {  # stop_prom PID: stops one server and waits for it to exit
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  local p keep=()
  for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  PIDS=("${keep[@]}")
}
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

RESULTS=()
for N in "${SIZES[@]}"; do
  echo "== N=$N: versions ${VERSIONS[*]}; modes $MODES, one server at a time; scrape interval ${INTERVAL}s, settle ${SETTLE}s ($(date -u +%FT%TZ), load $(loadavg))"
  FP=$(free_port)
  python3 "$HERE/fleet_server.py" --port "$FP" --nodes "$N" --tick "$INTERVAL" \
    ${NEP:+--node-exporter "$WORK/node_exporter.prom"} >"$WORK/fleet-$N.port" 2>"$WORK/fleet-$N.log" &
  FLEET_PID=$!
  PIDS+=("$FLEET_PID")
  for _ in $(seq 100); do [ -s "$WORK/fleet-$N.port" ] && break; sleep 0.1; done
  [ -s "$WORK/fleet-$N.port" ] || { echo "fleet server did not start: $(cat "$WORK/fleet-$N.log")" >&2; exit 1; }

  printf 'global: {scrape_interval: %ss}\n' "$INTERVAL" >"$WORK/empty.yml"
  for ver in "${VERSIONS[@]}"; do
    # The empty server of this version, alone: the RSS that every server has without nodes.
    start_prom "$ver" "empty-$ver-$N" "$WORK/empty.yml"
    sleep 20
    base=$(awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$PROM_PID/status")
    stop_prom "$PROM_PID"
    for mode in $MODES; do
      cfg="$WORK/$mode-$ver-$N.yml"
      {
        printf 'global: {scrape_interval: %ss, evaluation_interval: %ss}\n' "$INTERVAL" "$INTERVAL"
        if [ "$mode" = node_exporter ]; then
          echo "scrape_configs:"
          scrape_config node r "$N" "$FP"
        else
          echo "rule_files: [\"$REPO/deploy/prometheus/*.rules.yml\"]"
          echo "scrape_configs:"
          scrape_config nvmeof x "$N" "$FP"
        fi
      } >"$cfg"
      flags=()
      [ "$mode" = native ] && flags+=(--enable-feature=native-histograms)
      load0=$(loadavg)
      echo "-- Prometheus $ver, $mode, N=$N: started $(date -u +%TZ), load $load0"
      start_prom "$ver" "$mode-$ver-$N" "$cfg" "${flags[@]}"
      t0=$(date +%s)
      sleep "$SETTLE"
      echo "   settled $(( $(date +%s) - t0 ))s; measuring (load $(loadavg))"
      python3 "$HERE/fleet_measure.py" measure --prom "$PROM_URL" --pid "$PROM_PID" \
        --nodes "$N" --mode "$mode" --version "$ver" --load-start "$load0" \
        --out "$WORK/result-$mode-$ver-$N.json" --baseline-rss "$base" \
        --reps "$REPS" --deadline "$DEADLINE"
      RESULTS+=("$WORK/result-$mode-$ver-$N.json")
      stop_prom "$PROM_PID"
      [ "$KEEP" = 1 ] || rm -rf "$WORK/tsdb-$mode-$ver-$N"
    done
    rm -rf "$WORK/tsdb-empty-$ver-$N"
  done
  echo "fleet server: $(curl -fsS "127.0.0.1:$FP/stats" | tr '\n' ' ')"
  stop_all
  if [ "$WAL" = 1 ]; then
    "$HERE/fleet_wal_replay.sh" -n "$N" --interval "$INTERVAL" || echo "WAL replay check FAILED" >&2
  fi
done
echo
python3 "$HERE/fleet_measure.py" table "${RESULTS[@]}" | tee "$WORK/table.txt"
