#!/usr/bin/python3
"""The soak's report (tests/soak/vm_soak.sh): checks and plots what Prometheus scraped from the
exporter in the VM and what the guest sampled of it.

Reads, from Prometheus's HTTP API, every scrape's `up`, `scrape_duration_seconds`,
`scrape_samples_scraped`, the exporter's RSS and fds, and the raw samples of every counter
(`*_total`, and the `_count`, `_sum` and `_bucket` of every histogram); from the guest's results,
samples.tsv (RSS, fds, threads every 15 s), maps.tsv (eBPF hash map entries every 60 s) and
rounds.tsv (what each round did). Writes soak.png, soak-rounds.tsv and report.txt to --out, and
exits 1 if a check failed:

- no failed scrape: `up` is 1 in every scrape of the window (the first to the last `up` 1), and
  no scrape is missing (consecutive scrapes at most 1.5 intervals apart);
- flat after warm-up (the first round): each figure's largest value over the last third of the
  rounds is at most its largest over rounds 2 to the end of the first third, plus its bound
  (BOUNDS below; bounded growth, not none: glibc arenas, tests/soak/README.md);
- counters never go backwards except at a documented reset with its created timestamp
  (docs/metrics.md "Counter resets"): each decrease of a counter, or of a histogram's bucket,
  count or sum, is to a zero Prometheus 3.x stored at the series' created timestamp (not at a
  scrape's time; vm_soak.sh runs 3.x with created-timestamp-zero-ingestion), or, for 2.x, comes
  with a `_created` sample, scraped with the new count, after the old count's scrape. One more
  case, with --other-prometheus: a series back from an absence (stale markers between) whose
  created timestamp was set in a run the other Prometheus caused, before this one's stale
  markers, so 3.x could not store its zero: a `_created` the other Prometheus stored between
  the old count and two intervals after the return shows the exporter served one. Each other decrease is a failure, named (with its absence, if
  the series was absent before).
"""
import argparse
import json
import math
import os
import sys
import urllib.parse
import urllib.request

# Allowed growth from the early rounds' maximum to the late rounds' maximum.
BOUNDS = {
    'rss_mib': 8.0,      # glibc malloc arenas grow in 0.5-1.5 MiB steps (tests/soak/README.md)
    'fds': 2,            # a scrape's socket in flight when sampled
    'threads': 2,        # a scrape's connection thread
    'map_entries': None,  # per map below: a hash map's own bound, an LRU map's max_entries
    'samples': 0.02,     # a fraction, of the rounds' medians: the same objects every round
    'scrape_p99_s': None,  # printed, not bounded: the host is shared (a loaded TCG VM)
}
# A (non-LRU) hash map holds in-flight state: commands (fio's queue depth 4 on the head, plus
# B's connect), stashed calls. Its late maximum may exceed its early one by this many entries; a
# leak grows by the keys of every round's objects (tens per round) and fails it. An LRU map is
# bounded by its max_entries (preallocated: its memory does not grow with its entries): it keeps
# the keys of deleted objects (controllers, heads) until evicted.
HASH_MAP_SLACK = 8


def map_info(path):
    """bpftool map show's output: {name: (type, max_entries)}."""
    info, name = {}, None
    for line in open(path) if os.path.exists(path) else []:
        f = line.split()
        if len(f) >= 4 and f[0].endswith(':') and f[2] == 'name':
            name, info[f[3]] = f[3], (f[1], None)
        elif name and 'max_entries' in f:
            info[name] = (info[name][0], int(f[f.index('max_entries') + 1]))
    return info


class Prom:
    def __init__(self, url):
        self.url = url.rstrip('/')

    def get(self, path, **params):
        q = urllib.parse.urlencode(params)
        with urllib.request.urlopen('%s%s?%s' % (self.url, path, q), timeout=300) as r:
            body = json.load(r)
        if body.get('status') != 'success':
            raise RuntimeError('%s: %s' % (path, body))
        return body['data']

    def raw(self, selector, start, end):
        """Every raw sample of the selector's series between start and end."""
        d = self.get('/api/v1/query', query='%s[%ds]' % (selector, int(end - start) + 1), time=end)
        return [(s['metric'], [(float(t), float(v)) for t, v in s['values']]) for s in d['result']]


