#!/usr/bin/env python3
"""Fails on a /metrics text that Prometheus would reject whole: a line that is not a sample or
a comment, or a series (name and label set) served twice. Usage: check_series.py FILE...
Exit 0 with one ok line per file; else exit 1 with one FAIL line per file that is wrong."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from testlib import parse_text  # noqa: E402


def main(paths):
    bad = 0
    for p in paths:
        try:
            with open(p, encoding="utf-8", errors="surrogateescape") as f:
                n = len(parse_text(f.read(), p))
        except ValueError as e:  # DuplicateSeries too
            print("FAIL:", e)
            bad += 1
            continue
        print(f"ok: {p}: {n} samples, no duplicate series")
    return 1 if bad or not paths else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
