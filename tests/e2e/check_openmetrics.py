#!/usr/bin/python3
"""Parses an OpenMetrics 1.0 exposition with the reference parser (Debian's
python3-prometheus-client, strict: `# EOF`, TYPE before samples, counter names, histogram
bucket order, exemplars only on buckets and counters and at most 128 characters of labels) and
checks it holds the same samples as the 0.0.4 text of the same state (`_created` samples and
exemplars, which the text has no place for, aside).

usage: check_openmetrics.py [--exemplars N] [--created N] [--moving PREFIX]... OPENMETRICS_FILE TEXT_FILE
  --exemplars N, --created N: the exposition must hold exactly N exemplars, N _created samples
  --moving PREFIX: series whose value may move between the two scrapes (besides the exporter's
    own and the process's), e.g. nvmeof_rdma_ where keep-alives cross an RDMA port

Exit 77 if python3-prometheus-client is not installed. Run by /usr/bin/python3: the Debian
package installs for the system interpreter."""
import sys

try:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om
    from prometheus_client.parser import text_string_to_metric_families as parse_text
except ImportError:
    print('check_openmetrics: python3-prometheus-client not installed', file=sys.stderr)
    sys.exit(77)


def samples(families, extras=None):
    """The samples by (name, labels), without `_created`; extras counts those and exemplars."""
    out = {}
    for family in families:
        for s in family.samples:
            if extras is not None and s.exemplar is not None:
                extras['exemplars'] += 1
            if s.name.endswith('_created'):
                if extras is not None:
                    extras['created'] += 1
                continue
            key = (s.name, tuple(sorted(s.labels.items())))
            if key in out:
                raise SystemExit(f'duplicate series {key}')
            out[key] = s.value
    return out


def main(om_path, text_path, want=None, moving=()):
    with open(om_path, encoding='utf-8') as f:
        om_text = f.read()
    with open(text_path, encoding='utf-8') as f:
        text = f.read()
    extras = {'exemplars': 0, 'created': 0}
    om = samples(parse_om(om_text), extras)  # raises on any violation of the format
    plain = samples(parse_text(text))
    for what, n in (want or {}).items():
        if extras[what] != n:
            print(f'check_openmetrics: {extras[what]} {what}, want {n}', file=sys.stderr)
            return 1
    if not om:
        print('check_openmetrics: no samples', file=sys.stderr)
        return 1
    missing = [k for k in plain if k not in om]
    extra = [k for k in om if k not in plain]
    # The two scrapes are moments apart: the exporter's own and the process's series move.
    moving = ('nvmeof_exporter_', 'process_') + tuple(moving)
    differ = [k for k in om if k in plain and not k[0].startswith(moving) and
              not (om[k] == plain[k] or (om[k] != om[k] and plain[k] != plain[k]))]
    for what, keys in (('missing from OpenMetrics', missing), ('only in OpenMetrics', extra),
                       ('different value', differ)):
        for k in keys[:5]:
            print(f'check_openmetrics: {what}: {k}', file=sys.stderr)
    if missing or extra or differ:
        return 1
    print(f'check_openmetrics: {len(om)} samples parse as OpenMetrics 1.0, the same as text'
          f' ({extras["exemplars"]} exemplars, {extras["created"]} _created)')
    return 0


def cli(argv):
    want, args, moving = {}, [], []
    while argv:
        arg = argv.pop(0)
        if arg in ('--exemplars', '--created') and argv and argv[0].isdigit():
            want[arg[2:]] = int(argv.pop(0))
        elif arg == '--moving' and argv:
            moving.append(argv.pop(0))
        else:
            args.append(arg)
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    return main(args[0], args[1], want, moving)


if __name__ == '__main__':
    sys.exit(cli(sys.argv[1:]))
