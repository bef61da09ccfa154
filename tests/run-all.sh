#!/usr/bin/env bash
# Installs what the tests need, builds, and runs every test: unit, end-to-end (with a real
# Prometheus), fuzzing, and the real-kernel VM suite when tests/vm exists. .ci/run calls this.
#   SKIP_VM=1 tests/run-all.sh   # host tests only (the 60 s fuzz run included; SKIP_FUZZ=1 skips it)
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh --test
# Its own tree, with the tests and -Werror on explicitly: a cache left by another build (e.g.
# deploy/quickstart.sh's, which turns the tests off) can never make this run no tests.
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVMEOF_BUILD_TESTS=ON \
  -DNVMEOF_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
log=$(mktemp)
ctest --test-dir build --output-on-failure --no-tests=error -j2 -LE vm | tee "$log"
# Every test that exists must have run: the unit tests the binary lists, plus the e2e scripts.
expected=$(( $(build/tests/unit_tests --gtest_list_tests | grep -c '^  ') +
             $(ls tests/e2e/test_*.sh | wc -l) ))
ran=$(sed -n 's/.*tests passed, [0-9]* tests failed out of \([0-9]*\)$/\1/p' "$log" | tail -n 1)
rm -f "$log"
if [ "${ran:-0}" -lt "$expected" ]; then
  echo "run-all: ctest ran ${ran:-0} tests, but $expected exist" >&2
  exit 1
fi
echo "run-all: ctest ran $ran of $expected tests"
# libFuzzer on every parser that reads the outside world, bounded (SKIP_FUZZ=1 skips,
# FUZZ_SECONDS sets the time per target).
if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  tests/fuzz/run.sh "${FUZZ_SECONDS:-60}"
fi
if [ "${SKIP_VM:-0}" != 1 ] && [ -x tests/vm/run-suite.sh ]; then
  tests/vm/run-suite.sh --exporter build/nvmeof_exporter
fi
