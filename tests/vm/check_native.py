"""Native histograms against classic ones on real kernels (issue 12), mixed into check.py's Checker.

Scenario `stages` saves, after each fio job (I/O stopped, so nothing moves between the two), a
text scrape metrics-NAME.prom and right after it a protobuf scrape metrics-NAME.pb (delimited
io.prometheus.client.MetricFamily). The protobuf is decoded by protoc against Debian's
client_model metrics.proto (golang-github-prometheus-client-model-dev), the schema the exporter is
built with; nothing here knows the wire format. For every histogram series:
  - the protobuf carries it as a native histogram (schema 3, spans), and the text scrape has the
    same series (same labels) as a classic one, and the other way round;
  - the native sample_count equals the classic _count, and sample_sum the classic _sum;
  - the native buckets add up: zero_count + the buckets decoded from the deltas = sample_count.
"""
import glob
import math
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from testlib import delimited, field  # noqa: E402

PROTO_DIR = os.environ.get('CLIENT_MODEL_DIR',
                           '/usr/share/gocode/src/github.com/prometheus/client_model')
# Each delimited message becomes field 1 of this wrapper, so one protoc run decodes a whole scrape.
WRAPPER = '''syntax = "proto2";
import "io/prometheus/client/metrics.proto";
message Scrape { repeated io.prometheus.client.MetricFamily family = 1; }
'''
_FIELD = re.compile(r'^\s*(\w+): (.*)$')


def delimited_to_wrapper(body):
    """varint-length-prefixed messages -> one Scrape message (field 1, wire type 2 each)."""
    return b''.join(field(1, 2, message) for message in delimited(body))


def parse_text_format(text):
    """protoc's text output -> nested dicts; every field is a list of values or sub-dicts."""
    root, stack = {}, []
    cur = root
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if s.endswith('{'):
            child = {}
            cur.setdefault(s[:-1].strip(), []).append(child)
            stack.append(cur)
            cur = child
        elif s == '}':
            cur = stack.pop()
        else:
            m = _FIELD.match(s)
            if not m:
                raise ValueError('unexpected protoc output line: %r' % s)
            v = m.group(2)
            if v.startswith('"'):
                v = re.sub(r'\\(.)', lambda e: e.group(1), v[1:-1])
            cur.setdefault(m.group(1), []).append(v)
    return root


def decode_scrape(path, workdir):
    wrapper = os.path.join(workdir, 'scrape_wrapper.proto')
    if not os.path.exists(wrapper):
        with open(wrapper, 'w') as f:
            f.write(WRAPPER)
    body = delimited_to_wrapper(open(path, 'rb').read())
    r = subprocess.run(['protoc', '--proto_path=' + PROTO_DIR, '--proto_path=' + workdir,
                        '--decode=Scrape', 'scrape_wrapper.proto'], input=body, capture_output=True)
    if r.returncode != 0 or r.stderr:
        raise ValueError('protoc: %s' % r.stderr.decode(errors='replace').strip()[:300])
    return parse_text_format(r.stdout.decode())


def native_buckets_total(h):
    """zero_count + every positive and negative bucket count decoded from the deltas."""
    total = int(h.get('zero_count', ['0'])[0])
    for sign in ('positive', 'negative'):
        count = 0
        for d in h.get(sign + '_delta', []):
            count += int(d)
            total += count
    return total


def label_key(labels):
    return tuple(sorted(labels.items()))


class NativeChecks:
    """Mixin for check.Checker (needs self.metrics, self.check, self.dir)."""

    def native_pair(self, name):
        """metrics-NAME.prom vs metrics-NAME.pb; returns the number of histograms compared."""
        pb = os.path.join(self.dir, 'metrics-%s.pb' % name)
        if not self.check(os.path.exists(pb) and os.path.getsize(pb) > 0, 'protobuf scrape %s present' % name):
            return 0
        try:
            decoded = decode_scrape(pb, self.native_workdir)
        except (ValueError, IndexError) as e:
            self.check(False, 'protobuf scrape %s decodes with protoc' % name, str(e))
            return 0
        text = self.metrics(name)
        classic = {}
        for n, labels, v in text:
            for suffix in ('_count', '_sum'):
                if n.endswith(suffix):
                    classic.setdefault((n[:-len(suffix)], label_key(labels)), {})[suffix] = v
        classic_hist = {k for k in classic if (k[0] + '_bucket') in {s[0] for s in text}}
        native, bad = {}, []
        for fam in decoded.get('family', []):
            if fam.get('type', [''])[0] != 'HISTOGRAM':
                continue
            fname = fam['name'][0]
            for m in fam.get('metric', []):
                labels = {l['name'][0]: l['value'][0] for l in m.get('label', [])}
                h = m['histogram'][0]
                key = (fname, label_key(labels))
                native[key] = h
                if 'schema' not in h or ('positive_span' not in h and 'zero_count' not in h):
                    bad.append('%s%s: not native (no schema/spans)' % key)
                    continue
                c = classic.get(key)
                if c is None:
                    bad.append('%s%s: no classic series in the text scrape' % key)
                    continue
                count = int(h['sample_count'][0])
                total = float(h['sample_sum'][0])
                if count != c.get('_count'):
                    bad.append('%s%s: native count %d, classic _count %g' % (key + (count, c.get('_count'))))
                if not math.isclose(total, c.get('_sum', float('nan')), rel_tol=1e-9, abs_tol=1e-12):
                    bad.append('%s%s: native sum %r, classic _sum %r' % (key + (total, c.get('_sum'))))
                if native_buckets_total(h) != count:
                    bad.append('%s%s: native buckets add up to %d, count %d' % (
                        key + (native_buckets_total(h), count)))
        missing = sorted(classic_hist - set(native))
        filled = len([h for h in native.values() if int(h['sample_count'][0]) > 0])
        self.check(native and filled and not bad and not missing,
                   '%s: %d native histograms (%d with samples) = classic (count, sum, buckets add up)' % (
                       name, len(native), filled),
                   '; '.join(bad[:4]) + (' classic only: %s' % missing[:3] if missing else ''))
        return len(native)

    def native_stages(self):
        """Every protobuf scrape `stages` saved, against its text twin."""
        import tempfile
        pbs = sorted(glob.glob(os.path.join(self.dir, 'metrics-*.pb')))
        if not self.check(bool(pbs), 'stages saved protobuf scrapes (metrics-*.pb)'):
            return
        with tempfile.TemporaryDirectory() as work:
            self.native_workdir = work
            n = sum(self.native_pair(os.path.basename(p)[len('metrics-'):-len('.pb')]) for p in pbs)
        print('     %d native histograms compared in %d protobuf scrapes' % (n, len(pbs)))
