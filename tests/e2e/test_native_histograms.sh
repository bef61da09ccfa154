#!/usr/bin/env bash
# Native histograms end to end (root only; skipped elsewhere): fio reads a loop device while two
# Prometheus servers scrape the exporter (Debian 12's 2.42, then again two of 3.5 LTS: lib.sh's
# versions; a 3.5 that cannot be had is a visible skip, exit 77), one with
# --enable-feature=native-histograms (protobuf scrapes, native schema-3 buckets), one without
# (text, the 16 classic buckets). Checks:
#  - histogram_count(rate(native)) matches rate(_count) of the classic series (within 5%);
#  - histogram_quantile(0.99, native) lies within one schema-3 bucket (2^(1/8)) of the p99
#    computed from the exporter's fine buckets: a second exporter serves every fine bound of
#    1 us .. 105 ms as classic buckets (bpf.protobuf_histograms: classic), scraped by the same
#    Prometheus, both over every I/O of the run (after it ended; the two time the same I/Os);
#  - the server without the flag stores classic buckets (17 per series), the one with it none;
#  - the shipped rules and dashboards work on both: each server loads deploy/prometheus/*.rules.yml
#    and every dashboard panel query and every rule that reads a latency histogram (directly or
#    through a rule) returns data on it (dashboards_check.py eval --only), except the half of
#    the classic bucket rules on the flagged server, which must be empty there; the network
#    estimate agrees between the two (1%).
#    Data: LIVE block-layer histograms (this exporter, fio on the loop device), and the NVMe-oF
#    stage and command histograms of the real VM scrape in tests/fixtures/vm-stages served live
#    by synthetic_nvmeof.py --serve (native schema-3 buckets to the flagged server, text to the
#    other): Prometheus 2.42 cannot backfill native histograms, so this replay is the only way
#    NVMe-oF stage series reach it as native histograms here. The regression alerts compare with
#    a day and a week ago; in this copy of the rules their offsets are 10 s and 20 s and their
#    window 10 s (the week-long behaviour is promtool's: tests/nvmeof-latency-week.test.yml,
#    classic only, since promtool 2.42 has no native input series).
source "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root"
require fio losetup python3 curl
[ -e /dev/loop-control ] || skip "no loop devices"
"$EXPORTER" probe >"$WORK/probe.txt" 2>&1 || skip "BPF cannot attach here: $(grep -m1 '^bpf:' "$WORK/probe.txt")"

