#!/usr/bin/env bash
# Native histograms end to end (root only; skipped elsewhere): fio reads a loop device while two
# of Debian's Prometheus 2.42 servers scrape the exporter, one with
# --enable-feature=native-histograms (protobuf scrapes, native schema-3 buckets), one without
# (text, the 16 classic buckets). Checks:
#  - histogram_count(rate(native)) matches rate(_count) of the classic series (within 5%);
#  - histogram_quantile(0.99, native) lies within one schema-3 bucket (2^(1/8)) of the p99
#    computed from the exporter's fine buckets: a second exporter serves every fine bound of
#    1 us .. 105 ms as classic buckets (bpf.protobuf_histograms: classic), scraped by the same
#    Prometheus, both quantiles evaluated at the same instant over the same range;
#  - the server without the flag stores classic buckets (17 per series), the one with it none.
source "$(dirname "$0")/lib.sh"

skip() { echo "skip: $*"; exit 77; }  # ctest: SKIP_RETURN_CODE 77
[ "$(id -u)" = 0 ] || skip "needs root"
for tool in fio losetup python3 curl prometheus; do
  command -v $tool >/dev/null || skip "$tool not installed"
done
[ -e /dev/loop-control ] || skip "no loop devices"
"$EXPORTER" probe >"$WORK/probe.txt" 2>&1 || skip "BPF cannot attach here: $(grep -m1 '^bpf:' "$WORK/probe.txt")"

LOOP=""
FIO=""
cleanup_native() {
  local rc=$?
  [ -n "$FIO" ] && { kill "$FIO" 2>/dev/null; wait "$FIO" 2>/dev/null; } || true
  [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null || true
  umount -l "$WORK/tmpfs" 2>/dev/null || true
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

# Two Prometheus servers: native (flag on) and classic (flag off).
prom() {  # prom NAME [flags]: sets PROM_PORT; the native one also scrapes the fine exporter
  local name=$1; shift
  PROM_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  cat >"$WORK/$name.yml" <<YAML
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: nvmeof
    static_configs: [{targets: ["127.0.0.1:$P_EXP"]}]
YAML
  [ "$name" = native ] && printf '  - job_name: fine\n    static_configs: [{targets: ["127.0.0.1:%s"]}]\n' \
    "$P_FINE" >>"$WORK/$name.yml"
  prometheus --config.file="$WORK/$name.yml" --storage.tsdb.path="$WORK/tsdb-$name" \
    --web.listen-address="127.0.0.1:$PROM_PORT" "$@" >"$WORK/prometheus-$name.log" 2>&1 &
  PIDS+=($!)
}
prom native --enable-feature=native-histograms
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
    [ "$(query $p 'up{job="nvmeof"}' 2>/dev/null)" = 1 ] && break
    sleep 1
  done
  [ "$(query $p 'up{job="nvmeof"}')" = 1 ] || fail "Prometheus on :$p never scraped the exporter"
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

NATIVE_P99=$(query $PN "histogram_quantile(0.99, rate(nvmeof_block_latency_seconds{job=\"nvmeof\",$SEL}[20s]))" $T)
FINE_P99=$(query $PN "histogram_quantile(0.99, rate(nvmeof_block_latency_seconds_bucket{job=\"fine\",$SEL}[20s]))" $T)
echo "p99: native $NATIVE_P99 s, fine buckets $FINE_P99 s"
[ -n "$NATIVE_P99" ] && [ -n "$FINE_P99" ] || fail "no p99: native '$NATIVE_P99' fine '$FINE_P99'"
python3 -c "import math,sys; a,b=float(sys.argv[1]),float(sys.argv[2]); d=abs(8*math.log2(a/b)); print('p99 distance: %.2f schema-3 buckets' % d); sys.exit(0 if d <= 1 else 1)" \
  "$NATIVE_P99" "$FINE_P99" || fail "native p99 $NATIVE_P99 more than one schema-3 bucket from $FINE_P99"
pass "native p99 within one schema-3 bucket of the fine-bucket p99"

# Classic histograms without the flag; none stored as classic with it (bpf.protobuf_histograms: native).
N_CLASSIC=$(query $PC "count(nvmeof_block_latency_seconds_bucket{$SEL})")
[ "$N_CLASSIC" = 17 ] || fail "Prometheus without the flag: expected 17 classic buckets, got '$N_CLASSIC'"
pass "Prometheus without native histograms stores 16 classic buckets + +Inf"
N_NATIVE_BUCKETS=$(query $PN "count(nvmeof_block_latency_seconds_bucket{job=\"nvmeof\",$SEL})")
[ -z "$N_NATIVE_BUCKETS" ] || fail "native scrape also stored classic buckets: $N_NATIVE_BUCKETS"
pass "Prometheus with native histograms stores one native series, no classic buckets"
