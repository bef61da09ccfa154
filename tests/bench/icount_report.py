#!/usr/bin/env python3
"""Tables of the icount bench (icount_bench.sh) from one guest's results; exit 1 on a miss.

Usage: icount_report.py GUEST_DIR [BUDGET_RATIO]
       icount_report.py --boots BUDGET_RATIO GUEST_DIR...   (each boot's costs, and their mean)

icount.txt holds "MODE PATH RW IOS LAT_NS_MEAN" lines; under `-icount shift=0` a guest ns is one
guest instruction, so LAT_NS_MEAN is instructions per I/O. stats-PATH-{before,after}.json are
`bpftool -j prog show` around PATH's randread run with kernel.bpf_stats_enabled (run_time_ns:
instructions too).
"""
import json
import os
import sys

TOOLS = ['s1', 's8', 's64', 'default', 'transport', 'tp8', 'record', 'biolatency']
MODES = ['none', 'none2'] + TOOLS
TOLERANCE = {'null': 0.01, 'tcp': 0.01, 'rdma': 0.015}  # none vs none2, relative
WARMUP_IOS = 100  # unmeasured I/Os before each run (inside the stats bracket)


def read_lat(d):
    """{(mode, path, rw): instructions per I/O} of one guest's icount.txt."""
    lat = {}
    for line in open(os.path.join(d, 'icount.txt')):
        f = line.split()
        if len(f) == 5:
            lat[(f[0], f[1], f[2])] = float(f[4])
    return lat


def set_tools(lat):
    """TOOLS and MODES for these runs: every sample rate run (ICOUNT_MODES="... s16 s32"), in
    order, then the rest."""
    rates = sorted({k[0] for k in lat if k[0][0] == 's' and k[0][1:].isdigit()} |
                   {'s1', 's8', 's64'}, key=lambda m: int(m[1:]))
    TOOLS[:] = rates + ['default', 'transport', 'tp8', 'record', 'biolatency']
    MODES[:] = ['none', 'none2'] + TOOLS


def base_of(lat, p, rw, misses):
    """No tool's latency: the mean of none and none2 (the first and the last run of the boot),
    and a miss when the two differ by more than the path's tolerance."""
    base, again = lat.get(('none', p, rw)), lat.get(('none2', p, rw))
    if base is None or again is None:
        return base
    diff = abs(again - base) / base
    if diff > TOLERANCE[p]:
        misses.append('%s %s: none not reproducible (%.0f vs %.0f, %.2f%% > %.1f%%)'
                      % (p, rw, base, again, 100 * diff, 100 * TOLERANCE[p]))
    return (base + again) / 2


def boots(budget, dirs):
    """Several boots of one kernel: NVMe/RDMA over rxe moves by a few thousand instructions per
    I/O between boots, biolatency's cost too (tests/bench/README.md), so its ratio is read from
    the mean cost over boots. The budget applies to that mean; `none` to every boot."""
    runs = [read_lat(d) for d in dirs]
    set_tools({k: v for lat in runs for k, v in lat.items()})
    misses = []
    cost = {}  # (mode, path, rw) -> [cost in each boot that ran it]
    for lat in runs:
        for p, rw in sorted({(k[1], k[2]) for k in lat}):
            base = base_of(lat, p, rw, misses)
            if base is None:
                continue
            for m in TOOLS:
                if (m, p, rw) in lat:
                    cost.setdefault((m, p, rw), []).append(lat[(m, p, rw)] - base)
    print('mean cost over no tool across %d boots, instructions per I/O (ratio of the means to '
          "biolatency's; min..max over the boots)" % len(runs))
    for p, rw in sorted({(k[1], k[2]) for k in cost}, key=lambda k: ('null', 'tcp', 'rdma').index(k[0])):
        bio = cost.get(('biolatency', p, rw))
        bio_mean = sum(bio) / len(bio) if bio else None
        for m in TOOLS:
            c = cost.get((m, p, rw))
            if not c:
                continue
            mean = sum(c) / len(c)
            ratio = mean / bio_mean if bio_mean and bio_mean > 0 else None
            print('%-5s %-9s %-10s %+7.0f %7s  (%+.0f..%+.0f, %d boots)' % (
                p, rw, m, mean, '%.2fx' % ratio if ratio else '', min(c), max(c), len(c)))
            if m == 'default' and p != 'null' and ratio and ratio > budget:
                misses.append('%s %s: the default costs %.2fx biolatency over %d boots (budget '
                              '%.2fx)' % (p, rw, ratio, len(c), budget))
    for m in misses:
        print('BUDGET MISSED: ' + m)
    return 1 if misses else 0


