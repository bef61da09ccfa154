#!/usr/bin/env bash
# A hung source must not take /metrics down (root only; skipped elsewhere). One mlx5
# hw_counters file of a copy of the fixture sysfs tree is bind-mounted from a FUSE file whose
# every read takes 20 s, as a stuck firmware command would. With the scraper's timeout header
# at 3 s (deadline 2.7 s), with one scrape at a time and with ten concurrent ones:
# - /metrics p99 <= deadline + 1 s; the rdma collector shows success 0 and a timeout while the
#   other collectors' series are served; past --web.max-requests, 503 at once;
# - the landing page p99 < 100 ms during the hang; /-/healthy and /-/ready answer 200;
# - the exporter's thread count stays bounded;
# - SIGTERM ends the exporter within 2 s while the read is still stuck.
source "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root (FUSE mount and bind mount)"
[ -e /dev/fuse ] || skip "no /dev/fuse"
require python3 curl

HEADER="X-Prometheus-Scrape-Timeout-Seconds: 3"
DEADLINE=2.7  # 3 s less the 10% margin
# The issue's bound. On a CPU-starved shared builder (load 10 on 2 cores) curl alone can take
# longer to be scheduled; raise it there explicitly, never silently.
LANDING_P99_MAX=${LANDING_P99_MAX:-0.1}
MNT="$WORK/mnt"
SYSFS="$WORK/sysfs"
BOUND=""
cleanup_hung() {
  local rc=$?
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  [ -n "$BOUND" ] && umount -l "$BOUND" 2>/dev/null
  umount -l "$MNT" 2>/dev/null || true
  (exit $rc)
  cleanup
}
trap cleanup_hung EXIT

cp -a "$FIXTURES/sysfs" "$SYSFS"
BOUND=$(find "$SYSFS/devices" -path '*/mlx5_0/hw_counters/np_cnp_sent' | head -n 1)
[ -f "$BOUND" ] || fail "no mlx5_0 hw_counters/np_cnp_sent in the fixture tree"
mkdir -p "$MNT"
python3 "$E2E_DIR/slowfs.py" "$MNT" 0 20 counter $'4242\n' >"$WORK/slowfs.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do grep -q ready "$WORK/slowfs.log" && break; sleep 0.1; done
grep -q ready "$WORK/slowfs.log" || skip "cannot mount a FUSE filesystem: $(cat "$WORK/slowfs.log")"
mount --bind "$MNT/counter" "$BOUND" || skip "cannot bind-mount onto the sysfs copy"

# tcp.node_counters: the procfs fixture's series show the tcp collector kept serving.
printf 'tcp: {node_counters: true}\n' >"$WORK/config.yml"
FLAGS=(--path.sysfs="$SYSFS" --path.procfs="$FIXTURES/procfs"
  --path.configfs="$FIXTURES/configfs" --testing.ethtool-dir="$FIXTURES/ethtool"
  --config.file="$WORK/config.yml")

# p99 of the numbers in FILE (nearest rank).
p99() { sort -g "$1" | awk '{v[NR] = $1} END {i = int(NR * 0.99); if (i < NR * 0.99) i++; print v[i]}'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a <= b)}'; }
threads() { awk '/^Threads:/ {print $2}' "/proc/$1/status"; }

