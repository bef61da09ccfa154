#!/bin/bash
# Builds every libFuzzer target of tests/fuzz with clang (ASan + UBSan, every layer library
# instrumented) and runs each for a bounded time, seeded from tests/fixtures (seeds.py) plus the
# inputs that once crashed it (tests/fuzz/regressions/<target>/). Exit 0 when no target found a
# crash, leak, timeout or sanitizer report; otherwise the inputs are left in $OUT/<target>/artifacts.
#   tests/fuzz/run.sh [SECONDS] [TARGET...]   SECONDS per target (default 20; FUZZ_SECONDS too)
#   FUZZ_BUILD=build-fuzz OUT=/tmp/nvmeof-fuzz FUZZ_JOBS=2
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_BUDGET=${1:-${FUZZ_SECONDS:-20}}
shift || true
BUILD=${FUZZ_BUILD:-build-fuzz}
OUT=${OUT:-/tmp/nvmeof-fuzz}
TARGETS=("$@")
if [ ${#TARGETS[@]} = 0 ]; then
  # Every target tests/fuzz/CMakeLists.txt lists ("name:library").
  mapfile -t TARGETS < <(sed -n 's/^ *\([a-z_]*_fuzz\):.*/\1/p' tests/fuzz/CMakeLists.txt)
fi
start=$(date +%s)
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVMEOF_FUZZ=ON \
  -DNVMEOF_BPF=OFF -DNVMEOF_BUILD_TESTS=OFF >/dev/null
cmake --build "$BUILD" --target "${TARGETS[@]}" -j"${FUZZ_JOBS:-2}" >/dev/null
echo "fuzz: built ${#TARGETS[@]} targets in $(( $(date +%s) - start ))s"

rm -rf "$OUT"
mkdir -p "$OUT"
python3 tests/fuzz/seeds.py "$OUT/seeds"
failed=()
for t in "${TARGETS[@]}"; do
  dir="$OUT/$t"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp "$OUT/seeds/$t"/* "$dir/corpus/" 2>/dev/null || true
  # Inputs that once crashed it stay in the corpus.
  cp tests/fuzz/regressions/"$t"/* "$dir/corpus/" 2>/dev/null || true
  set +e
  "$BUILD/tests/fuzz/$t" -max_total_time="$SECONDS_BUDGET" -max_len=16384 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "$dir/corpus" \
    >"$dir/fuzz.log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz.log")
  cov=$(grep -oE 'cov: [0-9]+' "$dir/fuzz.log" | tail -n 1 || true)
  echo "fuzz: $t: $(ls "$dir/corpus" | wc -l) inputs, ${execs:-?} execs in ${SECONDS_BUDGET}s" \
    "($(( ${execs:-0} / SECONDS_BUDGET ))/s), ${cov:-cov: ?}, rc=$rc"
  if [ "$rc" != 0 ]; then
    tail -60 "$dir/fuzz.log"
    failed+=("$t")
  fi
done
if [ ${#failed[@]} != 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}; inputs in $OUT/<target>/artifacts" >&2
  exit 1
fi
echo "fuzz: no crash in ${#TARGETS[@]} targets, ${SECONDS_BUDGET}s each ($(( $(date +%s) - start ))s in all)"
