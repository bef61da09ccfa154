#!/usr/bin/env bash
# Installs what the tests need, builds, and runs every test: unit, end-to-end (with a real
# Prometheus), fuzzing, and the real-kernel VM suite when tests/vm exists. .ci/run calls this.
#   SKIP_VM=1 tests/run-all.sh   # host tests only (fuzzing included; SKIP_FUZZ=1 skips it;
#                                # SANITIZE=0 skips the ASan+UBSan and TSan runs, ~11 min here;
#                                # SKIP_SOAK=1 skips the 5-minute soak)
#   tests/run-all.sh --kernels all   # the VM suite on every kernel (5.10, 6.1, 6.12, 7.2), every
#                                # scenario (default: 6.1 and 6.12 in full, 5.10 and 7.2 smoke)
#   tests/run-all.sh --quick     # development: build, unit tests and the e2e tests not labelled
#                                # slow (a few minutes; no sanitizers, fuzzing, soak, VM suite,
#                                # icount gate, nor the six e2e scripts over 45 s each)
set -euo pipefail
cd "$(dirname "$0")/.."
QUICK=0
if [ "${1:-}" = --quick ]; then
  QUICK=1
  export SANITIZE=0 SKIP_FUZZ=1 SKIP_SOAK=1 SKIP_VM=1 SKIP_ICOUNT=1
  quick_t0=$(date +%s)
  trap 'echo "run-all --quick: $(( $(date +%s) - quick_t0 ))s"' EXIT
