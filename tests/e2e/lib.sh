# Shared helpers for the end-to-end tests (sourced). Each test gets the exporter binary as $1.
set -euo pipefail

EXPORTER=${1:?usage: $0 path/to/nvmeof_exporter}
FIXTURES=${FIXTURES:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures" && pwd)}
E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d /tmp/nvmeof-e2e.XXXXXX)
PIDS=()

# The test's exit status stays its own (0, 77: skip, or a failure): under set -e a trap that ends
# in a failed command would make it 1 (a skip before any log existed was a failure).
cleanup() {
  local rc=$?
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
    echo "--- FAILED ($rc); logs in $WORK ---" >&2
    for f in "$WORK"/*.log; do [ -f "$f" ] && { echo "== $f" >&2; tail -n 30 "$f" >&2; }; done
  else
    rm -rf "$WORK"
  fi
  return $rc
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }
# skip REASON: ends the test as a visible skip (exit 77: ctest's SKIP_RETURN_CODE), never a pass.
skip() { echo "SKIP: $*" >&2; exit 77; }
# require [-m HINT] CMD...: skips unless every CMD is installed (HINT: where to get them).
require() {
  local hint="" cmd
  if [ "${1:-}" = -m ]; then hint=" ($2)"; shift 2; fi
  for cmd in "$@"; do command -v "$cmd" >/dev/null || skip "$cmd not installed$hint"; done
}
# The Prometheus configuration writers: prom_config, prom_job, prom_rules, prom_remote_write.
source "$E2E_DIR/prom_config.sh"

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

# check_series FILE...: fails the test when a saved /metrics text holds a series twice (same
# name and label set; Prometheus rejects such a scrape whole) or a line that is no sample.
check_series() {
  local out
  out=$(python3 "$E2E_DIR/check_series.py" "$@") || fail "duplicate or unparsable series: $out"
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
  # The binary itself in the background (not the `prometheus` function below: $! would be a
  # subshell, and killing it would leave the server running).
  "$(prom_bin prometheus)" --config.file="$WORK/$name.yml" "$storage" \
    --web.listen-address="127.0.0.1:$PROM_PORT" "$@" >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
  PROM_PIDS+=($!)
  PROM_STORAGE+=("${storage#*=}")
}

# --- Two Prometheus versions (tests/e2e/fetch_prometheus.sh): Debian 12's 2.42 and 3.5 LTS.
# A script that runs a real Prometheus runs its checks once per version:
#   for v in $(prom_versions); do use_prometheus "$v" || continue; ...; stop_prometheus; done
#   prom_done   # exit 77 (a visible skip, never a pass) when a version could not be had
# NVMEOF_PROMETHEUS_VERSIONS="2.42" (or "3.5") runs one only.
PROM_VERSION="" PROM_MAJOR="" PROM_DIR=""
PROM_PIDS=() PROM_STORAGE=() PROM_RAN=() PROM_SKIPPED=()
prom_versions() { echo "${NVMEOF_PROMETHEUS_VERSIONS:-2.42 3.5}"; }
# prom_bin NAME: the selected version's prometheus or promtool (before any use_prometheus: PATH's).
# (type -P: PATH's file, never the shell functions of the same name below.)
prom_bin() { if [ -n "$PROM_DIR" ]; then echo "$PROM_DIR/$1"; else type -P "$1" || echo "/usr/bin/$1"; fi; }
# `prometheus` and `promtool` in the foreground run the selected version's. Never background
# them (`prometheus ... &`): use start_prometheus, or "$(prom_bin prometheus)" ... &.
prometheus() { "$(prom_bin prometheus)" "$@"; }
promtool() { "$(prom_bin promtool)" "$@"; }
# use_prometheus VERSION: selects that version (PROM_VERSION, PROM_MAJOR, PROM_DIR); returns 1
# with a SKIP line when it cannot be had (fetch_prometheus.sh exit 77).
use_prometheus() {
  local dir rc=0
  dir=$("$E2E_DIR/fetch_prometheus.sh" "$1" 2>"$WORK/fetch-prometheus-$1.txt") || rc=$?
  if [ $rc = 77 ]; then
    echo "SKIP: Prometheus $1: $(tail -n 1 "$WORK/fetch-prometheus-$1.txt")"
    PROM_SKIPPED+=("$1")
    return 1
  fi
  [ $rc = 0 ] || fail "fetch_prometheus.sh $1 exited $rc: $(cat "$WORK/fetch-prometheus-$1.txt")"
  PROM_VERSION=$1 PROM_MAJOR=${1%%.*} PROM_DIR=$dir
  PROM_RAN+=("$1")
  echo "=== Prometheus $("$dir/prometheus" --version 2>&1 | sed -n '1s/^prometheus, version \([^ ]*\).*/\1/p') ($dir)"
}
# stop_prometheus: stops every Prometheus started so far and removes their storage, so that the
# next version starts from nothing (and its CPU is not shared with the last one's).
stop_prometheus() {
  local pid
  for pid in "${PROM_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PROM_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  for pid in "${PROM_STORAGE[@]}"; do rm -rf "$pid"; done
  PROM_PIDS=() PROM_STORAGE=()
}
# prom_wait_up JOB: waits up to 60 s for the running Prometheus ($PROM_PORT) to have scraped JOB
# successfully (up == 1); fails the test, with Prometheus' last log lines, if it never does.
prom_wait_up() {
  local got
  for _ in $(seq 60); do
    got=$(curl -fsS --get "http://127.0.0.1:$PROM_PORT/api/v1/query" \
      --data-urlencode "query=up{job=\"$1\"}" 2>/dev/null |
      python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if len(r) == 1 else "")' \
      2>/dev/null) || true
    [ "$got" = 1 ] && return 0
    sleep 1
  done
  fail "Prometheus $PROM_VERSION never scraped job $1 successfully: $(tail -n 5 "$WORK/prometheus.log" 2>/dev/null)"
}
# prom_done: after the loop over versions; exits 77 with a SKIP line if a version did not run.
prom_done() {
  [ ${#PROM_SKIPPED[@]} = 0 ] && return 0
  [ ${#PROM_RAN[@]} = 0 ] && skip "no Prometheus version could run (${PROM_SKIPPED[*]})"
  skip "Prometheus ${PROM_SKIPPED[*]} not run; passed on ${PROM_RAN[*]}"
}
# prom_native_flags: the flags that make this version scrape protobuf and store native
# histograms (2.42 and 3.5 both: the native-histograms feature flag; 3.x has no per-job
# scrape_native_histograms before 3.8).
prom_native_flags() { echo --enable-feature=native-histograms; }
# prom_agent_flags: agent mode (2.42: a feature flag; 3.x: --agent).
prom_agent_flags() { if [ "$PROM_MAJOR" = 2 ]; then echo --enable-feature=agent; else echo --agent; fi; }
