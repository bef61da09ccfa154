#!/usr/bin/env bash
# Real kernel, real block I/O (root only; skipped elsewhere): for every attach mechanism the
# kernel here allows, forced with --bpf.mechanism, fio's reads of a loop device must show up in
# /metrics: request count and histogram _count equal to fio's I/O count (within 1%), and the
# end-to-end _sum equal to fio's total completion latency (within 10%).
#
# fio's clat also holds what happens outside the request (syscall, page pinning, waking fio),
# tens of microseconds in a busy VM, so the latency check needs requests that take long: the
# loop device sits on a file of a tiny FUSE filesystem (raw /dev/fuse protocol, below) that
# answers every read after 2 ms. The count checks also run at queue depth 32 on a fast loop
# device over tmpfs. A second exporter runs alongside the first: both must see every I/O.
source "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root"
require fio losetup python3 jq curl
[ -e /dev/loop-control ] || skip "no loop devices"
[ -e /dev/fuse ] || skip "no /dev/fuse"

LOOPS=()
MNT="$WORK/mnt"
cleanup_block() {
  local rc=$?
  for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null || true; done
  umount -l "$MNT" 2>/dev/null || true
  umount -l "$WORK/tmpfs" 2>/dev/null || true
  (exit $rc)
  cleanup
}
trap cleanup_block EXIT

mkdir -p "$MNT"
python3 "$E2E_DIR/slowfs.py" "$MNT" $((64 << 20)) 0.002 >"$WORK/slowfs.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do grep -q ready "$WORK/slowfs.log" && break; sleep 0.1; done
grep -q ready "$WORK/slowfs.log" || fail "slow FUSE filesystem did not start: $(cat "$WORK/slowfs.log")"
SLOW=$(losetup -r -f --show "$MNT/disk") || fail "losetup on FUSE file"
LOOPS+=("$SLOW")

mkdir -p "$WORK/tmpfs"
mount -t tmpfs -o size=300m tmpfs "$WORK/tmpfs"
truncate -s 256M "$WORK/tmpfs/disk"
FAST=$(losetup -f --show "$WORK/tmpfs/disk") || fail "losetup on tmpfs file"
LOOPS+=("$FAST")

# value FILE FAMILY DEVICE [extra label filter]: sum of matching samples (0 if none).
value() {
  grep -E "^$2\{" "$1" | grep "disk=\"$3\"" | grep 'op="read"' | grep -F "${4:-}" |
    awk '{s += $2} END {printf "%.9f\n", s + 0}'
}
scrape() { curl -fsS "http://127.0.0.1:$1/metrics" >"$2" || fail "scrape of :$1 failed"; check_series "$2"; }
# within A B TOLERANCE: |A/B - 1| <= TOLERANCE
within() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { exit !(b > 0 && (a / b - 1) ^ 2 <= t ^ 2) }'; }
# fio_run NAME DEVICE [fio flags]: runs fio, sets IOS and CLAT_SUM (seconds).
fio_run() {
  local name=$1 dev=$2; shift 2
  "${RT[@]}" fio --name="$name" --filename="$dev" --readonly --direct=1 --rw=randread --bs=4k \
    --output-format=json "$@" >"$WORK/$name.json" 2>"$WORK/$name.err" || fail "fio $name"
  IOS=$(jq '.jobs[0].read.total_ios' "$WORK/$name.json")
  CLAT_SUM=$(jq '.jobs[0].read.clat_ns.mean * .jobs[0].read.total_ios / 1e9' "$WORK/$name.json")
}
# Real-time priority for fio where allowed: its wake-up then waits for no CPU hog.
RT=()
chrt -f 10 true 2>/dev/null && RT=(chrt -f 10)

NOCOLL=()
for c in rdma pfc nvme_host nvmet tcp; do NOCOLL+=(--no-collector.$c); done
# Time every request here (the default samples 1 in 8), so timings can be compared one to one.
printf 'bpf:\n  sample_every: 1\n' >"$WORK/every.yml"

