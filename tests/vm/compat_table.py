#!/usr/bin/env python3
"""The kernel compatibility table, from the VM suite's results (python3 stdlib only).

  compat_table.py collect KERNEL RESULTS_DIR [-o tests/vm/results/KERNEL.txt]
      reads what a `smoke` (or `stages`) run left in RESULTS_DIR (its guest/ folder: probe.txt,
      probe-transport.txt, metrics-*.prom, result, check.log) and writes one line per collector
      and hook tier:   ROW<TAB>works|merged|partial|absent<TAB>detail
  compat_table.py table tests/vm/results/*.txt
      prints the Markdown table for docs/operating.md: rows kernels, columns collectors and
      tiers, cells "works", "merged (stages...)", "partial (what attached; what did not, why)"
      or "absent (reason)".

A results file is machine-readable and small, so it is committed (tests/vm/results/) and the
table is rebuilt from it; `collect` after a new run refreshes it.
"""
import argparse
import glob
import os
import re
import sys

COLLECTORS = ['rdma', 'rdma_netlink', 'nvme_host', 'nvmet', 'tcp', 'pfc']
TIERS = ['block', 'default', 'transport', 'lifecycle']
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_prom(path):
    out = []
    for line in open(path, errors='replace'):
        m = SAMPLE.match(line)
        if m and not line.startswith('#'):
            out.append((m.group(1), dict(LABEL.findall(m.group(2) or '')), float(m.group(3))))
    return out


def parse_probe(path):
    """[(section, [{hook,status,mechanism,required,tier,notes}], first line)] of a probe.txt."""
    sections, rows, head = [], None, ''
    if not os.path.exists(path):
        return sections
    for line in open(path, errors='replace'):
        line = line.rstrip('\n')
        if line.startswith('bpf: '):
            head = line
        elif line.startswith('HOOK'):
            rows = []
            has_tier = 'TIER' in line.split()  # exporters before the two tiers print no TIER
            sections.append((head, rows))
        elif line.startswith('result:') or not line.strip():
            rows = None
        elif rows is not None:
            n = 5 if has_tier else 4
            f = line.split(None, n)
            if len(f) < n:
                continue
            tier = f[4] if has_tier else ('default' if f[3] == 'yes' or len(sections) == 1
                                          else 'transport')
            rows.append(dict(hook=f[0], status=f[1], mechanism=f[2], required=f[3], tier=tier,
                             notes=f[n] if len(f) > n else ''))
    return sections


def tier_cell(rows, tier, head):
    """works | merged (missing hooks) | absent (why), for the hooks of `tier` among `rows`."""
    hooks = [r for r in rows if r['tier'] == tier]
    if not hooks:
        return 'absent', 'not probed'
    if 'unavailable' in head:
        return 'absent', head.split('unavailable', 1)[1].strip(' :')
    bad = [r for r in hooks if r['status'] not in ('ok', 'off')]
    good = [r for r in hooks if r['status'] == 'ok']
    if not bad:
        return 'works', ' '.join('%s=%s' % (r['hook'], r['mechanism']) for r in good)
    why = reasons(bad)
    if any(r['required'] == 'yes' for r in bad):
        if not good:
            return 'absent', why
        # A side of the tier works (5.10: the host's hooks, not the target's).
        return 'partial', 'attached: %s; missing: %s' % (
            ' '.join('%s=%s' % (r['hook'], r['mechanism']) for r in good), why)
    return 'merged', why


def reasons(bad):
    """The missing hooks and their distinct reasons: "a, b (why1; why2)", hooks with the same
    reasons together, each variant's "mechanism: " prefix and "off: ..." notes left out."""
    groups = {}
    for r in bad:
        notes = [n.split(': ', 1)[1] if re.match(r'^[a-z_]+: ', n) else n
                 for n in (r['notes'] or r['status']).split('; ')
                 if not n.startswith('off: ')]
        seen = []
        for n in notes:
            n = n.replace('load: EINVAL: ', '')
            if n not in seen:
                seen.append(n)
        groups.setdefault('; '.join(seen), []).append(r['hook'])
    return '; '.join('%s (%s)' % (', '.join(h), w) if w else ', '.join(h)
                     for w, h in groups.items())


