#!/usr/bin/python3
"""Parses an OpenMetrics 1.0 exposition with the reference parser (Debian's
python3-prometheus-client, strict: `# EOF`, TYPE before samples, counter names, histogram
bucket order) and checks it holds the same samples as the 0.0.4 text of the same state.

usage: check_openmetrics.py OPENMETRICS_FILE TEXT_FILE

Run by /usr/bin/python3: the Debian package installs for the system interpreter."""
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om
from prometheus_client.parser import text_string_to_metric_families as parse_text


def samples(families):
    out = {}
    for family in families:
        for s in family.samples:
            if s.name.endswith('_created'):
                continue
            key = (s.name, tuple(sorted(s.labels.items())))
            if key in out:
                raise SystemExit(f'duplicate series {key}')
            out[key] = s.value
    return out


def main(om_path, text_path):
    with open(om_path, encoding='utf-8') as f:
        om_text = f.read()
    with open(text_path, encoding='utf-8') as f:
        text = f.read()
    om = samples(parse_om(om_text))  # raises on any violation of the format
    plain = samples(parse_text(text))
    if not om:
        print('check_openmetrics: no samples', file=sys.stderr)
        return 1
    missing = [k for k in plain if k not in om]
    extra = [k for k in om if k not in plain]
    # The two scrapes are moments apart: the exporter's own and the process's series move.
    moving = ('nvmeof_exporter_', 'process_')
    differ = [k for k in om if k in plain and not k[0].startswith(moving) and
              not (om[k] == plain[k] or (om[k] != om[k] and plain[k] != plain[k]))]
    for what, keys in (('missing from OpenMetrics', missing), ('only in OpenMetrics', extra),
                       ('different value', differ)):
        for k in keys[:5]:
            print(f'check_openmetrics: {what}: {k}', file=sys.stderr)
    if missing or extra or differ:
        return 1
    print(f'check_openmetrics: {len(om)} samples parse as OpenMetrics 1.0, the same as text')
    return 0


if __name__ == '__main__':
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