mechanisms=0
for mech in fentry kprobe tp_btf raw_tp; do
  if ! "$EXPORTER" probe --bpf.mechanism=$mech >"$WORK/probe-$mech.txt" 2>&1; then
    echo "note: $mech cannot attach here: $(grep -m1 '^bpf:' "$WORK/probe-$mech.txt")"
    continue
  fi
  mechanisms=$((mechanisms + 1))
  start_exporter "a-$mech" "${NOCOLL[@]}" --collector.bpf --bpf.mechanism=$mech --config.file="$WORK/every.yml"
  PA=$PORT
  start_exporter "b-$mech" "${NOCOLL[@]}" --collector.bpf --bpf.mechanism=$mech --config.file="$WORK/every.yml"
  PB=$PORT
  scrape $PA "$WORK/$mech-a0.prom"
  grep -q "^nvmeof_exporter_bpf_hook_attached{hook=\"block_rq_complete\",mechanism=\"$mech\",required=\"true\"} 1" \
    "$WORK/$mech-a0.prom" || fail "$mech: block_rq_complete not attached with $mech"
  scrape $PB "$WORK/$mech-b0.prom"

  # Long requests, queue depth 1: counts and latency sum.
  dev=$(basename "$SLOW")
  fio_run "slow-$mech" "$SLOW" --ioengine=psync --iodepth=1 --number_ios=1000 --size=64M
  scrape $PA "$WORK/$mech-a1.prom"
  scrape $PB "$WORK/$mech-b1.prom"
  for side in a b; do
    f0="$WORK/$mech-${side}0.prom" f1="$WORK/$mech-${side}1.prom"
    req=$(awk -v x="$(value "$f1" nvmeof_block_requests_total "$dev")" \
      -v y="$(value "$f0" nvmeof_block_requests_total "$dev")" 'BEGIN {print x - y}')
    cnt=$(awk -v x="$(value "$f1" nvmeof_block_latency_seconds_count "$dev")" \
      -v y="$(value "$f0" nvmeof_block_latency_seconds_count "$dev")" 'BEGIN {print x - y}')
    sum=$(awk -v x="$(value "$f1" nvmeof_block_latency_seconds_sum "$dev")" \
      -v y="$(value "$f0" nvmeof_block_latency_seconds_sum "$dev")" 'BEGIN {print x - y}')
    stages=$(awk -v q="$(value "$f1" nvmeof_block_stage_latency_seconds_sum "$dev" 'stage="queue"')" \
      -v d="$(value "$f1" nvmeof_block_stage_latency_seconds_sum "$dev" 'stage="device"')" \
      -v q0="$(value "$f0" nvmeof_block_stage_latency_seconds_sum "$dev" 'stage="queue"')" \
      -v d0="$(value "$f0" nvmeof_block_stage_latency_seconds_sum "$dev" 'stage="device"')" \
      'BEGIN {print q + d - q0 - d0}')
    echo "$mech/$side slow: fio ios=$IOS clat_sum=${CLAT_SUM}s; exporter requests=$req count=$cnt sum=${sum}s stages=${stages}s"
    within "$req" "$IOS" 0.01 || fail "$mech/$side: requests_total +$req, fio issued $IOS"
    within "$cnt" "$IOS" 0.01 || fail "$mech/$side: latency _count +$cnt, fio issued $IOS"
    within "$sum" "$CLAT_SUM" 0.10 || fail "$mech/$side: latency _sum +${sum}s, fio clat total ${CLAT_SUM}s"
    within "$stages" "$sum" 0.01 || fail "$mech/$side: queue + device ${stages}s != total ${sum}s"
  done
  pass "$mech: slow loop device, QD1: counts within 1%, latency sum within 10% of fio (two instances)"

  # Fast device, deep queue: every request counted and timed.
  dev=$(basename "$FAST")
  scrape $PA "$WORK/$mech-a2.prom"
  fio_run "fast-$mech" "$FAST" --ioengine=libaio --iodepth=32 --number_ios=20000 --size=256M
  scrape $PA "$WORK/$mech-a3.prom"
  req=$(awk -v x="$(value "$WORK/$mech-a3.prom" nvmeof_block_requests_total "$dev")" \
    -v y="$(value "$WORK/$mech-a2.prom" nvmeof_block_requests_total "$dev")" 'BEGIN {print x - y}')
  cnt=$(awk -v x="$(value "$WORK/$mech-a3.prom" nvmeof_block_latency_seconds_count "$dev")" \
    -v y="$(value "$WORK/$mech-a2.prom" nvmeof_block_latency_seconds_count "$dev")" 'BEGIN {print x - y}')
  echo "$mech fast: fio ios=$IOS; exporter requests=$req count=$cnt"
  within "$req" "$IOS" 0.01 || fail "$mech: QD32 requests_total +$req, fio issued $IOS"
  within "$cnt" "$IOS" 0.01 || fail "$mech: QD32 latency _count +$cnt, fio issued $IOS"
  grep -q '^nvmeof_exporter_bpf_lost_events_total{reason="inflight_evicted"} 0$' \
    "$WORK/$mech-a3.prom" || fail "$mech: in-flight table evicted entries at QD32"
  pass "$mech: fast loop device, QD32: counts within 1%"
  # Map ceilings: the per-CPU histogram map is 1024 x (key + value x possible CPUs).
  hist_bytes=$(sed -n 's/^nvmeof_exporter_bpf_map_bytes{part="block",map="block_hists"} //p' \
    "$WORK/$mech-a3.prom")
  ncpu=$(awk -F- '{print ($2 == "" ? 1 : $2 + 1)}' /sys/devices/system/cpu/possible)
  # key (dev, op: 8 B) + value (3 stages x (218 buckets + count + sum) + requests, 5,288 B) per CPU
  awk -v x="${hist_bytes:-0}" -v n="$ncpu" 'BEGIN {exit !(x == 1024 * (8 + 5288 * n))}' ||
    fail "$mech: nvmeof_exporter_bpf_map_bytes block_hists ${hist_bytes:-missing}, want 1024 x (8 + 5288 x $ncpu)"
  cpus=$ncpu
  pass "$mech: block_hists may take $hist_bytes bytes (possible CPUs $cpus)"

  promtool check metrics <"$WORK/$mech-a3.prom" >"$WORK/promtool.log" 2>&1 ||
    { cat "$WORK/promtool.log" >&2; fail "promtool check metrics"; }

  # Clean shutdown on SIGTERM, with the second instance still running and still counting.
  kill -TERM "${PIDS[-2]}"
  wait "${PIDS[-2]}" || fail "$mech: exporter a exited non-zero on SIGTERM"
  grep -q 'shutting down' "$WORK/a-$mech.log" || fail "$mech: no shutdown log line"
  scrape $PB "$WORK/$mech-b2.prom"
  kill -TERM "${PIDS[-1]}"
  wait "${PIDS[-1]}" || fail "$mech: exporter b exited non-zero on SIGTERM"
  PIDS=("${PIDS[@]:0:${#PIDS[@]}-2}")
  pass "$mech: both instances shut down cleanly on SIGTERM"
