#!/usr/bin/env bash
# Installs what the tests need, builds, and runs every test: unit, end-to-end (with a real
# Prometheus), and the real-kernel VM suite when tests/vm exists. .ci/run calls exactly this.
#   SKIP_VM=1 tests/run-all.sh   # host tests only (the 60 s fuzz run included; SKIP_FUZZ=1 skips it)
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh --test
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j2 -LE vm
# libFuzzer on the RDMA netlink parser, bounded (SKIP_FUZZ=1 skips, FUZZ_SECONDS sets the time).
if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  tests/fuzz/run.sh "${FUZZ_SECONDS:-60}"
fi
if [ "${SKIP_VM:-0}" != 1 ] && [ -x tests/vm/run-suite.sh ]; then
  tests/vm/run-suite.sh --exporter build/nvmeof_exporter
fi