elif [ "${1:-}" = --kernels ] && [ $# = 2 ]; then
  export NVMEOF_VM_KERNELS=$2  # tests/vm/run-suite.sh: "all" is every scenario on every kernel
  [ "$2" != all ] || export NVMEOF_VM_KERNELS="5.10 6.1 6.12 7.2" NVMEOF_VM_FULL_KERNELS="5.10 6.1 6.12 7.2"
elif [ $# -gt 0 ]; then
  echo "usage: tests/run-all.sh [--quick | --kernels all|\"K...\"]" >&2
  exit 2
fi
deploy/install-deps.sh --test
# The e2e tests' second real server, Prometheus 3.5 LTS (Debian unstable's .debs, fetched once
# into /var/cache/nvmeof-exporter-prometheus; never from the machine's apt sources). Fetched
# here, ahead of the parallel tests; where it cannot be had, each test's 3.5 half is a visible
# skip (exit 77), never a pass.
tests/e2e/fetch_prometheus.sh 3.5 >/dev/null ||
  echo "run-all: Prometheus 3.5 unavailable: the e2e tests skip their 3.5 half (exit 77)" >&2
# Every build below goes through ccache (installed with the test dependencies): CI's clean
# clones then reuse the object files of earlier runs on the same machine. The base dir and
# no-hash-dir settings let a clone in another directory hit the same cache entries.
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
fi
# ctest in TREE, which must run every test that exists: at least the unit tests the binary lists
# plus the e2e scripts (ctest also has a few checks of its own, e.g. metric_model).
run_ctest() {
  local tree=$1 log expected ran
  if [ "$QUICK" = 1 ]; then  # not every test: no count to check
    echo "run-all --quick: leaves out (label slow): $(ctest --test-dir "$tree" -N -L slow |
      sed -n 's/.*Test *#[0-9]*: //p' | tr '\n' ' ')"
    ctest --test-dir "$tree" --output-on-failure --no-tests=error -j2 -LE 'vm|slow'
    return
  fi
  log=$(mktemp)
  ctest --test-dir "$tree" --output-on-failure --no-tests=error -j2 -LE vm | tee "$log"
  expected=$(( $("$tree"/tests/unit_tests --gtest_list_tests | grep -c '^  ') +
               $(ls tests/e2e/test_*.sh | wc -l) ))
  ran=$(sed -n 's/.*tests passed, [0-9]* tests failed out of \([0-9]*\)$/\1/p' "$log" | tail -n 1)
  rm -f "$log"
  if [ "${ran:-0}" -lt "$expected" ]; then
    echo "run-all: ctest in $tree ran ${ran:-0} tests, but $expected exist" >&2
    exit 1
  fi
  echo "run-all: ctest in $tree ran $ran tests ($expected unit and e2e tests exist)"
}
# Its own tree, with the tests and -Werror on explicitly: a cache left by another build (e.g.
# deploy/quickstart.sh's, which turns the tests off) can never make this run no tests. With the
# sanitizers on, the unit and e2e suites run under ASan+UBSan below instead of twice (CI time),
# and this tree builds the exporter that the soak and the VM suite run (with -Werror at -O2).
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVMEOF_BUILD_TESTS=ON \
  -DNVMEOF_WERROR=ON >/dev/null
if [ "${SANITIZE:-1}" = 1 ]; then
  cmake --build build --target nvmeof_exporter -j"$(nproc)"
else
  cmake --build build -j"$(nproc)"
  run_ctest build
fi
# Sanitizers (SANITIZE=0 skips them; measured here at -O1 -g1: ASan build 410 s, tests 134 s,
# TSan build 134 s, tests 3 s): the unit and e2e suites under ASan+UBSan, and the threaded tests
# (scraper, web server, the BPF module watcher) under TSan, each in its own tree. Every report
# fails the run (halt_on_error).
if [ "${SANITIZE:-1}" = 1 ]; then
  t0=$(date +%s)
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVMEOF_BUILD_TESTS=ON \
    -DNVMEOF_WERROR=ON -DNVMEOF_SANITIZE=ON >/dev/null
  cmake --build build-asan -j"$(nproc)" >/dev/null
  t1=$(date +%s)
  # detect_leaks: LeakSanitizer needs ptrace, which some containers forbid; LSAN=0 turns it off.
  ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=${LSAN:-1}" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    run_ctest build-asan
  t2=$(date +%s)
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVMEOF_BUILD_TESTS=ON \
    -DNVMEOF_WERROR=ON -DNVMEOF_TSAN=ON >/dev/null
  cmake --build build-tsan --target unit_tests -j"$(nproc)" >/dev/null
  t3=$(date +%s)
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" build-tsan/tests/unit_tests \
    --gtest_filter="${TSAN_TESTS:-Scraper*:WebServer*:BpfKernel*:BpfNvmeof*}" --gtest_brief=1
  t4=$(date +%s)
  echo "run-all: sanitizers: asan build $((t1 - t0))s, asan tests $((t2 - t1))s," \
    "tsan build $((t3 - t2))s, tsan tests $((t4 - t3))s"
fi
# The eBPF cost gate (tests/bench/README.md): instructions per NVMe/TCP command under QEMU's
# icount on 6.12, deterministic, the default sampling against biolatency in the same VM, and no
# tool twice (reproducible within 1%). SKIP_ICOUNT=1 skips it. It runs beside the fuzzers: both
# are single-threaded, the fuzzers are bounded by time and icount's figures by instructions, so
# neither result depends on the other's load (CI time: about 6 min saved).
gate_pid="" gate_log=$(mktemp)
if [ "${SKIP_VM:-0}" != 1 ] && [ "${SKIP_ICOUNT:-0}" != 1 ] && [ -x tests/vm/run-suite.sh ]; then
  tests/vm/install-deps.sh 6.12 >/dev/null
  ( t0=$(date +%s); rc=0
    ICOUNT_GATE=1 tests/bench/icount_bench.sh build/nvmeof_exporter 6.12 || rc=$?
    echo "run-all: icount gate rc=$rc, $(( $(date +%s) - t0 ))s"; exit "$rc" ) >"$gate_log" 2>&1 &
  gate_pid=$!
fi
# libFuzzer on every parser that reads the outside world, bounded (SKIP_FUZZ=1 skips,
# FUZZ_SECONDS sets the time per target).
if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  tests/fuzz/run.sh "${FUZZ_SECONDS:-15}"
fi
gate_rc=0
if [ -n "$gate_pid" ]; then
  wait "$gate_pid" || gate_rc=$?
  cat "$gate_log"
fi
rm -f "$gate_log"
# The soak (tests/soak/README.md; SKIP_SOAK=1 skips, SOAK_SECONDS sets its length) runs beside
# the VM suite: it asserts resource bounds, not timings, and touches nothing the VMs use.
soak_pid=
if [ "${SKIP_SOAK:-0}" != 1 ]; then
  soak_log=$(mktemp)
  tests/soak/soak.sh build/nvmeof_exporter "${SOAK_SECONDS:-300}" >"$soak_log" 2>&1 &
  soak_pid=$!
fi
vm_rc=0
if [ "${SKIP_VM:-0}" != 1 ] && [ -x tests/vm/run-suite.sh ]; then
  tests/vm/run-suite.sh --exporter build/nvmeof_exporter || vm_rc=$?
fi
if [ -n "$soak_pid" ]; then
  soak_rc=0
  wait "$soak_pid" || soak_rc=$?
  cat "$soak_log"
  rm -f "$soak_log"
  case $soak_rc in
    0) echo "run-all: soak passed" ;;
    77) echo "run-all: soak SKIPPED (reason above)" ;;
    *) echo "run-all: soak FAILED ($soak_rc)" >&2; exit 1 ;;
  esac
fi
# The last line names what failed: CI keeps only the end of a long printout.
if [ "$gate_rc" != 0 ]; then
  echo "run-all: FAILED: the icount gate (rc=$gate_rc; its log is printed above, after the fuzzers)" >&2
  exit 1
fi
[ "$vm_rc" = 0 ] || echo "run-all: FAILED: the VM suite (rc=$vm_rc; its summary above)" >&2
exit "$vm_rc"