def counter_names(prom, t0, t1):
    return [x for x in prom.get('/api/v1/label/__name__/values', start=t0, end=t1)
            if x.endswith(('_total', '_bucket', '_count', '_sum'))]


def family_key(name, labels):
    """The series' counter or histogram family and labels, as its `_created` names them."""
    for suffix in ('_total', '_bucket', '_count', '_sum'):
        if name.endswith(suffix):
            name = name[:-len(suffix)]
            break
    return name, tuple(sorted((k, v) for k, v in labels.items()
                              if k not in ('__name__', 'le', 'job', 'instance')))


def created_series(prom, t0, t1):
    """{(family, labels): [(scrape time, created time)]} of the `_created` series Prometheus
    2.x ingests from OpenMetrics (3.x skips them, and stores the zero instead)."""
    out = {}
    for labels, pts in prom.raw('{__name__=~".+_created",job="nvmeof"}', t0, t1):
        out[family_key(labels['__name__'][:-len('_created')], labels)] = pts
    return out


def created_between(created, name, labels, lo, hi):
    """True if the series' `_created`, scraped at `hi`, says it began after `lo`."""
    return any(t == hi and lo < v <= hi for t, v in created.get(family_key(name, labels), []))


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(math.ceil(p / 100.0 * len(xs))) - 1)] if xs else float('nan')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--prometheus', required=True)
    ap.add_argument('--guest', required=True, help="the VM scenario's results (tests/vm run.sh --out DIR/guest)")
    ap.add_argument('--out', required=True)
    ap.add_argument('--start', type=float, required=True, help='unix time the VM was started')
    ap.add_argument('--end', type=float, required=True, help='unix time the VM ended')
    ap.add_argument('--interval', type=float, default=15.0)
    ap.add_argument('--other-prometheus', help='a 2.x Prometheus that scraped the same exporter '
                    '(its `_created` series show the created timestamps the exporter served)')
    a = ap.parse_args()
    prom = Prom(a.prometheus)
    lines, fails = [], []

    def say(s):
        lines.append(s)
        print(s)

    def check(ok, what):
        say('%s %s' % ('ok  ' if ok else 'FAIL', what))
        if not ok:
            fails.append(what)

    # ---- the window: the first to the last scrape that answered ----
    up = prom.raw('up{job="nvmeof"}', a.start, a.end + 60)
    ups = up[0][1] if up else []
    answered = [t for t, v in ups if v == 1]
    if not answered:
        check(False, 'Prometheus has scrapes that answered')
        return finish(a, lines, fails)
    t0, t1 = answered[0], answered[-1]
    inside = [(t, v) for t, v in ups if t0 <= t <= t1]
    failed = [t for t, v in inside if v != 1]
    gaps = [(p, q) for (p, _), (q, _) in zip(inside, inside[1:]) if q - p > 1.5 * a.interval]
    hours = (t1 - t0) / 3600
    check(not failed and not gaps, 'every scrape answered: %d scrapes over %.2f h, %d failed, %d missing intervals'
          % (len(inside), hours, len(failed), len(gaps)))

    def series(sel):
        r = prom.raw(sel, t0, t1)
        return r[0][1] if r else []

    dur = series('scrape_duration_seconds{job="nvmeof"}')
    # Samples per scrape less the `_created` lines a 2.x Prometheus stores as series (one per
    # series after its first reset: bounded by the series, and growing as the churn reaches
    # each one), so that this figure is the exporter's series.
    samples = series('scrape_samples_scraped{job="nvmeof"}')
    created_n = {}
    d = prom.get('/api/v1/query_range', query='count({job="nvmeof",__name__=~".+_created"})',
                 start=t0, end=t1, step=a.interval)
    for r in d['result']:
        created_n = {round(float(t)): float(v) for t, v in r['values']}
    if created_n:
        samples = [(t, v - created_n.get(round(t), created_n.get(round(t) - 1, 0))) for t, v in samples]
    rss = series('process_resident_memory_bytes{job="nvmeof"}')
    fds = series('process_open_fds{job="nvmeof"}')
    say('scrape duration: p50 %.3f s, p99 %.3f s, max %.3f s (timeout 10 s)'
        % (pct([v for _, v in dur], 50), pct([v for _, v in dur], 99), max(v for _, v in dur)))

    # ---- guest samples on the host's clock: the guest's uptime when the exporter served first
    # (timings.txt) is the exporter's process_start_time_seconds (the guest's wall clock, QEMU's
    # RTC: the host's, within a second or two under TCG; the exporter serves within 0.3 s of
    # starting). A Prometheus started later than the exporter needs no other anchor. ----
    g = a.guest
    gs = [l.split() for l in open(os.path.join(g, 'samples.tsv'))] if os.path.exists(os.path.join(g, 'samples.tsv')) else []
    gm = [l.split() for l in open(os.path.join(g, 'maps.tsv'))] if os.path.exists(os.path.join(g, 'maps.tsv')) else []
    rounds = [l.split() for l in open(os.path.join(g, 'rounds.tsv'))][1:] if os.path.exists(os.path.join(g, 'rounds.tsv')) else []
    marks = dict(l.split()[:2] for l in open(os.path.join(g, 'timings.txt')) if len(l.split()) >= 2) \
        if os.path.exists(os.path.join(g, 'timings.txt')) else {}
    g0 = float(marks.get('exporter_serving', gs[0][0] if gs else 0))
    started = series('process_start_time_seconds{job="nvmeof"}')
    anchor = started[0][1] if started else t0
    to_unix = lambda up_s: anchor + float(up_s) - g0  # noqa: E731
    threads = [(to_unix(r[0]), float(r[3])) for r in gs if len(r) == 4]
    maps = {}
    for r in gm:
        if len(r) == 3:
            maps.setdefault(r[1], []).append((to_unix(r[0]), float(r[2])))
    map_total = {}
    for name, pts in maps.items():
        for t, v in pts:
            map_total[round(t)] = map_total.get(round(t), 0) + v
    map_total = sorted(map_total.items())

    # ---- per round ----
    bounds = [to_unix(r[1]) for r in rounds] + [t1 + 1]
    figs = {
        'rss_mib': [(t, v / 2**20) for t, v in rss],
        'fds': fds,
        'threads': threads,
        'map_entries': map_total,
        'samples': samples,
        'scrape_p99_s': dur,
    }
    per_round = []
    for i in range(len(rounds)):
        lo, hi = bounds[i], bounds[i + 1]
        if lo < t0 - a.interval:
            continue  # began before this Prometheus's first scrape (one started late)
        row = {'round': i + 1, 'lo': lo, 'hi': hi}
        for k, pts in figs.items():
            vs = [v for t, v in pts if lo <= t < hi]
            # Samples per scrape: the round's median. Which of B's states a scrape catches
            # (connected with I/O, idle, gone: 2 s in 6 connected) moves one scrape by a
            # hundred series, so a round's maximum is whichever it caught (the 2 h soak's +6.6%
            # was one scrape); a leak raises every scrape, and so the median.
            agg = {'scrape_p99_s': lambda x: pct(x, 99), 'samples': lambda x: pct(x, 50)}.get(k, max)
            row[k] = agg(vs) if vs else float('nan')
        per_round.append(row)
    with open(os.path.join(a.out, 'soak-rounds.tsv'), 'w') as f:
        keys = list(figs)
        f.write('round\t' + '\t'.join(keys) + '\n')
        for row in per_round:
            f.write('%d\t%s\n' % (row['round'], '\t'.join('%.3f' % row[k] for k in keys)))
    n = len(per_round)
    if n < 4:
        check(False, 'at least 4 rounds to judge flatness (have %d)' % n)
    else:
        third = max(1, n // 3)
        early = per_round[1:1 + third]
        late = per_round[n - third:]
        span = 'rounds %d-%d' % (early[0]['round'], early[-1]['round'])
        for k, bound in BOUNDS.items():
            e = max(r[k] for r in early)
            l = max(r[k] for r in late)
            if bound is None:
                say('info %s: %s max %.3f, last %d rounds max %.3f (not bounded)' % (k, span, e, third, l))
                continue
            lim = e * (1 + bound) if isinstance(bound, float) and bound < 1 else e + bound
            of = ' (a round\'s median)' if k == 'samples' else ''
            check(l <= lim, '%s%s flat: %s max %.2f, last %d rounds max %.2f (bound %.2f)'
                  % (k, of, span, e, third, l, lim))
        info = map_info(os.path.join(g, 'maps-info.txt'))
        check(bool(info) or not maps, 'maps-info.txt names each map\'s type and max_entries')
        for name, pts in sorted(maps.items()):
            e = max([v for t, v in pts if early[0]['lo'] <= t < early[-1]['hi']] or [0])
            l = max([v for t, v in pts if t >= late[0]['lo']] or [0])
            kind, cap = info.get(name, ('?', None))
            lim = cap if kind.startswith('lru') and cap else e + HASH_MAP_SLACK
            check(l <= lim, 'map %s (%s, max_entries %s): %s max %d, last %d rounds max %d (bound %d%s)'
                  % (name, kind, cap, span, e, third, l, lim,
                     ': max_entries' if kind.startswith('lru') and cap else ''))

    # ---- counters: a decrease only where a created timestamp says the count began anew ----
    scrapes = {round(t * 1000) for t, _ in ups}
    created = created_series(prom, t0, t1)
    other = created_series(Prom(a.other_prometheus), t0, t1) if a.other_prometheus else {}
    total = dec = by_zero = by_series = by_other = 0
    bad = []
    for name in counter_names(prom, t0, t1):
        for labels, pts in prom.raw('{__name__="%s",job="nvmeof"}' % name, t0, t1):
            total += 1
            for (p, pv), (q, qv) in zip(pts, pts[1:]):
                if qv >= pv:
                    continue
                dec += 1
                if qv == 0 and round(q * 1000) not in scrapes:
                    by_zero += 1  # Prometheus 3.x stored the zero at the created timestamp
                elif created_between(created, name, labels, p - a.interval, q):
                    by_series += 1  # 2.42: the `_created` series, scraped with the new count
                elif q - p > 1.5 * a.interval and any(
                        p < t <= q + 2 * a.interval and v <= t
                        for t, v in other.get(family_key(name, labels), [])):
                    # Back after an absence with a created timestamp the exporter served (the
                    # other Prometheus stored it) but set in a run before this one's stale
                    # markers: 3.x drops a zero older than the series' last sample.
                    by_other += 1
                else:
                    for k in ('__name__', 'job', 'instance'):
                        labels.pop(k, None)
                    bad.append('%s%s %g -> %g at +%.0f s%s' % (
                        name, json.dumps(labels, sort_keys=True), pv, qv, p - t0,
                        ' (after %.0f s absent)' % (q - p) if q - p > 1.5 * a.interval else ''))
    check(not bad and total > 0,
          'counters: %d series, %d decreases: %d at a created timestamp\'s zero, %d with a '
          '`_created` in between, %d back from an absence with one served before it (the other '
          'Prometheus\'s `_created`)%s' % (total, dec, by_zero, by_series, by_other,
                                            ('; without one: ' + '; '.join(bad[:10])) if bad else ''))
    plot(a, figs, maps, anchor, bounds[:-1])
    return finish(a, lines, fails)


def plot(a, figs, maps, t0, round_starts):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    panels = [('rss_mib', 'RSS (MiB)'), ('fds', 'open fds'), ('threads', 'threads'),
              ('samples', 'samples per scrape'), ('scrape_p99_s', 'scrape duration (s)')]
    fig, axes = plt.subplots(len(panels) + 1, 1, figsize=(9, 12), sharex=True)
    for ax, (k, title) in zip(axes, panels):
        pts = figs[k]
        ax.plot([(t - t0) / 3600 for t, _ in pts], [v for _, v in pts], lw=0.7)
        ax.set_ylabel(title, fontsize=8)
    ax = axes[-1]
    for name, pts in sorted(maps.items()):
        ax.plot([(t - t0) / 3600 for t, _ in pts], [v for _, v in pts], lw=0.7, label=name)
    ax.set_ylabel('eBPF hash map entries', fontsize=8)
    ax.legend(fontsize=6, ncol=3)
    ax.set_xlabel('hours since the exporter started (rounds of churn: grey lines)')
    for ax in axes:
        for r in round_starts:
            ax.axvline((r - t0) / 3600, color='0.85', lw=0.4, zorder=0)
        ax.tick_params(labelsize=7)
    fig.suptitle('nvmeof_exporter soak in a VM: one process, %d rounds of churn' % len(round_starts), fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, 'soak.png'), dpi=80)


def finish(a, lines, fails):
    with open(os.path.join(a.out, 'report.txt'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    print('vm_report: %s' % ('%d check(s) failed' % len(fails) if fails else 'all checks passed'))
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
