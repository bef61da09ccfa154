#!/bin/bash
# NVMe-oF stage hooks' cost on real drivers: boots Debian's kernel under QEMU (tests/vm) and runs
# scenario `bench` (see tests/vm/guest/scenarios/bench.sh), then prints IOPS per mode with the
# ratio to no exporter, and the BPF run time per command of the NVMe-oF programs.
#
#   tests/bench/nvmeof_vm_bench.sh build/nvmeof_exporter [6.1|6.12]     BENCH_SECONDS=8
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
EXPORTER=${1:?usage: $0 EXPORTER [KERNEL]}
KERNEL=${2:-6.12}
OUT=/tmp/nvmeof-vm/bench-$KERNEL
VM_TIMEOUT=${VM_TIMEOUT:-900}
BENCH_SECONDS=${BENCH_SECONDS:-8} "$HERE/../vm/run.sh" --kernel "$KERNEL" --scenario bench \
  --exporter "$EXPORTER" --out "$OUT" --timeout "$VM_TIMEOUT" || true
python3 - "$OUT/guest" <<'PY'
import os, re, statistics, sys
d = sys.argv[1]
rows = [l.split() for l in open(os.path.join(d, 'bench.txt')) if l.strip()]
by = {}
for mode, t, rnd, iops in rows:
    by.setdefault((mode, t), []).append(float(iops))
for t in ('rdma', 'tcp'):
    base = statistics.median(by[('none', t)])
    for mode in ('none', 's8', 's1'):
        v = by.get((mode, t), [])
        if v:
            m = statistics.median(v)
            print('%-4s %-4s IOPS median %8.0f  ratio %.3f  rounds %s' % (t, mode, m, m / base,
                  ' '.join('%.0f' % x for x in v)))

def scrape(name):
    out = {}
    for line in open(os.path.join(d, 'metrics-%s.prom' % name)):
        m = re.match(r'(\w+)\{(.*)\} (\S+)$', line.strip())
        if m:
            out[(m.group(1), m.group(2))] = float(m.group(3))
    return out

for mode in ('s8', 's1'):
    a, b = scrape(mode + '-after'), scrape(mode + '-before')
    delta = lambda k: a.get(k, 0) - b.get(k, 0)
    cmds = sum(delta(k) for k in a if k[0] == 'nvmeof_commands_total' and 'role="host"' in k[1])
    nv = sum(delta(k) for k in a if k[0] == 'nvmeof_exporter_bpf_program_run_seconds_total'
             and re.search(r'hook="nvme', k[1]))
    blk = sum(delta(k) for k in a if k[0] == 'nvmeof_exporter_bpf_program_run_seconds_total'
              and re.search(r'hook="block_', k[1]))
    print('%s: %d host commands; NVMe-oF programs (host+target) %.0f ns/command; block programs %.0f ns/command'
          % (mode, cmds, nv / cmds * 1e9 if cmds else 0, blk / cmds * 1e9 if cmds else 0))
PY
