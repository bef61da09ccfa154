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

# free_port: a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_prometheus [NAME [FLAG...]]: runs Debian's prometheus on $WORK/NAME.yml (written by the
# caller; NAME defaults to prometheus) on a free port with the extra FLAGs, log in
# $WORK/NAME.log, storage in $WORK/tsdb-NAME ($WORK/tsdb for the default name; $WORK/NAME-wal
# when a FLAG turns on agent mode, which takes no TSDB flags); sets PROM_PORT.
start_prometheus() {
  local name=${1:-prometheus} storage
  [ $# -gt 0 ] && shift
  storage=--storage.tsdb.path="$WORK/tsdb"
  [ "$name" = prometheus ] || storage=--storage.tsdb.path="$WORK/tsdb-$name"
  case " $* " in *agent*) storage=--storage.agent.path="$WORK/$name-wal" ;; esac
  PROM_PORT=$(free_port)
  prometheus --config.file="$WORK/$name.yml" "$storage" \
    --web.listen-address="127.0.0.1:$PROM_PORT" "$@" >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
}
