#!/usr/bin/env bash
# Overhead of the eBPF block-layer collector, against no tracing and libbpf-tools' biolatency.
#
#   tests/bench/bpf_block_bench.sh path/to/nvmeof_exporter   (root; fio, biolatency, bpftool)
#
# The same fio load (4 KiB random reads, O_DIRECT, libaio, queue depth 32, on a loop device
# over a file in tmpfs, so the "device" is nearly free and tracing cost shows) runs three ways,
# interleaved over ROUNDS rounds: no tracing, with nvmeof_exporter (bpf collector only, every
# request timed: queue, device and end-to-end stages), with biolatency (end-to-end only).
# Reported: median IOPS per way, its ratio to no tracing, and BPF run time per I/O from the
# kernel's BPF stats (run_time_ns / I/Os, summed over each tool's programs; sysctl
# kernel.bpf_stats_enabled is set for the run and restored after).
# Budget (exit 1 when missed, unless BENCH_NO_FAIL=1): our ns per I/O <= biolatency's, and our
# IOPS at most 2% below no tracing.
set -euo pipefail

EXPORTER=${1:?usage: $0 path/to/nvmeof_exporter}
# SAMPLE_EVERY=N times 1 in N requests (bpf.sample_every, default 8 as in the exporter).
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-10}
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 2; }
for tool in fio biolatency bpftool losetup jq; do
  command -v $tool >/dev/null || { echo "needs $tool" >&2; exit 2; }
done

WORK=$(mktemp -d /tmp/nvmeof-bench.XXXXXX)
LOOP=""
OLD_STATS=$(cat /proc/sys/kernel/bpf_stats_enabled)
TRACER=""
cleanup() {
  [ -n "$TRACER" ] && kill "$TRACER" 2>/dev/null && wait "$TRACER" 2>/dev/null
  [ -n "$LOOP" ] && losetup -d "$LOOP"
  umount -l "$WORK/tmpfs" 2>/dev/null || true
  echo "$OLD_STATS" >/proc/sys/kernel/bpf_stats_enabled
  rm -rf "$WORK"
}
trap cleanup EXIT

mkdir "$WORK/tmpfs"
mount -t tmpfs -o size=1100m tmpfs "$WORK/tmpfs"
dd if=/dev/zero of="$WORK/tmpfs/disk" bs=1M count=1024 status=none
LOOP=$(losetup -f --show "$WORK/tmpfs/disk")
echo 1 >/proc/sys/kernel/bpf_stats_enabled

# The BPF programs a tracer loaded: IDs that appeared after it started, with its names
# (bpftool here cannot show owning PIDs).
prog_ids() { bpftool -j prog show | jq -c --arg re "$1" '[.[] | select(.name | test($re)) | .id]'; }
new_ids() {  # new_ids BEFORE_JSON NAME_RE
  bpftool -j prog show | jq -c --argjson before "$1" --arg re "$2" \
    '[.[] | select((.name | test($re)) and (.id as $i | $before | index($i) | not)) | .id]'
}
bpf_ns() {  # bpf_ns IDS_JSON: run_time_ns summed
  bpftool -j prog show | jq --argjson ids "$1" \
    '[.[] | select(.id as $i | $ids | index($i)) | .run_time_ns // 0] | add // 0'
}
# reads: requests the loop device completed so far (the kernel's own count).
reads() { awk '{print $1}' "/sys/block/$(basename "$LOOP")/stat"; }

# run WAY: one fio run; sets RUN_IOPS and RUN_NS (BPF ns per I/O).
run() {
  local way=$1 re="" before ids="[]"
  case $way in
    exporter) re='^nvf_' ;;
    biolatency) re='^block_rq_' ;;
  esac
  if [ -n "$re" ]; then
    before=$(prog_ids "$re")
    if [ $way = exporter ]; then
      printf 'bpf:\n  sample_every: %s\n' "${SAMPLE_EVERY:-8}" >"$WORK/bench.yml"
      "$EXPORTER" --web.listen-address=127.0.0.1:0 --collector.bpf --config.file="$WORK/bench.yml" \
        $(for c in rdma pfc nvme_host nvmet tcp; do echo --no-collector.$c; done) \
        >"$WORK/exporter.log" 2>&1 &
    else
      biolatency 3600 >"$WORK/biolatency.log" 2>&1 &
    fi
    TRACER=$!
    for _ in $(seq 100); do
      ids=$(new_ids "$before" "$re")
      [ "$(echo "$ids" | jq length)" -ge 2 ] && break
      sleep 0.1
    done
    [ "$(echo "$ids" | jq length)" -ge 2 ] || { cat "$WORK"/*.log >&2; exit 1; }
  fi
  local ns0 ns1 r0 r1
  ns0=$(bpf_ns "$ids")
  r0=$(reads)
  fio --name=bench --filename="$LOOP" --direct=1 --rw=randread --bs=4k --ioengine=libaio \
    --iodepth=32 --time_based --runtime="$RUNTIME" --ramp_time=1 --norandommap \
    --output-format=json >"$WORK/fio.json"
  r1=$(reads)
  ns1=$(bpf_ns "$ids")
  if [ -n "$TRACER" ]; then
    kill -INT "$TRACER"
    wait "$TRACER" 2>/dev/null || true
    TRACER=""
  fi
  RUN_IOPS=$(jq '.jobs[0].read.iops | floor' "$WORK/fio.json")
  RUN_NS=$(awk -v d=$((ns1 - ns0)) -v n=$((r1 - r0)) 'BEGIN {printf "%.0f", (n > 0 ? d / n : 0)}')
}

declare -A IOPS NS
for r in $(seq "$ROUNDS"); do
  for way in none exporter biolatency; do
    run $way
    IOPS[$way]+="$RUN_IOPS "
    NS[$way]+="$RUN_NS "
    echo "round $r $way: $RUN_IOPS IOPS, $RUN_NS ns BPF per I/O"
  done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
base=$(echo "${IOPS[none]}" | median)
printf '\n%-12s %10s %10s %14s\n' way IOPS ratio "BPF ns/IO"
declare -A MED_IOPS MED_NS
for way in none exporter biolatency; do
  MED_IOPS[$way]=$(echo "${IOPS[$way]}" | median)
  MED_NS[$way]=$(echo "${NS[$way]}" | median)
  printf '%-12s %10s %10s %14s\n' $way "${MED_IOPS[$way]}" \
    "$(awk -v a="${MED_IOPS[$way]}" -v b="$base" 'BEGIN {printf "%.3f", a / b}')" \
    "$([ $way = none ] && echo - || echo "${MED_NS[$way]}")"
done
echo "(fio 4k randread QD32 libaio O_DIRECT on a tmpfs loop device; median of $ROUNDS x ${RUNTIME}s;" \
  "kernel $(uname -r), $(nproc) CPUs)"

ok=1
if [ "${MED_NS[exporter]}" -gt "${MED_NS[biolatency]}" ]; then
  echo "BUDGET MISSED: nvmeof_exporter ${MED_NS[exporter]} ns/IO > biolatency ${MED_NS[biolatency]} ns/IO"
  ok=0
fi
if awk -v a="${MED_IOPS[exporter]}" -v b="$base" 'BEGIN {exit !(a < 0.98 * b)}'; then
  echo "BUDGET MISSED: nvmeof_exporter IOPS more than 2% below no tracing"
  ok=0
fi
[ $ok = 1 ] && echo "budget met: ns/IO <= biolatency's, IOPS loss <= 2%"
[ $ok = 1 ] || [ "${BENCH_NO_FAIL:-0}" = 1 ]