LOOP=""
FIO=""
cleanup_native() {
  local rc=$?
  [ -n "$FIO" ] && { kill "$FIO" 2>/dev/null; wait "$FIO" 2>/dev/null; } || true
  [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null || true
  umount -l "$WORK/tmpfs" 2>/dev/null || true
  set +e  # else errexit ends this trap at `(exit 1)`, before cleanup stops the servers
  (exit $rc)
  cleanup
}
trap cleanup_native EXIT

mkdir -p "$WORK/tmpfs"
mount -t tmpfs -o size=80m tmpfs "$WORK/tmpfs"
truncate -s 64M "$WORK/tmpfs/disk"
LOOP=$(losetup -f --show "$WORK/tmpfs/disk") || fail "losetup on tmpfs file"
DISK=$(basename "$LOOP")

NOCOLL=()
for c in rdma pfc nvme_host nvmet tcp; do NOCOLL+=(--no-collector.$c); done
printf 'bpf:\n  sample_every: 1\n  block_devices: {include: "^%s$"}\n' "$DISK" >"$WORK/native.yml"
start_exporter native "${NOCOLL[@]}" --collector.bpf --config.file="$WORK/native.yml"
P_EXP=$PORT
# The reference: every fine bound from 2^-20 s (0.95 us) to 2^-3.25 s (105 ms) as classic
# buckets (bpf.buckets snaps each to the identical fine bound).
python3 - "$WORK/fine.yml" "$DISK" <<'PY'
import sys
bounds = [2 ** (j / 8) for j in range(-160, -25)]
with open(sys.argv[1], "w") as f:
    f.write("bpf:\n  sample_every: 1\n  block_devices: {include: \"^%s$\"}\n" % sys.argv[2])
    f.write("  protobuf_histograms: classic\n")
    f.write("  buckets: [%s]\n" % ", ".join(repr(b) for b in bounds))
PY
start_exporter fine "${NOCOLL[@]}" --collector.bpf --config.file="$WORK/fine.yml"
P_FINE=$PORT
# The real VM scrape, replayed live (native to the flagged server, text to the other).
python3 "$E2E_DIR/synthetic_nvmeof.py" --serve \
  --vm-replay "$FIXTURES/vm-stages/metrics-6.12-fentry.prom.gz" >"$WORK/replay.port" 2>"$WORK/replay.log" &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$WORK/replay.port" ] && break; sleep 0.1; done
P_VM=$(cat "$WORK/replay.port")
[ -n "$P_VM" ] || fail "synthetic_nvmeof.py --serve did not start: $(cat "$WORK/replay.log")"

# The shipped rules, evaluated every second; the regression alerts' day and week shrunk to 10 s
# and 20 s over 10 s windows (see the top).
mkdir -p "$WORK/rules"
for f in "$E2E_DIR"/../../deploy/prometheus/*.rules.yml; do
  sed -E 's/^(\s+interval:).*/\1 1s/; s/offset 1d/offset 10s/g; s/offset 1w/offset 20s/g; s/\[10m\]/[10s]/g' \
    "$f" >"$WORK/rules/$(basename "$f")"
done

# Two Prometheus servers: native (flag on) and classic (flag off).
prom() {  # prom NAME [flags]: sets PROM_PORT; the native one also scrapes the fine exporter
  local name=$1; shift
  prom_config "$WORK/$name.yml" 1s nvmeof "127.0.0.1:$P_EXP"
  # nvmeof-vm: a Python server: leave it time on a loaded machine.
  prom_job "$WORK/$name.yml" nvmeof-vm "127.0.0.1:$P_VM" "scrape_interval: 2s" "scrape_timeout: 2s"
  [ "$name" = native ] && prom_job "$WORK/$name.yml" fine "127.0.0.1:$P_FINE"
  prom_rules "$WORK/$name.yml" "$WORK/rules/*.rules.yml"
  start_prometheus "$name" "$@"
}
native_checks() {
T_VM=$(date +%s)  # the servers' first scrape of the replay
prom native $(prom_native_flags)
PN=$PROM_PORT
prom classic
PC=$PROM_PORT

query() {  # query PORT EXPR [TIME]: the values of an instant query, one per line
  curl -fsS --get "http://127.0.0.1:$1/api/v1/query" --data-urlencode "query=$2" \
    ${3:+--data-urlencode "time=$3"} |
    python3 -c 'import json,sys; d=json.load(sys.stdin)
for r in d["data"]["result"]: print(r["value"][1])'
}
for p in $PN $PC; do
  for _ in $(seq 60); do
    [ "$(query $p 'count(up{job=~"nvmeof|nvmeof-vm"} == 1)' 2>/dev/null)" = 2 ] && break
    sleep 1
  done
  [ "$(query $p 'count(up{job=~"nvmeof|nvmeof-vm"} == 1)')" = 2 ] ||
    fail "Prometheus on :$p never scraped the exporter and the VM replay"
done

# Steady load, so rates and quantiles over any 10 s window agree.
fio --name=native --filename="$LOOP" --readonly --direct=1 --rw=randread --bs=4k \
  --ioengine=psync --rate_iops=3000 --time_based --runtime=40 >"$WORK/fio.log" 2>&1 &
FIO=$!
PIDS+=($FIO)
sleep 25
T=$(python3 -c 'import time; print(time.time() - 2)')  # one instant for every query
SEL="disk=\"$DISK\",op=\"read\""
NATIVE_RATE=$(query $PN "histogram_count(rate(nvmeof_block_latency_seconds{job=\"nvmeof\",$SEL}[20s]))" $T)
CLASSIC_RATE=$(query $PC "rate(nvmeof_block_latency_seconds_count{$SEL}[20s])" $T)
NATIVE_SUM=$(query $PN "histogram_sum(rate(nvmeof_block_latency_seconds{job=\"nvmeof\",$SEL}[20s]))" $T)
CLASSIC_SUM=$(query $PC "rate(nvmeof_block_latency_seconds_sum{$SEL}[20s])" $T)
echo "native count rate $NATIVE_RATE/s, classic $CLASSIC_RATE/s; native sum rate $NATIVE_SUM, classic $CLASSIC_SUM"
[ -n "$NATIVE_RATE" ] && [ -n "$CLASSIC_RATE" ] || fail "no rate: native '$NATIVE_RATE' classic '$CLASSIC_RATE'"
awk -v a="$NATIVE_RATE" -v b="$CLASSIC_RATE" 'BEGIN { exit !(b > 100 && (a / b - 1) ^ 2 <= 0.05 ^ 2) }' ||
  fail "histogram_count(rate(native)) $NATIVE_RATE != rate(_count) $CLASSIC_RATE (5%)"
pass "histogram_count(rate(native)) = $NATIVE_RATE/s, rate(_count) = $CLASSIC_RATE/s"


# Classic histograms without the flag; none stored as classic with it (bpf.protobuf_histograms: native).
N_CLASSIC=$(query $PC "count(nvmeof_block_latency_seconds_bucket{$SEL})")
[ "$N_CLASSIC" = 17 ] || fail "Prometheus without the flag: expected 17 classic buckets, got '$N_CLASSIC'"
pass "Prometheus without native histograms stores 16 classic buckets + +Inf"
N_NATIVE_BUCKETS=$(query $PN "count(nvmeof_block_latency_seconds_bucket{job=\"nvmeof\",$SEL})")
[ -z "$N_NATIVE_BUCKETS" ] || fail "native scrape also stored classic buckets: $N_NATIVE_BUCKETS"
pass "Prometheus with native histograms stores one native series, no classic buckets"

# --- the shipped rules and dashboards on both servers. The replay has run 30 s+ by now (the
# alerts' 20 s "week" offset plus its 10 s window).
while [ $(($(date +%s) - T_VM)) -lt 32 ]; do sleep 1; done
T2=$(python3 -c 'import time; print(time.time() - 1)')
# Every expression that reads a latency histogram, directly or through the recording rules
# (IOPS, topology and fabric panels read no histogram: test_dashboards_prometheus.sh).
ONLY='latency_seconds|network_estimate|target_residence|network_and_target'
# The classic bucket rules must be empty on the flagged server (nothing else is: sums, counts
# and the network estimate read either kind).
CLASSIC_RULES=(instance:nvmeof_command_latency_seconds_bucket:rate5m instance:nvmeof_stage_latency_seconds_bucket:rate5m)
# The drive-time join is empty on both: the replayed VM scrape has no target namespace info
# (device_path) nor the backing disk's block stages (test_dashboards_prometheus.sh has them).
NO_DRIVE=(--expect-empty nqn:nvmeof_target_drive_seconds:mean5m
  --expect-empty pod:nvmeof_command_latency_seconds:p99_5m)  # no kube-state-metrics here
# job "fine" (classic buckets on the flagged server) is left out, so that there only native
# series can answer.
python3 "$E2E_DIR/dashboards_check.py" eval --prom "http://127.0.0.1:$PN" --time "$T2" \
  --only "$ONLY" --var 'job=nvmeof|nvmeof-vm' ${CLASSIC_RULES[@]/#/--expect-empty } "${NO_DRIVE[@]}" \
  "$E2E_DIR/../../dashboards" >"$WORK/eval-native.log" 2>&1 ||
  fail "native histograms: dashboards/rules: $(grep FAIL "$WORK/eval-native.log" | head -5)"
grep '^ok: rule' "$WORK/eval-native.log"
pass "native histograms (flag on): $(tail -n 1 "$WORK/eval-native.log" | cut -d';' -f1)"
python3 "$E2E_DIR/dashboards_check.py" eval --prom "http://127.0.0.1:$PC" --time "$T2" \
  --only "$ONLY" "${NO_DRIVE[@]}" \
  "$E2E_DIR/../../dashboards" >"$WORK/eval-classic.log" 2>&1 ||
  fail "classic histograms: dashboards/rules: $(grep FAIL "$WORK/eval-classic.log" | head -5)"
pass "classic histograms (flag off): $(tail -n 1 "$WORK/eval-classic.log" | cut -d';' -f1)"
# The network estimate (host "network and target" minus target residence, joined on the
# controller's NQN) from the same replayed VM data agrees between native and classic storage.
for t in rdma tcp; do
  E="instance_nqn:nvmeof_network_estimate_seconds:mean5m{job=\"nvmeof-vm\",nqn=\"nqn.2024-01.io.nvmeof-exporter:vm-stages-$t\",op=\"read\"}"
  a=$(query $PN "$E" "$T2")
  b=$(query $PC "$E" "$T2")
  python3 -c "import sys; a,b=float('${a:-nan}'),float('${b:-nan}'); print('network estimate $t: native %.1f us, classic %.1f us' % (a*1e6, b*1e6)); sys.exit(0 if a > 0 and b > 0 and abs(a/b-1) < 0.01 else 1)" ||
    fail "network estimate ($t): native '$a', classic '$b' (want both > 0, within 1%)"
done
pass "network estimate from native and classic storage within 1%"

# The p99 of the same commands. Once fio has ended, both exporters' histograms hold every I/O of
# the run (both time every command of the disk), so they are compared whole: over a rate window
# the two jobs' scrapes fall up to 1 s apart, and a load spike in that second (CI runs other
# tests beside this one) moved one window's p99 by 1.9 buckets.
wait "$FIO" || fail "fio: $(tail -n 3 "$WORK/fio.log")"
FIO=""
sleep 3  # a scrape of each exporter after the last I/O
T3=$(python3 -c 'import time; print(time.time())')
N_NATIVE=$(query $PN "histogram_count(nvmeof_block_latency_seconds{job=\"nvmeof\",$SEL})" $T3)
N_FINE=$(query $PN "nvmeof_block_latency_seconds_count{job=\"fine\",$SEL}" $T3)
awk -v a="$N_NATIVE" -v b="$N_FINE" 'BEGIN { exit !(b > 10000 && (a - b) ^ 2 <= (0.001 * b) ^ 2) }' ||
  fail "the two exporters timed different I/Os: native '$N_NATIVE', fine '$N_FINE' (0.1%)"
NATIVE_P99=$(query $PN "histogram_quantile(0.99, nvmeof_block_latency_seconds{job=\"nvmeof\",$SEL})" $T3)
FINE_P99=$(query $PN "histogram_quantile(0.99, nvmeof_block_latency_seconds_bucket{job=\"fine\",$SEL})" $T3)
echo "p99 of all $N_FINE I/Os: native $NATIVE_P99 s, fine buckets $FINE_P99 s"
[ -n "$NATIVE_P99" ] && [ -n "$FINE_P99" ] || fail "no p99: native '$NATIVE_P99' fine '$FINE_P99'"
python3 -c "import math,sys; a,b=float(sys.argv[1]),float(sys.argv[2]); d=abs(8*math.log2(a/b)); print('p99 distance: %.2f schema-3 buckets' % d); sys.exit(0 if d <= 1 else 1)" \
  "$NATIVE_P99" "$FINE_P99" || fail "native p99 $NATIVE_P99 more than one schema-3 bucket from $FINE_P99"
pass "native p99 within one schema-3 bucket of the fine-bucket p99"
}

# On each Prometheus version (lib.sh), one after the other: 2.42, then 3.5 LTS (3.5's defaults:
# protobuf first in scrape_protocols with the native-histograms flag, text without it).
for v in $(prom_versions); do
  use_prometheus "$v" || continue
  native_checks
  stop_prometheus
  pass "Prometheus $v: native and classic histograms, rules and dashboards"
done
prom_done
