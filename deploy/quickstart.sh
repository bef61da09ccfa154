#!/usr/bin/env bash
# Quick start: install dependencies, build, and run the exporter in the foreground on :10420.
# Extra arguments go to nvmeof_exporter (e.g. --log.level=debug).
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVMEOF_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)"
exec build/nvmeof_exporter "$@"
