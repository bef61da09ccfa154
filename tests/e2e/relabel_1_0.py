#!/usr/bin/env python3
"""Rewrites a /metrics text from the pre-1.0 label model to metric model 1.0 (docs/metrics.md "Migration").

Used once on the recorded scrapes under tests/fixtures (they come from real kernels and cannot be
re-recorded here); kept as the executable form of the migration table. Reads stdin, writes stdout.
Metric names must already be 1.0 names (nvmeof_rdma_*, ...).
"""
import re
import sys

RDMA = {'device': 'rdma_device', 'port': 'rdma_port', 'severity': 'level'}
STAGES = {'device': 'nvme_namespace', 'subsystem': 'nqn', 'port': 'nvmet_port'}
HOST_INFO = {'subsystem': 'nvme_subsystem', 'namespace': 'nvme_namespace', 'subsysnqn': 'nqn'}
TARGET = {'subsystem': 'nqn', 'port': 'nvmet_port', 'host': 'hostnqn'}


def mapping(name):
    if name.startswith('nvmeof_rdma_'):
        return RDMA
    if name.startswith('nvmeof_block_'):
        return {'device': 'disk'}
    if re.match(r'nvmeof_(commands_total|stage_latency_seconds|command_latency_seconds)', name):
        return STAGES
    if re.match(r'nvmeof_(subsystem|namespace|controller|path)_', name):
        return HOST_INFO
    if name.startswith('nvmeof_target_'):
        return TARGET
    if name.startswith('nvmeof_tcp_connection'):
        return {'port': 'tcp_port'}
    return {}


def relabel(line):
    m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\}(.*)$', line)
    if not m or line.startswith('#'):
        return line
    name, labels, rest = m.groups()
    names = mapping(name)
    labels = re.sub(r'(^|,)([a-zA-Z_][a-zA-Z0-9_]*)="',
                    lambda l: l.group(1) + names.get(l.group(2), l.group(2)) + '="', labels)
    return '%s{%s}%s' % (name, labels, rest)


if __name__ == '__main__':
    for line in sys.stdin:
        sys.stdout.write(relabel(line.rstrip('\n')) + '\n')
