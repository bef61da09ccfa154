#!/usr/bin/env bash
# Serializer cost per sample, text (prometheus-cpp TextSerializer) vs protobuf (native / classic
# / both), each with and without gzip, in one run, on a synthetic host at issue 12's scale.
#   tests/bench/scrape_bench.sh [build dir]    HISTOGRAMS=450 COUNTERS=1000 RUNS=20
# Then the histograms alone (COUNTERS=0): ns per native histogram.
set -euo pipefail
BUILD=${1:-build}
[ -x "$BUILD/tests/scrape_bench" ] || cmake --build "$BUILD" --target scrape_bench -j2
"$BUILD/tests/scrape_bench" "${HISTOGRAMS:-450}" "${COUNTERS:-1000}" "${RUNS:-20}"
echo
"$BUILD/tests/scrape_bench" "${HISTOGRAMS:-450}" 0 "${RUNS:-20}"
