#!/usr/bin/env python3
"""Metric model 1.0 (docs/metrics.md "Metric model 1.0"): every metric family of a /metrics text starts
with nvmeof_ (or is a client-library process_* metric), no name contains its type, and no label
is one that Prometheus, Kubernetes or alert routing own; and no series is served twice (same
name and label set: tests/pylib/testlib.py parse_text). Usage: check_metric_model.py FILE...
Exit 1 with one line per problem."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from testlib import parse_text  # noqa: E402

FORBIDDEN = {"namespace", "job", "instance", "pod", "node", "container", "service", "endpoint",
             "cluster", "severity"}
PROCESS = {"process_cpu_seconds_total", "process_resident_memory_bytes",
           "process_virtual_memory_bytes", "process_open_fds", "process_max_fds",
           "process_start_time_seconds"}
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")


def check(path):
    problems, families = [], set()
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            parse_text(f.read(), path)
    except ValueError as e:  # DuplicateSeries, or a line that is not a sample
        problems.append(str(e))
    for n, line in enumerate(open(path), 1):
        line = line.rstrip("\n")
        m = re.match(r"# TYPE (\S+) (\S+)", line)
        if m:
            families.add(m.group(1))
            continue
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s", line)
        if not m:
            problems.append(f"{path}:{n}: unparsable sample line")
            continue
        for label in re.findall(r'(?:^|,)([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(3) or ""):
            if label in FORBIDDEN:
                problems.append(f"{path}:{n}: {m.group(1)} has the forbidden label {label}")
    for f in sorted(families):
        if not (f.startswith("nvmeof_") or f in PROCESS):
            problems.append(f"{path}: metric {f} lacks the nvmeof_ prefix")
        for t in TYPES:
            if f"_{t}_" in f or f.endswith(f"_{t}"):
                problems.append(f"{path}: metric {f} names its type ({t})")
    if not families:
        problems.append(f"{path}: no metric families")
    return problems, len(families)


def main(paths):
    problems = []
    for p in paths:
        found, n = check(p)
        problems += found
        if not found:
            print(f"ok: {p}: {n} families, all nvmeof_ (or process_*), no forbidden label, "
                  "no duplicate series")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
