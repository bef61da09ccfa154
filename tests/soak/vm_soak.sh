#!/usr/bin/env bash
# The soak of hours (tests/soak/README.md "In a VM"): one exporter in a VM on a real kernel under
# controller, port and module churn with fio throughout (tests/vm/guest/scenarios/soak.sh), scraped
# every 15 s by real Prometheus servers on this machine through a QEMU port forward; then
# tests/soak/vm_report.py checks and plots what each Prometheus and the guest recorded.
#   tests/soak/vm_soak.sh [--kernel 6.12] [--seconds 7200] [--round 300] [--out DIR]
#                         [--prom-versions "3.5 2.42"] [--exporter PATH]
# Exit 0 pass, 1 fail, 77 skip (no VM kernel, no Prometheus). Not in CI: it takes --seconds plus
# about 10 minutes. Needs tests/vm/install-deps.sh KERNEL and python3-matplotlib.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
KERNEL=6.12 SECONDS_=7200 ROUND=300 OUT=/tmp/nvmeof-soak-vm PROM_VERSIONS="3.5 2.42"
EXPORTER=$ROOT/build/nvmeof_exporter
while [ $# -gt 0 ]; do
  case $1 in
    --kernel) KERNEL=$2; shift 2 ;;
    --seconds) SECONDS_=$2; shift 2 ;;
    --round) ROUND=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --prom-versions) PROM_VERSIONS=$2; shift 2 ;;
    --exporter) EXPORTER=$2; shift 2 ;;
    *) sed -n '2,9p' "$0" >&2; exit 2 ;;
  esac
done
PY=/usr/bin/python3 # Debian's, with its matplotlib (not a python3 earlier in PATH)
"$PY" -c 'import matplotlib' 2>/dev/null || { echo "vm_soak: python3-matplotlib missing (apt-get install python3-matplotlib)" >&2; exit 77; }
HOST_PORT=${SOAK_HOST_PORT:-19420} PROM_PORT=${SOAK_PROM_PORT:-19490}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
printf '%s\n' "global:" "  scrape_interval: 15s" "  scrape_timeout: 10s" "scrape_configs:" \
  "  - job_name: nvmeof" "    static_configs:" "      - targets: ['127.0.0.1:$HOST_PORT']" \
  >"$OUT/prometheus.yml"
# One Prometheus per version, each with its own port (PROM_PORT, +1, ...) and TSDB
# (OUT/prometheus-V):
# 3.x with created-timestamp-zero-ingestion: protobuf scrapes (the feature makes them its first
#   choice), and the zero a restarted counter began from stored at its created timestamp. Its
#   native histograms are off, so it stores none of the exporter's latency histograms (native
#   only in protobuf by default: docs/operating.md): it checks counters and gauges;
# 2.x: OpenMetrics, every histogram's classic series, and each `_created` as a series.
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true' EXIT
PORTS=()
for v in $PROM_VERSIONS; do
  dir=$("$ROOT/tests/e2e/fetch_prometheus.sh" "$v") || { echo "vm_soak: no Prometheus $v" >&2; exit 77; }
  flags=()
  [ "${v%%.*}" -lt 3 ] || flags=(--enable-feature=created-timestamp-zero-ingestion)
  port=$((PROM_PORT + ${#PORTS[@]}))
  rm -rf "$OUT/prometheus-$v" && mkdir -p "$OUT/prometheus-$v"
  "$dir/prometheus" "${flags[@]}" --config.file="$OUT/prometheus.yml" \
    --storage.tsdb.path="$OUT/prometheus-$v" --storage.tsdb.retention.time=30d \
    --web.listen-address="127.0.0.1:$port" >"$OUT/prometheus-$v.log" 2>&1 &
  PIDS+=($!)
  PORTS+=("$port")
done
date +%s >"$OUT/start"
vm_rc=0
HOSTFWD=$HOST_PORT:10420 SOAK_SECONDS=$SECONDS_ ROUND_SECONDS=$ROUND \
  "$ROOT/tests/vm/run.sh" --kernel "$KERNEL" --scenario soak --exporter "$EXPORTER" \
  --out "$OUT/vm" --timeout $((SECONDS_ + 900)) >"$OUT/vm.log" 2>&1 || vm_rc=$?
date +%s >"$OUT/end"
tail -3 "$OUT/vm.log"
sleep 20 # the scrapes after the exporter stopped: up 0, which marks the end of the window
report_rc=0
# A 2.x server's `_created` series show the created timestamps the exporter served, for the 3.x
# report (vm_report.py --other-prometheus).
other=()
i=0
for v in $PROM_VERSIONS; do
  [ "${v%%.*}" -lt 3 ] && other=(--other-prometheus "http://127.0.0.1:${PORTS[$i]}")
  i=$((i + 1))
done
i=0
for v in $PROM_VERSIONS; do
  echo "== Prometheus $v"
  mkdir -p "$OUT/report-$v"
  extra=()
  [ "${v%%.*}" -lt 3 ] || extra=("${other[@]}")
  "$PY" "$HERE/vm_report.py" --prometheus "http://127.0.0.1:${PORTS[$i]}" --guest "$OUT/vm/guest" \
    --out "$OUT/report-$v" --start "$(cat "$OUT/start")" --end "$(cat "$OUT/end")" "${extra[@]}" ||
    report_rc=1
  i=$((i + 1))
done
echo "vm_soak: VM scenario rc=$vm_rc, reports rc=$report_rc: $OUT/report-*; Prometheus data: $OUT/prometheus-*"
[ "$vm_rc" = 0 ] && [ "$report_rc" = 0 ]
