#!/usr/bin/env python3
"""Writes a synthetic host and target record file pair (format version 1, docs/profiling.md) for
tests: N sampled 4 KiB reads and 16 KiB writes over NVMe/TCP, the target's clock 42 s ahead of
the host's, the target file in another order, 2% of the host's commands missing on the target.
Network and storage times are drawn from a seeded RNG.
   synthetic_records.py OUT_DIR [N] [STORAGE_SCALE]"""
import json
import os
import random
import sys

out, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2000
scale = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
rng = random.Random(6)
OFFSET = 42_000_000_000
hdr = dict(format='nvmeof-record', version=1, kernel='6.12.0-synthetic', mechanism='fentry',
           sample_every=8, clock='CLOCK_MONOTONIC')
host, target = [], []
t = 1_000_000_000
for i in range(n):
    op = 'read' if i % 2 == 0 else 'write'
    size = 4096 if op == 'read' else 16384
    cid, slba, nlb = i % 128, rng.randrange(1 << 20) * 8, size // 512 - 1
    net_out = int(rng.lognormvariate(2.7, 0.3) * 1000)   # ~15 us
    net_back = int(rng.lognormvariate(2.3, 0.5) * 1000)  # ~10 us, longer tail
    storage = int(rng.lognormvariate(3.9 if op == 'read' else 4.3, 0.4) * 1000 * scale)
    setup = t + rng.randrange(500, 1500)
    posted = setup + rng.randrange(1000, 3000)
    recv = posted + net_out
    init = recv + rng.randrange(500, 1500)
    exe = init + rng.randrange(1000, 2000)
    done = exe + storage
    sent = done + rng.randrange(1000, 3000)
    response = sent + net_back
    complete = response + rng.randrange(1000, 2000)
    end = complete + rng.randrange(500, 1000)
    common = dict(transport='tcp', op=op, size=size, qid=1 + i % 4, cid=cid, cntlid=1,
                  subsys='nqn.2024-01.io.example:ns1', hostnqn='', slba=slba, nlb=nlb)
    host.append(dict(role='host', device='nvme1n1', ts=[t, setup, posted, 0, response, complete,
                                                         end], **common))
    if i % 50 != 7:  # 2% not sampled on the target
        target.append(dict(role='target', device='', ts=[x + OFFSET if x else 0 for x in (
            recv, init, 0, exe, done, sent)], **common))
    t += rng.randrange(20_000, 60_000)
rng.shuffle(target)
for name, role, recs in (('host', 'host', host), ('target', 'target', target)):
    with open(os.path.join(out, name + '.jsonl'), 'w') as f:
        f.write(json.dumps(dict(hdr, hostname=name + '1', role=role)) + '\n')
        for r in recs:
            f.write(json.dumps(r, separators=(',', ':')) + '\n')
        f.write(json.dumps(dict(end=True, records=len(recs), lost=0)) + '\n')