def main():
    if sys.argv[1] == '--boots':
        return boots(float(sys.argv[2]), sys.argv[3:])
    d = sys.argv[1]
    budget = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    env = dict(l.strip().split('=', 1) for l in open(os.path.join(d, 'scenario.env')) if '=' in l)
    lat = read_lat(d)
    paths = [p for p in ('null', 'tcp', 'rdma') if any(k[1] == p for k in lat)]
    set_tools(lat)
    rws = [r for r in ('randread', 'randwrite') if any(k[2] == r for k in lat)]
    misses = []
    print('kernel %s, %s I/Os per run, fio psync QD1 4 KiB; instructions per I/O (fio mean '
          'latency in guest ns under -icount shift=0)' % (env.get('KERNEL', '?'), env.get('IOS')))
    print('%-5s %-9s %s' % ('path', 'rw', ''.join('%11s' % m for m in MODES)))
    for p in paths:
        for rw in rws:
            print('%-5s %-9s %s' % (p, rw, ''.join(
                '%11.0f' % lat[(m, p, rw)] if (m, p, rw) in lat else '%11s' % '-' for m in MODES)))
    print('\ncost over no tool (the mean of none and none2), instructions per I/O (ratio to biolatency)')
    print('%-5s %-9s %s' % ('path', 'rw', ''.join('%17s' % m for m in TOOLS)))
    for p in paths:
        for rw in rws:
            base = base_of(lat, p, rw, misses)
            if base is None:
                continue
            for m in ('none2', 'biolatency'):
                if ('default', p, rw) in lat and (m, p, rw) not in lat and p != 'null':
                    misses.append('%s %s: no %s run to compare with' % (p, rw, m))
            bio = lat.get(('biolatency', p, rw))
            bio_cost = bio - base if bio is not None else None
            cells = []
            for m in TOOLS:
                v = lat.get((m, p, rw))
                if v is None:
                    cells.append('%17s' % '-')
                    continue
                cost = v - base
                ratio = ' (%.2fx)' % (cost / bio_cost) if bio_cost and bio_cost > 0 else ''
                cells.append('%17s' % ('%+.0f%s' % (cost, ratio)))
                if (m == 'default' and p != 'null' and bio_cost and bio_cost > 0 and
                        cost > budget * bio_cost):
                    misses.append('%s %s: the default costs %.2fx biolatency (budget %.2fx)'
                                  % (p, rw, cost / bio_cost, budget))
            print('%-5s %-9s %s' % (p, rw, ''.join(cells)))
    derived(lat, paths, rws)
    tool_threads(d, int(env.get('IOS', '0') or 0))
    stats(d, paths)
    for m in misses:
        print('BUDGET MISSED: ' + m)
    return 1 if misses else 0


