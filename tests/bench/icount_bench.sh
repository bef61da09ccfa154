#!/bin/bash
# Instructions per I/O of the eBPF programs, deterministic: boots Debian's kernel under QEMU
# with `-icount shift=0,sleep=off` (tests/vm, scenario `icount`), where the guest clock advances
# 1 ns per guest instruction, so fio's mean latency (lat_ns) inside the guest is instructions per
# I/O whatever the host's load. fio psync QD1 4 KiB on null_blk (irqmode=0) directly, and over
# NVMe/TCP and NVMe/RDMA (rxe) with host and target in the VM; modes: no tool (twice), the
# exporter's bpf collector at its default and at sample_every 1, 8 and 64, `record -s 8
# --role=both`, biolatency.
# A tool's cost is its mean latency minus no tool's, in instructions per I/O.
#
#   tests/bench/icount_bench.sh EXPORTER [KERNEL...]       (default kernels: 6.12 6.1)
#   ICOUNT_GATE=1 tests/bench/icount_bench.sh EXPORTER 6.12   the CI gate (NVMe/TCP randread)
#
# Knobs: ICOUNT_IOS (I/Os per run, 4000; the gate 2000), ICOUNT_PATHS, ICOUNT_RWS, ICOUNT_MODES,
# ICOUNT_BOOTS (boots per kernel, 1: with more, the budget applies to the mean cost over them,
# which NVMe/RDMA over rxe needs), BENCH_OUT (/tmp/nvmeof-vm/icount; boot N > 1 in KERNEL.bootN),
# BENCH_NO_FAIL=1 (report, never fail). Exit status 1 when `none` is not reproducible (the two
# runs differ by more than 1%, 1.5% on RDMA) or when the exporter's default costs more than
# BUDGET_RATIO (1.0; the gate 0.65) times biolatency on NVMe-oF; 2 when the VM did not produce
# results.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
EXPORTER=${1:?usage: $0 EXPORTER [KERNEL...]}
shift
KERNELS=${*:-6.12 6.1}
OUT=${BENCH_OUT:-/tmp/nvmeof-vm/icount}
if [ "${ICOUNT_GATE:-0}" = 1 ]; then
  export ICOUNT_IOS=${ICOUNT_IOS:-2000} ICOUNT_PATHS=${ICOUNT_PATHS:-tcp}
  export ICOUNT_RWS=${ICOUNT_RWS:-randread} ICOUNT_MODES=${ICOUNT_MODES:-none default biolatency none2}
  # The default tier's budget is 0.55x biolatency over 3 boots (issue 45), but biolatency's own
  # cost moves by 10-15% between boots (tests/bench/README.md), so one short run cannot tell
  # 0.55x from 0.6x: the gate fails past 0.65x, and on `none` not reproducing within 1%. Three
  # boots, their mean, as the budget is stated: about 1 boot in 6 whose first exporter is the
  # default costs about 500 more (0.66x-0.76x; Rounds 12 and 15, unexplained), which the mean of
  # two took for a fail once the recorder's +0.07x came in.
  BUDGET_RATIO=${BUDGET_RATIO:-0.65}
  export ICOUNT_BOOTS=${ICOUNT_BOOTS:-3}
fi
export ICOUNT_IOS=${ICOUNT_IOS:-4000}
# The logs go beside OUT, whose parent a clean machine may not have yet (the CI gate runs before
# the VM suite makes /tmp/nvmeof-vm).
mkdir -p "$OUT"
BOOTS=${ICOUNT_BOOTS:-1}
rc=0
for k in $KERNELS; do
  t0=$SECONDS
  # Debian's 6.1 and 5.10 stop bringing up a second vCPU under -icount (tests/bench/README.md;
  # 5.10 at "x86: Booting SMP configuration" with any -cpu model): one.
  cpus=${VM_CPUS:-2}
  case $k in 6.1 | 6.1.* | 5.10 | 5.10.*) cpus=1 ;; esac
  guests=()
  for b in $(seq 1 "$BOOTS"); do
    run=$k
    [ "$b" = 1 ] || run=$k.boot$b
    ICOUNT=1 VM_CPUS=$cpus "$HERE/../vm/run.sh" --kernel "$k" --scenario icount --exporter "$EXPORTER" \
      --out "$OUT/$run" --timeout "${VM_TIMEOUT:-3000}" >"$OUT-$run.log" 2>&1 || true
    tail -n 1 "$OUT-$run.log"
    if [ ! -s "$OUT/$run/guest/icount.txt" ]; then
      echo "icount bench: no results from the $run VM (log: $OUT-$run.log)" >&2
      tail -n 40 "$OUT-$run.log" >&2
      exit 2
    fi
    # Runs measured again because one I/O hit a guest timer (icount.sh), if any.
    cat "$OUT/$run/guest/icount-stalls.txt" 2>/dev/null || true
    # One boot decides alone; of several, their mean (below).
    python3 "$HERE/icount_report.py" "$OUT/$run/guest" "${BUDGET_RATIO:-1.0}" || [ "$BOOTS" -gt 1 ] || rc=1
    # A mode that did not run (a tool that did not start) leaves its column empty: a failure,
    # never a pass on fewer comparisons.
    if [ "$(cat "$OUT/$run/guest/exit-code" 2>/dev/null)" != 0 ]; then
      echo "icount bench: the $run guest reported failures:" >&2
      grep '^FAIL' "$OUT/$run/guest/guest.log" >&2 || true
      rc=1
    fi
    guests+=("$OUT/$run/guest")
  done
  if [ "$BOOTS" -gt 1 ]; then
    python3 "$HERE/icount_report.py" --boots "${BUDGET_RATIO:-1.0}" "${guests[@]}" || rc=1
  fi
  echo "icount bench on $k: $((SECONDS - t0)) s"
done
[ "${BENCH_NO_FAIL:-0}" = 1 ] && exit 0
exit $rc
