#!/bin/bash
# Builds the libFuzzer target for the RDMA netlink parser with clang (ASan + UBSan) and runs it
# for a bounded time, seeded with the replies recorded from real kernels. Exit 0 when no crash,
# leak or sanitizer report was found; a crashing input is left in $OUT (see its log).
#   tests/fuzz/run.sh [SECONDS]        (default 60; FUZZ_BUILD=build-fuzz, OUT=/tmp/nvmeof-fuzz)
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_BUDGET=${1:-60}
BUILD=${FUZZ_BUILD:-build-fuzz}
OUT=${OUT:-/tmp/nvmeof-fuzz}
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVMEOF_FUZZ=ON \
  -DNVMEOF_BPF=OFF -DNVMEOF_BUILD_TESTS=OFF >/dev/null
cmake --build "$BUILD" --target rdma_netlink_fuzz -j"${FUZZ_JOBS:-2}"

rm -rf "$OUT"
mkdir -p "$OUT/corpus" "$OUT/artifacts"
# Seeds: every recorded reply alone (mode 0), and each kernel's replies in the order the
# collector asks for them (mode 1), so the fuzzer starts from a complete real scrape.
python3 - "$OUT/corpus" tests/fixtures/netlink <<'PY'
import glob, os, struct, sys
out, fixtures = sys.argv[1], sys.argv[2]
order = ['get', 'port_get-d0-p1', 'stat_get_status-d0-p1', 'stat_get-d0-p1', 'res_qp_get-d0',
         'res_cm_id_get-d0', 'stat_get_qp-d0', 'res_get']
for kdir in sorted(glob.glob(os.path.join(fixtures, '*/'))):
    k = os.path.basename(kdir.rstrip('/'))
    for path in sorted(glob.glob(kdir + '*.bin')):
        open(os.path.join(out, 'one-%s-%s' % (k, os.path.basename(path))), 'wb').write(
            b'\0' + open(path, 'rb').read())
    seq = b'\1'
    for name in order:
        data = open(os.path.join(kdir, name + '.bin'), 'rb').read()
        seq += struct.pack('<H', len(data)) + data
    open(os.path.join(out, 'scrape-%s' % k), 'wb').write(seq)
PY
# Inputs that once crashed it stay in the corpus.
cp tests/fuzz/regressions/* "$OUT/corpus/" 2>/dev/null || true
echo "fuzz: $(ls "$OUT/corpus" | wc -l) seeds, ${SECONDS_BUDGET}s"
set +e
"$BUILD/tests/fuzz/rdma_netlink_fuzz" -max_total_time="$SECONDS_BUDGET" -max_len=16384 \
  -print_final_stats=1 -artifact_prefix="$OUT/artifacts/" "$OUT/corpus" >"$OUT/fuzz.log" 2>&1
rc=$?
set -e
grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+.*DONE' "$OUT/fuzz.log" || true
if [ "$rc" != 0 ]; then
  tail -60 "$OUT/fuzz.log"
  echo "fuzz: FAILED (rc=$rc); inputs in $OUT/artifacts" >&2
  exit 1
fi
echo "fuzz: no crash in ${SECONDS_BUDGET}s (log: $OUT/fuzz.log)"