# scrape OUT: one /metrics with the timeout header; appends "seconds code" to $WORK/scrapes.
scrape() {
  curl -s -o "$1" -w '%{time_total} %{http_code}\n' -H "$HEADER" \
    "http://127.0.0.1:$PORT/metrics" >>"$WORK/scrapes"
}
# Polls the landing page every 20 ms until $WORK/stop_landing exists; times in $WORK/landing.
poll_landing() {
  while [ ! -e "$WORK/stop_landing" ]; do
    curl -s -o /dev/null -m 5 -w '%{time_total} %{http_code}\n' "http://127.0.0.1:$PORT/" \
      >>"$WORK/landing"
    sleep 0.02
  done
}
# Samples the exporter's thread count every 50 ms while the landing poller runs.
sample_threads() {
  while [ ! -e "$WORK/stop_landing" ]; do threads "$1" >>"$WORK/threads"; sleep 0.05; done
}
check_hung_scrape() {
  local f=$1
  grep -q '^nvmeof_exporter_collector_success{collector="rdma"} 0$' "$f" ||
    fail "rdma collector not marked failed in $f"
  grep -Eq '^nvmeof_exporter_collector_timeouts_total\{collector="rdma"\} [1-9]' "$f" ||
    fail "no timeout counted for rdma in $f"
  ! grep -q 'nvmeof_rdma_device_info{' "$f" || fail "series of the timed-out rdma collector served"
  for c in nvme_host nvmet tcp; do
    grep -q "^nvmeof_exporter_collector_success{collector=\"$c\"} 1$" "$f" ||
      fail "collector $c not served during the hang"
  done
  grep -q '^nvmeof_controller_state{' "$f" || fail "nvme_host series missing during the hang"
  grep -q '^nvmeof_tcp_segments_sent_total' "$f" || fail "tcp series missing during the hang"
}
# run_phase NAME CONCURRENCY ROUNDS: scrapes while the landing page is polled.
run_phase() {
  local name=$1 n=$2 rounds=$3
  rm -f "$WORK/scrapes" "$WORK/landing" "$WORK/threads" "$WORK/stop_landing"
  poll_landing & local poller=$!
  sample_threads "$LAST_PID" & local sampler=$!
  sleep 0.2
  for r in $(seq "$rounds"); do
    local pids=()
    for i in $(seq "$n"); do
      scrape "$WORK/$name.$r.$i.prom" &
      pids+=($!)
    done
    wait "${pids[@]}"
    sleep 0.5  # landing page samples between rounds too (its p99 needs enough of them)
  done
  sleep 0.2
  touch "$WORK/stop_landing"
  wait "$poller" "$sampler"
  local ok busy other
  ok=$(awk '$2 == 200' "$WORK/scrapes" | wc -l)
  busy=$(awk '$2 == 503' "$WORK/scrapes" | wc -l)
  other=$(awk '$2 != 200 && $2 != 503' "$WORK/scrapes" | wc -l)
  awk '{print $1}' "$WORK/scrapes" >"$WORK/scrape_times"
  awk '$2 == 200 {print $1}' "$WORK/landing" >"$WORK/landing_times"
  local metrics_p99 metrics_max landing_p99 landing_n max_threads
  metrics_p99=$(p99 "$WORK/scrape_times")
  metrics_max=$(sort -g "$WORK/scrape_times" | tail -n 1)
  landing_p99=$(p99 "$WORK/landing_times")
  landing_n=$(wc -l <"$WORK/landing_times")
  max_threads=$(sort -n "$WORK/threads" | tail -n 1)
  echo "$name: $((ok + busy + other)) scrapes ($ok 200, $busy 503, $other other)," \
    "/metrics p99 ${metrics_p99}s max ${metrics_max}s; / p99 ${landing_p99}s over $landing_n;" \
    "threads max $max_threads"
  [ "$other" = 0 ] || fail "$name: scrapes answered neither 200 nor 503: $(cat "$WORK/scrapes")"
  [ "$ok" -gt 0 ] || fail "$name: no scrape answered 200"
  le "$metrics_p99" "$(awk -v d=$DEADLINE 'BEGIN {print d + 1}')" ||
    fail "$name: /metrics p99 ${metrics_p99}s > deadline ${DEADLINE}s + 1 s"
  [ "$(awk '$2 != 200' "$WORK/landing" | wc -l)" = 0 ] || fail "$name: landing page failed"
  [ "$landing_n" -ge 5 ] || fail "$name: only $landing_n landing page samples"
  le "$landing_p99" "$LANDING_P99_MAX" ||
    fail "$name: landing page p99 ${landing_p99}s > ${LANDING_P99_MAX}s (load: $(cut -d' ' -f1-3 /proc/loadavg))"
  # Bound: main + listener + one per open connection (<= 10 scrapes + 1 landing) + one run
  # per collector (7) + BPF/library threads; a pile-up would add one per scrape.
  [ "$max_threads" -le 40 ] || fail "$name: $max_threads threads"
  for f in "$WORK/$name".*.prom; do
    if head -c 200 "$f" | grep -q '^# HELP'; then check_hung_scrape "$f"; fi
  done
  MAX_THREADS=$max_threads
}

# 1. One scrape at a time (the first waits for the deadline; later ones find rdma still stuck
#    and report it at once).
start_exporter single "${FLAGS[@]}"
curl -sf "http://127.0.0.1:$PORT/-/healthy" >/dev/null || fail "/-/healthy"
curl -sf "http://127.0.0.1:$PORT/-/ready" >/dev/null || fail "/-/ready"
run_phase single 1 6
# Ten concurrent scrapes against the default --web.max-requests=4: the rest get 503 at once.
run_phase concurrent_capped 10 5
grep -q ' 503$' "$WORK/scrapes" || fail "no 503 past --web.max-requests"
before=$(threads "$LAST_PID")
run_phase concurrent_capped_more 10 5
echo "threads: $before before more rounds, $(threads "$LAST_PID") after"
kill -9 "$LAST_PID"

# 2. Ten concurrent scrapes that all wait on a fresh hung run (cap raised to 10).
start_exporter ten "${FLAGS[@]}" --web.max-requests=10
run_phase ten 10 4
curl -sf -m 1 "http://127.0.0.1:$PORT/-/healthy" >/dev/null || fail "/-/healthy during the hang"

# 3. SIGTERM while the read is still stuck (and a scrape is waiting on nothing).
start=$(date +%s.%N)
kill -TERM "$LAST_PID"
# Running, not a zombie waiting for this shell to reap it (kill -0 succeeds on zombies).
running() { grep -Eq '^State:\s+[^Z]' "/proc/$1/status" 2>/dev/null; }
for _ in $(seq 40); do running "$LAST_PID" || break; sleep 0.05; done
running "$LAST_PID" && fail "exporter still running 2 s after SIGTERM"
wait "$LAST_PID" || true
echo "SIGTERM to exit: $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.2f", e - s}')s"
pass "hung source: deadlines held, landing page and health answered, threads bounded"