done
[ $mechanisms -gt 0 ] || fail "no attach mechanism works on this kernel"

# Config: 1-in-4 sampling keeps exact request counts; configured buckets; a device filter.
fast=$(basename "$FAST")
cat >"$WORK/bpf.yml" <<YML
bpf:
  sample_every: 4
  buckets: [0.00001, 0.0001, 0.001]
  block_devices:
    include: "$fast"
YML
start_exporter sampled "${NOCOLL[@]}" --collector.bpf --config.file="$WORK/bpf.yml"
scrape $PORT "$WORK/sampled0.prom"
fio_run sampled "$FAST" --ioengine=libaio --iodepth=32 --number_ios=40000 --size=256M
scrape $PORT "$WORK/sampled1.prom"
req=$(awk -v x="$(value "$WORK/sampled1.prom" nvmeof_block_requests_total "$fast")" \
  -v y="$(value "$WORK/sampled0.prom" nvmeof_block_requests_total "$fast")" 'BEGIN {print x - y}')
cnt=$(awk -v x="$(value "$WORK/sampled1.prom" nvmeof_block_latency_seconds_count "$fast")" \
  -v y="$(value "$WORK/sampled0.prom" nvmeof_block_latency_seconds_count "$fast")" 'BEGIN {print x - y}')
echo "sample_every=4: fio ios=$IOS; exporter requests=$req timed=$cnt"
within "$req" "$IOS" 0.01 || fail "sampled: requests_total +$req, fio issued $IOS"
within "$cnt" "$(awk -v n="$IOS" 'BEGIN {print n / 4}')" 0.05 || fail "sampled: timed $cnt, want ~$IOS/4"
grep -q '^nvmeof_exporter_bpf_sample_every 4$' "$WORK/sampled1.prom" || fail "no sample_every gauge"
buckets=$(grep -c "^nvmeof_block_latency_seconds_bucket{disk=\"$fast\",op=\"read\"," "$WORK/sampled1.prom")
[ "$buckets" = 4 ] || fail "want 3 configured buckets + +Inf, got $buckets"
grep -E '^nvmeof_block_requests_total\{' "$WORK/sampled1.prom" | grep -v "disk=\"$fast\"" &&
  fail "block_devices filter let other devices through"
pass "sampling 1 in 4 (exact counts), configured buckets, device filter"