def derived(lat, paths, rws):
    """What an unsampled and a sampled command cost, from the runs at 1 in 1 and 1 in 64:
    c(N) = u + (s - u) / N, so u = (64 c64 - c1) / 63 and s = c1. On NVMe-oF paths the block
    programs run on two devices (the host's namespace and the target's null_blk): the NVMe-oF
    hooks' share is u minus twice null_blk's u."""
    def cost(m, p, rw):
        if (m, p, rw) not in lat or ('none', p, rw) not in lat:
            return None
        base = [lat[(n, p, rw)] for n in ('none', 'none2') if (n, p, rw) in lat]
        return lat[(m, p, rw)] - sum(base) / len(base)
    rows = []
    for p in paths:
        for rw in rws:
            c1, c64 = cost('s1', p, rw), cost('s64', p, rw)
            if c1 is None or c64 is None:
                continue
            u = (64 * c64 - c1) / 63
            nb1, nb64 = cost('s1', 'null', rw), cost('s64', 'null', rw)
            hooks = ''
            if p != 'null' and nb1 is not None and nb64 is not None:
                hooks = '%.0f' % (u - 2 * (64 * nb64 - nb1) / 63)
            rows.append((p, rw, u, c1, hooks))
    if rows:
        print('\nper command: unsampled u = (64 c64 - c1)/63, sampled = c1; NVMe-oF hooks of an '
              'unsampled command = u - 2 x null_blk u')
        print('%-5s %-9s %12s %12s %18s' % ('path', 'rw', 'unsampled', 'sampled', 'NVMe-oF unsampled'))
        for p, rw, u, c1, hooks in rows:
            print('%-5s %-9s %12.0f %12.0f %18s' % (p, rw, u, c1, hooks or '-'))


def tool_threads(d, ios):
    """The tool's own threads (user and kernel time from schedstat, instructions under icount)
    during each measured run, per I/O: what it costs beside its programs (its reader, its
    module watchers). The last try of each run, the one icount.txt keeps."""
    try:
        lines = open(os.path.join(d, 'icount-runs.txt')).read().splitlines()
    except OSError:
        return
    last = {}
    for x in lines:
        f = x.split()
        if len(f) >= 11 and f[9] == 'tool_ns' and f[0] not in ('none', 'none2'):
            last[(f[0], f[1], f[2])] = int(f[10])
    if not last or not ios:
        return
    print('\nthe tool\'s own threads during each run (schedstat), instructions per I/O')
    for (m, p, rw), ns in last.items():
        print('%-10s %-5s %-9s %8.0f' % (m, p, rw, ns / ios))


def stats(d, paths):
    """Per program: instructions per run and per I/O (randread; `stats`: the exporter at its
    default, `stats1`: at 1 in 1, `stats0`: with no command sampled, `recstats`: `record -s 8`)."""
    ios = None
    for line in open(os.path.join(d, 'scenario.env')):
        if line.startswith('IOS='):
            ios = int(line.split('=', 1)[1]) + WARMUP_IOS
    for tag, what in (('stats', 'exporter at its default'), ('stats1', 'exporter at 1 in 1'),
                      ('stats0', 'exporter with no command sampled'),
                      ('recstats', '`record -s 8`')):
        for p in paths:
            stats_table(d, tag, what, p, ios * tries(d, tag, p))


def tries(d, tag, p):
    """How many times the randread run was measured (a run with a stalled I/O runs again, up to
    three times, inside the same snapshots)."""
    try:
        lines = open(os.path.join(d, 'icount-runs.txt')).read().splitlines()
    except OSError:
        return 1
    return max(1, sum(1 for x in lines if x.split()[:3] == [tag, p, 'randread']))


def stats_table(d, tag, what, p, ios):
    try:
        before = {x['id']: x for x in json.load(open(os.path.join(d, '%s-%s-before.json' % (tag, p))))}
        after = json.load(open(os.path.join(d, '%s-%s-after.json' % (tag, p))))
    except (OSError, ValueError):
        return
    rows = []
    for x in after:
        b = before.get(x['id'], {})
        runs = x.get('run_cnt', 0) - b.get('run_cnt', 0)
        ns = x.get('run_time_ns', 0) - b.get('run_time_ns', 0)
        if runs > 0:
            rows.append((x.get('name', '?'), runs, ns))
    if not rows:
        return
    print('\n%s randread, %s with bpf_stats: per program (instructions)' % (p, what))
    print('%-18s %9s %9s %11s' % ('program', 'runs/IO', 'per run', 'per I/O'))
    total = 0
    for name, runs, ns in sorted(rows, key=lambda r: -r[2]):
        total += ns
        print('%-18s %9.2f %9.0f %11.0f' % (name, runs / ios, ns / runs, ns / ios))
    print('%-18s %9s %9s %11.0f' % ('all', '', '', total / ios))


if __name__ == '__main__':
    sys.exit(main())
