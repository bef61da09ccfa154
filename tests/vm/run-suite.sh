#!/bin/bash
# Runs the VM scenarios on every kernel of the matrix, one VM boot per scenario, and prints a
# summary with timings. Exits non-zero if any scenario failed; run.sh prints a failing scenario's
# VM console log. Called by .ci/run after the host tests.
#
#   tests/vm/run-suite.sh [--exporter PATH] [--out DIR] [--kernels "6.1 6.12 5.10 7.2" | all]
#                         [--scenarios "rdma tcp ..."] [--full-kernels "6.1 6.12" | all]
#                         [--no-install]
#
# Kernels (--kernels, or NVMEOF_VM_KERNELS; default "6.1 6.12 5.10 7.2", what CI runs): the
# "full" ones (--full-kernels, NVMEOF_VM_FULL_KERNELS; default "6.1 6.12") run every scenario of
# scenarios.txt, the others (the matrix's edges, 5.10 and 7.2) the `smoke` scenario only (one
# boot: see README.md). `--kernels all`: the whole matrix, every scenario on all four kernels.
# --scenarios runs that list on every kernel.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
EXPORTER=${NVMEOF_EXPORTER:-$HERE/../../build/nvmeof_exporter}
OUT=/tmp/nvmeof-vm
ALL_KERNELS="6.1 6.12 5.10 7.2"
# On 5.10 (no module BTF) the smoke scenario checks the target's counts through the classic
# tracepoint hooks, and `record`, which needs nvmet's types, as a named skip that passes only
# if it says so (docs/operating.md "Compatibility").
KERNELS=${NVMEOF_VM_KERNELS:-6.1 6.12 5.10 7.2}
FULL_KERNELS=${NVMEOF_VM_FULL_KERNELS:-6.1 6.12}
FULL_SCENARIOS=$(grep -v '^#' "$HERE/scenarios.txt" | tr '\n' ' ')  # the one list
SCENARIOS=
INSTALL=1
FULL_SET=${NVMEOF_VM_FULL_KERNELS:+1}
while [ $# -gt 0 ]; do
  case $1 in
    --exporter) EXPORTER=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --kernels) KERNELS=$2; shift 2 ;;
    --full-kernels) FULL_KERNELS=$2; FULL_SET=1; shift 2 ;;
    --scenarios) SCENARIOS=$2; shift 2 ;;
    --no-install) INSTALL=0; shift ;;
    -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
if [ "$KERNELS" = all ]; then
  KERNELS=$ALL_KERNELS
  [ -n "$FULL_SET" ] || FULL_KERNELS=all
fi
[ "$FULL_KERNELS" = all ] && FULL_KERNELS=$KERNELS
scenarios_of() { # KERNEL -> its scenario list
  if [ -n "$SCENARIOS" ]; then echo "$SCENARIOS"
  elif [[ " $FULL_KERNELS " == *" $1 "* ]]; then echo "$FULL_SCENARIOS"
  else echo smoke; fi
}
if [ "$INSTALL" = 1 ]; then
  # shellcheck disable=SC2086
  "$HERE/install-deps.sh" $KERNELS || { echo "vm suite: installing dependencies failed" >&2; exit 1; }
fi

t0=$SECONDS
passed=0 failed=0 summary=()
for k in $KERNELS; do
  for s in $(scenarios_of "$k"); do
    ts=$SECONDS
    if "$HERE/run.sh" --kernel "$k" --scenario "$s" --exporter "$EXPORTER" --out "$OUT/$k/$s"; then
      passed=$((passed + 1)); r=PASS
    else
      failed=$((failed + 1)); r=FAIL
    fi
    retried=; [ -s "$OUT/$k/$s/boot-retries" ] && retried=" (boot retried: guest kernel crashed before /init)"
    skips=$(grep -c '^ok   SKIP' "$OUT/$k/$s/check.log" 2>/dev/null) || true
    [ "${skips:-0}" = 0 ] && skips= || skips=" ($skips checks skipped, each naming why: $OUT/$k/$s/check.log)"
    summary+=("$(printf '%-4s %-5s %-10s %4ss%s%s' "$r" "$k" "$s" $((SECONDS - ts)) "$retried" "$skips")")
  done
done
echo
echo "VM suite summary (results under $OUT):"
printf '  %s\n' "${summary[@]}"
echo "VM suite wall time: $((SECONDS - t0))s"
echo "vm: $passed passed, $failed failed"
[ "$failed" = 0 ]
