#!/usr/bin/env bash
# Scrape cost, in one run (tests/bench/README.md has results):
# 1. scrape_bench on a synthetic host at issue 12's scale: our text and protobuf writers beside
#    prometheus-cpp's TextSerializer and the libprotobuf-message writer, with and without gzip
#    (ns/sample, p50/p99, ratios), then that host served over HTTP by the exporter's Scraper and
#    WebServer (p50/p99 per format, RSS);
# 2. node_exporter's infiniband collector beside this exporter with only its rdma collector, on
#    the same RDMA fixture (tests/fixtures/sysfs, its mlx5 devices: the ones node_exporter can read), scraped over HTTP in turn: p50/p99 and the
#    time ratio. Needs Debian's prometheus-node-exporter (or NODE_EXPORTER=path); without it
#    part 2 is skipped and says so.
# 3. The same two, each scraped as fast as one client on one connection can (wrk -c1 -t1,
#    Debian's `wrk`; skipped with a message when not installed): scrapes/s kept alive, then
#    with `Connection: close` on every request (a new connection per scrape), in turn and
#    WRK_ROUNDS times (the two see the same load), and ours/node_exporter.
#   tests/bench/scrape_bench.sh [build dir]    HISTOGRAMS=450 COUNTERS=1000 ROUNDS=200
#                                              HTTP_ROUNDS=2000 WRK_SECONDS=10 WRK_ROUNDS=2
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
cmake --build "$BUILD" --target scrape_bench nvmeof_exporter -j2 >/dev/null
"$BUILD/tests/scrape_bench" "${HISTOGRAMS:-450}" "${COUNTERS:-1000}" "${ROUNDS:-200}"

echo
NODE_EXPORTER=${NODE_EXPORTER:-$(command -v prometheus-node-exporter || command -v node_exporter || true)}
if [ -z "$NODE_EXPORTER" ]; then
  echo "node_exporter comparison SKIPPED: apt-get install prometheus-node-exporter (or NODE_EXPORTER=path)"
  exit 0
fi
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# The RDMA fixture's mlx5 devices: node_exporter 1.5's procfs fails its whole infiniband
# collector ("no data") on any of the others (bnxt_re, rxe and siw have no ports/N/counters,
# and irdma0 fails it too), so both exporters read only those three.
SYSFS=$WORK/sysfs
cp -a tests/fixtures/sysfs "$SYSFS"
dropped=()
for dev in "$SYSFS"/class/infiniband/*; do
  case $(basename "$dev") in mlx5_*) ;; *) dropped+=("$(basename "$dev")"); rm "$dev" ;; esac
done
# Only the rdma collector: every other one off, as listed by --help.
mapfile -t others < <("$BUILD/nvmeof_exporter" --help | sed -n 's/^        \([a-z_]*\) (default .*/\1/p' |
  grep -vx rdma)
OURS=$(free_port)
"$BUILD/nvmeof_exporter" --web.listen-address="127.0.0.1:$OURS" --path.sysfs="$SYSFS" \
  "${others[@]/#/--no-collector.}" >"$WORK/ours.log" 2>&1 &
PIDS+=($!)
THEIRS=$(free_port)
"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$THEIRS" --path.sysfs="$SYSFS" \
  --collector.disable-defaults --collector.infiniband >"$WORK/node.log" 2>&1 &
PIDS+=($!)
for port in "$OURS" "$THEIRS"; do
  for _ in $(seq 100); do
    curl -fso /dev/null "http://127.0.0.1:$port/metrics" && break
    sleep 0.1
  done
done
curl -fsS "http://127.0.0.1:$OURS/metrics" >"$WORK/ours.prom" || { cat "$WORK/ours.log"; exit 1; }
curl -fsS "http://127.0.0.1:$THEIRS/metrics" >"$WORK/node.prom" || { cat "$WORK/node.log"; exit 1; }
echo "same fixture (tests/fixtures/sysfs without ${dropped[*]}): ours $(grep -vc '^#' "$WORK/ours.prom") samples" \
  "($(grep -c '^nvmeof_rdma' "$WORK/ours.prom") nvmeof_rdma_*)," \
  "node_exporter $(grep -vc '^#' "$WORK/node.prom") samples" \
  "($(grep -c '^node_infiniband' "$WORK/node.prom") node_infiniband_*);" \
  "$("$NODE_EXPORTER" --version 2>&1 | head -n 1)"
"$BUILD/tests/scrape_bench" --http \
  "nvmeof_exporter rdma=http://127.0.0.1:$OURS/metrics" \
  "node_exporter infiniband=http://127.0.0.1:$THEIRS/metrics" "${HTTP_ROUNDS:-2000}"

echo
if ! command -v wrk >/dev/null; then
  echo "wrk comparison SKIPPED: apt-get install wrk"
  exit 0
fi
# rps PORT [wrk flags]: scrapes/s of one wrk client on one connection (non-2xx fail the bench).
rps() {
  local port=$1 out
  shift
  out=$(wrk -c1 -t1 -d"${WRK_SECONDS:-10}s" "$@" "http://127.0.0.1:$port/metrics")
  if grep -q 'Non-2xx' <<<"$out"; then echo "$out" >&2; exit 1; fi
  sed -n 's/^Requests\/sec: *\([0-9.]*\)/\1/p' <<<"$out"
}
printf '%-10s %-12s %12s %15s %8s %s\n' round connection "ours/s" "node_exporter/s" ratio load
for round in $(seq "${WRK_ROUNDS:-2}"); do
  for mode in keep-alive close; do
    flags=()
    [ "$mode" = close ] && flags=(-H "Connection: close")
    ours=$(rps "$OURS" "${flags[@]}")
    theirs=$(rps "$THEIRS" "${flags[@]}")
    printf '%-10s %-12s %12.0f %15.0f %8.2f %s\n' "$round" "$mode" "$ours" "$theirs" \
      "$(awk -v a="$ours" -v b="$theirs" 'BEGIN { print a / b }')" "$(cut -d' ' -f1-3 /proc/loadavg)"
  done
done
