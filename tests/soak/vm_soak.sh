#!/usr/bin/env bash
# The soak of hours (tests/soak/README.md "In a VM"): one exporter in a VM on a real kernel under
# controller, port and module churn with fio throughout (tests/vm/guest/scenarios/soak.sh), scraped
# every 15 s by a real Prometheus on this machine through a QEMU port forward; then
# tests/soak/vm_report.py checks and plots what Prometheus and the guest recorded.
#   tests/soak/vm_soak.sh [--kernel 6.12] [--seconds 7200] [--round 300] [--out DIR]
#                         [--prom-version 3.5|2.42] [--exporter PATH]
# Exit 0 pass, 1 fail, 77 skip (no VM kernel, no Prometheus). Not in CI: it takes --seconds plus
# about 10 minutes. Needs tests/vm/install-deps.sh KERNEL and python3-matplotlib.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
KERNEL=6.12 SECONDS_=7200 ROUND=300 OUT=/tmp/nvmeof-soak-vm PROM_VERSION=3.5 EXPORTER=$ROOT/build/nvmeof_exporter
while [ $# -gt 0 ]; do
  case $1 in
    --kernel) KERNEL=$2; shift 2 ;;
    --seconds) SECONDS_=$2; shift 2 ;;
    --round) ROUND=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --prom-version) PROM_VERSION=$2; shift 2 ;;
    --exporter) EXPORTER=$2; shift 2 ;;
    *) sed -n '2,9p' "$0" >&2; exit 2 ;;
  esac
done
PY=/usr/bin/python3 # Debian's, with its matplotlib (not a python3 earlier in PATH)
"$PY" -c 'import matplotlib' 2>/dev/null || { echo "vm_soak: python3-matplotlib missing (apt-get install python3-matplotlib)" >&2; exit 77; }
PROM_DIR=$("$ROOT/tests/e2e/fetch_prometheus.sh" "$PROM_VERSION") || exit 77
HOST_PORT=${SOAK_HOST_PORT:-19420} PROM_PORT=${SOAK_PROM_PORT:-19490}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
rm -rf "$OUT/prometheus" && mkdir -p "$OUT/prometheus"
cat >"$OUT/prometheus.yml" <<EOF
global:
  scrape_interval: 15s
  scrape_timeout: 10s
scrape_configs:
  - job_name: nvmeof
    static_configs:
      - targets: ['127.0.0.1:$HOST_PORT']
EOF
# 3.x stores the zero a restarted counter began from at its created timestamp (protobuf scrapes,
# which the feature makes its first choice); 2.42 ingests OpenMetrics' `_created` as series.
CT_FLAG=()
[ "${PROM_VERSION%%.*}" -lt 3 ] || CT_FLAG=(--enable-feature=created-timestamp-zero-ingestion)
"$PROM_DIR/prometheus" "${CT_FLAG[@]}" --config.file="$OUT/prometheus.yml" --storage.tsdb.path="$OUT/prometheus" \
  --storage.tsdb.retention.time=30d --web.listen-address="127.0.0.1:$PROM_PORT" >"$OUT/prometheus.log" 2>&1 &
PROM_PID=$!
trap 'kill $PROM_PID 2>/dev/null || true' EXIT
date +%s >"$OUT/start"
vm_rc=0
HOSTFWD=$HOST_PORT:10420 SOAK_SECONDS=$SECONDS_ ROUND_SECONDS=$ROUND \
  "$ROOT/tests/vm/run.sh" --kernel "$KERNEL" --scenario soak --exporter "$EXPORTER" \
  --out "$OUT/vm" --timeout $((SECONDS_ + 900)) >"$OUT/vm.log" 2>&1 || vm_rc=$?
date +%s >"$OUT/end"
tail -3 "$OUT/vm.log"
sleep 20 # the scrapes after the exporter stopped: up 0, which marks the end of the window
report_rc=0
"$PY" "$HERE/vm_report.py" --prometheus "http://127.0.0.1:$PROM_PORT" --guest "$OUT/vm/guest" \
  --out "$OUT" --start "$(cat "$OUT/start")" --end "$(cat "$OUT/end")" || report_rc=$?
echo "vm_soak: VM scenario rc=$vm_rc, report rc=$report_rc; Prometheus data in $OUT/prometheus"
[ "$vm_rc" = 0 ] && [ "$report_rc" = 0 ]
