#!/usr/bin/env bash
# Quick start: install dependencies, build, and run the exporter in the foreground on :10420.
# Extra arguments go to nvmeof_exporter (e.g. --log.level=debug).
#   deploy/quickstart.sh --build-only    # install and build, do not run (CI's newcomer check)
# It builds in build-run/, its own tree: tests/run-all.sh builds in build/ with the tests on, so
# the two README commands work in either order in one clone.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
# ccache, where installed (the test dependencies bring it), makes a rebuild in a fresh clone cheap.
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
fi
cmake -S . -B build-run -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVMEOF_BUILD_TESTS=OFF >/dev/null
cmake --build build-run -j"$(nproc)"
[ "${1:-}" = --build-only ] && exit 0
exec build-run/nvmeof_exporter "$@"