def collect(kernel, directory):
    guest = os.path.join(directory, 'guest')
    if not os.path.isdir(guest):
        guest = directory
    lines = []
    result = os.path.join(directory, 'result')
    if os.path.exists(result):
        lines.append('# ' + open(result).read().strip())
    scrapes = sorted(glob.glob(os.path.join(guest, 'metrics-*after*.prom'))) or \
        sorted(glob.glob(os.path.join(guest, 'metrics-*.prom')))
    samples = parse_prom(scrapes[-1]) if scrapes else []
    success = {l.get('collector'): v for n, l, v in samples if n == 'nvmeof_exporter_collector_success'}
    for c in COLLECTORS:
        if c not in success:
            lines.append('collector:%s\tabsent\tnot enabled or no scrape' % c)
        else:
            lines.append('collector:%s\t%s\t%s' % (c, 'works' if success[c] == 1 else 'absent',
                                                   '' if success[c] == 1 else 'collector_success 0'))
    default = parse_probe(os.path.join(guest, 'probe.txt'))
    transport = parse_probe(os.path.join(guest, 'probe-transport.txt')) or default
    block_head, block_rows = default[0] if default else ('', [])
    nv_head, nv_rows = default[1] if len(default) > 1 else ('', [])
    tr_head, tr_rows = transport[1] if len(transport) > 1 else (nv_head, nv_rows)
    cells = {
        'block': tier_cell(block_rows, 'default', block_head),
        'default': tier_cell(nv_rows, 'default', nv_head),
        'transport': tier_cell(tr_rows, 'transport', tr_head),
    }
    # Lifecycle: its hooks are in the scrape's hook list, not in probe's tables.
    probed = {r['hook'] for _, rows in default + transport for r in rows}
    life = [(l.get('hook'), l.get('mechanism'), v) for n, l, v in samples
            if n == 'nvmeof_exporter_bpf_hook_attached' and l.get('hook') not in probed]
    if not life:
        cells['lifecycle'] = ('absent', 'no lifecycle hook listed')
    elif all(v == 1 for _, _, v in life):
        cells['lifecycle'] = ('works', ' '.join('%s=%s' % (h, m) for h, m, _ in sorted(life)))
    else:
        # An entry hook whose return hook is listed too only keeps what the return counts with
        # (nvmf_connect_admin_queue -> _return): without a counting hook nothing is served.
        names = {h for h, _, _ in life}
        counting = [(h, v) for h, _, v in life if h + '_return' not in names]
        missing = sorted(h for h, _, v in life if v != 1)
        if all(v != 1 for _, v in counting):
            cells['lifecycle'] = ('absent', 'no counting hook attached; missing: ' + ' '.join(missing))
        else:
            cells['lifecycle'] = ('partial', 'missing: ' + ' '.join(missing))
    avail = [l.get('reason') for n, l, v in samples if n == 'nvmeof_exporter_bpf_available' and v == 1]
    for tier in TIERS:
        state, detail = cells[tier]
        if state == 'absent' and avail and avail[0] != 'ok' and tier != 'lifecycle':
            detail = 'exporter: %s; %s' % (avail[0], detail)
        lines.append('bpf:%s\t%s\t%s' % (tier, state, detail))
    rc_path = os.path.join(guest, 'record-exit-code')
    if os.path.exists(rc_path):
        rc = open(rc_path).read().strip()
        recs = {}
        for role in ('host', 'target'):
            path = os.path.join(guest, 'rec.%s.jsonl' % role)
            recs[role] = sum(1 for _ in open(path)) if os.path.exists(path) else 0
        state = 'works' if rc == '0' and all(recs.values()) else 'absent'
        lines.append('tool:record\t%s\texit %s, records %s' % (state, rc, ' '.join(
            '%s=%d' % kv for kv in sorted(recs.items()))))
    return '\n'.join(lines) + '\n'


def read_results(path):
    cells = {}
    for line in open(path):
        if line.startswith('#') or not line.strip():
            continue
        row, state, detail = (line.rstrip('\n').split('\t') + ['', ''])[:3]
        cells[row] = (state, detail)
    return cells


def short(state, detail):
    if state == 'works':
        return 'works'
    detail = detail.replace('|', '/')
    if len(detail) > 160:
        detail = detail[:157] + '...'
    return '%s (%s)' % (state, detail) if detail else state


def table(paths):
    cols = ['collector:' + c for c in COLLECTORS] + ['bpf:' + t for t in TIERS] + ['tool:record']
    heads = [c.split(':', 1)[1] + (' tier' if c.startswith('bpf:') and c != 'bpf:block' and
                                   c != 'bpf:lifecycle' else '') for c in cols]
    out = ['| kernel | ' + ' | '.join(heads) + ' |', '|---' * (len(cols) + 1) + '|']

    def key(p):
        return [int(x) if x.isdigit() else x for x in re.split(r'[.-]', os.path.basename(p)[:-4])]
    for path in sorted(paths, key=key):
        cells = read_results(path)
        out.append('| %s | %s |' % (os.path.basename(path)[:-4], ' | '.join(
            short(*cells.get(c, ('absent', 'not run'))) for c in cols)))
    return '\n'.join(out) + '\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    c = sub.add_parser('collect')
    c.add_argument('kernel')
    c.add_argument('dir')
    c.add_argument('-o', '--output')
    t = sub.add_parser('table')
    t.add_argument('results', nargs='+')
    args = ap.parse_args()
    if args.cmd == 'collect':
        text = collect(args.kernel, args.dir)
        if args.output:
            with open(args.output, 'w') as f:
                f.write(text)
        else:
            sys.stdout.write(text)
    else:
        sys.stdout.write(table(args.results))
    return 0


if __name__ == '__main__':
    sys.exit(main())
