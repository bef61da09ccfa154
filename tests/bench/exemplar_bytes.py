#!/usr/bin/env python3
"""What exemplars and created timestamps add to a scrape's bytes (issue 45's budget: /metrics
with exemplars <= 1.1x without, in the default text and protobuf).

  tests/bench/exemplar_bytes.py SCRAPE.pb [SCRAPE.om]

SCRAPE.pb: a protobuf scrape (delimited io.prometheus.client.MetricFamily). Walks the wire
format (tests/pylib/testlib.py) and sums the bytes of every exemplar (Bucket.exemplar, field 3;
Histogram.exemplars, field 16) and created timestamp (Counter field 3, Histogram field 15),
each with its tag and length, then prints the body's size with and without them. SCRAPE.om: an
OpenMetrics scrape; the same for its exemplars (` # {...} v t` after a sample) and `_created`
lines. Text 0.0.4 carries neither (docs/metrics.md): it is the same body with or without.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from testlib import delimited, field, fields  # noqa: E402


def size(num, payload):
    """Bytes a length-delimited field takes: its key, its length and the payload."""
    return len(field(num, 2, payload))


def protobuf(body):
    total, ex, created = len(body), 0, 0
    for family in delimited(body):
        for num, _, metric in fields(family):
            if num != 4:
                continue
            for mnum, _, m in fields(metric):
                if mnum == 3:  # counter
                    created += sum(size(f, p) for f, _, p in fields(m) if f == 3)
                elif mnum == 7:  # histogram
                    for f, _, p in fields(m):
                        if f == 16:
                            ex += size(f, p)
                        elif f == 15:
                            created += size(f, p)
                        elif f == 3:  # a bucket
                            ex += sum(size(bf, bp) for bf, _, bp in fields(p) if bf == 3)
    return total, ex, created


def openmetrics(text):
    total, ex, created = len(text.encode()), 0, 0
    for line in text.splitlines(keepends=True):
        if line.startswith('#'):
            continue
        if ' # {' in line:
            ex += len(line[line.index(' # {'):].rstrip('\n').encode())
        if line.split('{')[0].split(' ')[0].endswith('_created'):
            created += len(line.encode())
    return total, ex, created


def show(what, total, ex, created):
    base = total - ex - created
    print('%-12s %9d bytes; exemplars %7d, created %7d; without both %9d: %.3fx (exemplars alone '
          '%.3fx)' % (what, total, ex, created, base, total / base, (base + ex) / base))


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    show('protobuf', *protobuf(open(sys.argv[1], 'rb').read()))
    if len(sys.argv) == 3:
        show('openmetrics', *openmetrics(open(sys.argv[2]).read()))


if __name__ == '__main__':
    main()
