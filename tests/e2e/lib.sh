# Shared helpers for the end-to-end tests (sourced). Each test gets the exporter binary as $1.
set -euo pipefail

EXPORTER=${1:?usage: $0 path/to/nvmeof_exporter}
FIXTURES=${FIXTURES:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures" && pwd)}
E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d /tmp/nvmeof-e2e.XXXXXX)
PIDS=()

cleanup() {
  local rc=$?
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ $rc -ne 0 ]; then
    echo "--- FAILED ($rc); logs in $WORK ---" >&2
    for f in "$WORK"/*.log; do [ -f "$f" ] && { echo "== $f" >&2; tail -n 30 "$f" >&2; }; done
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# The flags that point every collector at the checked-in fixture trees.
FIXTURE_FLAGS=(--path.sysfs="$FIXTURES/sysfs" --path.procfs="$FIXTURES/procfs"
  --path.configfs="$FIXTURES/configfs" --testing.ethtool-dir="$FIXTURES/ethtool")

# start_exporter NAME [flags...]: starts on 127.0.0.1 with a kernel-chosen port and sets PORT.
start_exporter() {
  local name=$1; shift
  local log="$WORK/$name.log"
  : >"$log"  # exists before the polling below reads it (the child's redirect may come later)
  "$EXPORTER" --web.listen-address=127.0.0.1:0 "$@" >"$log" 2>&1 &
  PIDS+=($!)
  LAST_PID=$!
  for _ in $(seq 100); do
    PORT=$(sed -n 's/.*msg="listening".* port="\([0-9]*\)".*/\1/p' "$log" | head -n 1)
    [ -n "$PORT" ] && return 0
    kill -0 "$LAST_PID" 2>/dev/null || fail "exporter $name exited: $(cat "$log")"
    sleep 0.1
  done
  fail "exporter $name did not start listening"
}

# start_prometheus: runs Debian's prometheus on $WORK/prometheus.yml (written by the caller) on a
# free port, storage in $WORK/tsdb, log in $WORK/prometheus.log; sets PROM_PORT.
start_prometheus() {
  PROM_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
    --web.listen-address="127.0.0.1:$PROM_PORT" >"$WORK/prometheus.log" 2>&1 &
  PIDS+=($!)
}
