#!/usr/bin/env python3
"""Checks a delimited protobuf /metrics body (io.prometheus.client.MetricFamily, varint length
prefixes): every message is whole, decodes with protoc against client_model's metrics.proto, and
every string in it (names, help, label names and values) is valid UTF-8. metrics.proto is proto2,
where protoc does not check UTF-8 itself, so the decoded text's escapes are checked here.
Exit 0 when valid; else one line saying what is wrong.
  protobuf_check.py BODY [CLIENT_MODEL_DIR]"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from testlib import delimited  # noqa: E402

PROTO_DIR = (sys.argv[2] if len(sys.argv) > 2
             else "/usr/share/gocode/src/github.com/prometheus/client_model")
STRING = re.compile(r'^\s*(name|help|value|unit): "((?:[^"\\]|\\.)*)"$')


def unescape(s):
    """C-style escapes as protoc prints them, to bytes."""
    out, i = bytearray(), 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        n = s[i + 1]
        if n in "01234567":
            j = i + 1
            while j < len(s) and j < i + 4 and s[j] in "01234567":
                j += 1
            out.append(int(s[i + 1:j], 8))
            i = j
        elif n == "x":
            j = i + 2
            while j < len(s) and j < i + 4 and s[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(s[i + 2:j], 16))
            i = j
        else:
            out += {"n": b"\n", "t": b"\t", "r": b"\r", "\\": b"\\", '"': b'"', "'": b"'"}.get(
                n, n.encode())
            i += 2
    return bytes(out)


def main():
    body = open(sys.argv[1], "rb").read()
    try:
        messages = list(delimited(body))
    except ValueError as e:
        print(e)
        return 1
    for count, message in enumerate(messages):
        r = subprocess.run(["protoc", "--proto_path=" + PROTO_DIR,
                            "--decode=io.prometheus.client.MetricFamily",
                            "io/prometheus/client/metrics.proto"],
                           input=message, capture_output=True)
        if r.returncode != 0 or r.stderr:
            print("message %d: protoc: %s" % (count, r.stderr.decode(errors="replace").strip()))
            return 1
        for line in r.stdout.decode("ascii", errors="replace").splitlines():
            m = STRING.match(line)
            if not m:
                continue
            raw = unescape(m.group(2))
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                print("message %d: invalid UTF-8 in %s: %r" % (count, m.group(1), raw[:80]))
                return 1
            if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text) and m.group(1) != "help":
                print("message %d: control character in %s: %r" % (count, m.group(1), text[:80]))
                return 1
    if not messages:
        print("no messages")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
