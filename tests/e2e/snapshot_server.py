#!/usr/bin/env python3
"""Serves /metrics for `top` tests: the first request gets SNAPSHOT1, every later one SNAPSHOT2
(.gz files are decompressed). Prints the port it listens on, then serves until killed.
   snapshot_server.py SNAPSHOT1 SNAPSHOT2"""
import gzip
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from testlib import TEXT_TYPE, serve_metrics  # noqa: E402


def load(path):
    data = open(path, 'rb').read()
    return gzip.decompress(data) if path.endswith('.gz') else data


SNAPS = [load(sys.argv[1]), load(sys.argv[2])]
served = 0


def respond(_handler):
    global served
    body = SNAPS[min(served, 1)]
    served += 1
    return body, TEXT_TYPE


serve_metrics(respond, close=True)
