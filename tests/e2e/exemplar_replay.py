#!/usr/bin/env python3
"""A captured /metrics exposition with exemplars (tests/fixtures/exposition/), replayed to a real
Prometheus and checked on its side, for tests/e2e/test_exemplars.sh. A replay of a real capture,
not a live exporter: the same bodies on every scrape.

  exemplar_replay.py serve [--timestamps=captured|now|UNIX_SECONDS] OM_FILE PB_FILE
      Serves OM_FILE (OpenMetrics 1.0 text) or PB_FILE (delimited protobuf) on /metrics, per each
      request's Accept header: protobuf when it asks for it, else OpenMetrics, with the
      Content-Type the exporter sent. Prints the port it listens on (127.0.0.1, kernel-chosen),
      then serves until killed; one line per request on stderr: the format served, the Accept.
      --timestamps: captured (the default) serves the exemplars' timestamps as captured; now
      makes each the time of the request (OpenMetrics: the exemplar's trailing timestamp;
      protobuf: Exemplar.timestamp in Bucket.exemplar and Histogram.exemplars); a number, that
      time. (Prometheus 2.42 and 3.5 store an exemplar of any age: none is checked against the
      head's time range, only against the series' newest exemplar.)

  exemplar_replay.py check classic|native|none OM_FILE PB_FILE < query_exemplars.json
      Checks a /api/v1/query_exemplars answer against the capture's exemplars. classic: every
      exemplar of OM_FILE (a _bucket series) is there, on its series (labels and le), with its
      command label, value and timestamp (to the millisecond Prometheus keeps); native: the
      exemplars of PB_FILE's native histograms (Histogram.exemplars, or Bucket.exemplar), on
      their series; none: the answer holds no exemplar. Only the capture's exemplars may be
      there. Prints what it found; exits 1 on a mismatch.

Prometheus 3.5.3 ingests the Histogram.exemplars of only the first native histogram of a
metric family that has no classic buckets (its protobuf parser does not reset its exemplar
position between a family's native histograms; reversing the capture's series order moves the
loss to the other one): `check native` requires the family's first series with exemplars and
prints a NOTE for each later one that is missing (an error if it is there but differs).
"""
import json
import math
import os
import re
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from testlib import (delimited, encode_varint, field, fields, parse_labels,  # noqa: E402
                     serve_metrics, wants_protobuf)

OM_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores"
PB_TYPE = ("application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
           "encoding=delimited; escaping=underscores")
# An OpenMetrics exemplar at the end of a sample line: ` # {labels} value timestamp`.
_OM_EXEMPLAR_TS = re.compile(rb"( # \{[^}]*\} \S+) \S+$", re.M)
_OM_EXEMPLAR = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} \S+ # \{(.*)\} (\S+)(?: (\S+))?$")

# io.prometheus.client field numbers: MetricFamily name 1, metric 4; Metric label 1 (LabelPair
# name 1, value 2), histogram 7; Histogram bucket 8 (Bucket.exemplar 3), exemplars 16;
# Exemplar label 1, value 2 (double), timestamp 3 (seconds 1, nanos 2).
_EDITS = {"family": {4: "metric"}, "metric": {7: "histogram"},
          "histogram": {8: "bucket", 16: "exemplar"}, "bucket": {3: "exemplar"}}


def reencode(msg, kind, stamp):
    """MSG (a message of KIND) with every exemplar's timestamp set to STAMP (Timestamp bytes)."""
    out = bytearray()
    for num, wt, value in fields(msg):
        if kind == "exemplar" and num == 3:
            out += field(3, 2, stamp)
            continue
        sub = _EDITS.get(kind, {}).get(num)
        if sub and wt == 2:
            value = reencode(value, sub, stamp)
        out += field(num, wt, encode_varint(value) if wt == 0 else value)
    return bytes(out)


def om_at(body, at):
    return _OM_EXEMPLAR_TS.sub(lambda m: m.group(1) + b" %.3f" % at, body)


def pb_at(body, at):
    seconds, nanos = int(at), int((at - int(at)) * 1e9)
    stamp = field(1, 0, encode_varint(seconds)) + field(2, 0, encode_varint(nanos))
    out = bytearray()
    for msg in delimited(body):
        msg = reencode(msg, "family", stamp)
        out += encode_varint(len(msg)) + msg
    return bytes(out)


def serve(argv):
    mode, args = "captured", []
    for a in argv:
        if a.startswith("--timestamps="):
            mode = a.split("=", 1)[1]
        else:
            args.append(a)
    if len(args) != 2 or not (mode in ("captured", "now") or re.match(r"^\d+(\.\d+)?$", mode)):
        sys.exit(__doc__)
    with open(args[0], "rb") as f:
        om = f.read()
    with open(args[1], "rb") as f:
        pb = f.read()

    def respond(handler):
        if handler.path.split("?")[0] != "/metrics":
            return None
        proto = wants_protobuf(handler)
        print("served %s accept=%s" % ("protobuf" if proto else "openmetrics",
                                       handler.headers.get("Accept", "")),
              file=sys.stderr, flush=True)
        at = None if mode == "captured" else time.time() if mode == "now" else float(mode)
        if proto:
            return (pb if at is None else pb_at(pb, at)), PB_TYPE
        return (om if at is None else om_at(om, at)), OM_TYPE

    serve_metrics(respond, threaded=True)


# --- check


def om_exemplars(path):
    """[(series labels dict with __name__, {command...}, value, timestamp s)] of an OM body."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = _OM_EXEMPLAR.match(line.rstrip("\n"))
            if m:
                labels = dict(parse_labels(m.group(2)), __name__=m.group(1))
                ts = float(m.group(5)) if m.group(5) else None
                out.append((labels, dict(parse_labels(m.group(3))), float(m.group(4)), ts))
    return out


def _pb_exemplar(msg):
    labels, value, ts = {}, None, None
    for num, wt, v in fields(msg):
        if num == 1 and wt == 2:
            pair = {n: x.decode() for n, _, x in fields(v)}
            labels[pair.get(1, "")] = pair.get(2, "")
        elif num == 2 and wt == 1:
            value = struct.unpack("<d", v)[0]
        elif num == 3 and wt == 2:
            t = {n: x for n, _, x in fields(v)}
            ts = t.get(1, 0) + t.get(2, 0) / 1e9
    return labels, value, ts


def pb_exemplars(path):
    """As om_exemplars, for the native histograms of a protobuf body (no le label), in order."""
    out = []
    with open(path, "rb") as f:
        body = f.read()
    for msg in delimited(body):
        fam = list(fields(msg))
        name = next((v.decode() for n, _, v in fam if n == 1), "")
        for metric in (v for n, _, v in fam if n == 4):
            labels, found = {"__name__": name}, []
            for num, _, v in fields(metric):
                if num == 1:
                    pair = {n: x.decode() for n, _, x in fields(v)}
                    labels[pair.get(1, "")] = pair.get(2, "")
                elif num == 7:
                    for hnum, _, hv in fields(v):
                        if hnum == 16:
                            found.append(_pb_exemplar(hv))
                        elif hnum == 8:
                            found += [_pb_exemplar(x) for n, _, x in fields(hv) if n == 3]
            out += [(labels, ex, value, ts) for ex, value, ts in found]
    return out


def check(argv):
    if len(argv) != 3 or argv[0] not in ("classic", "native", "none"):
        sys.exit(__doc__)
    kind, om_path, pb_path = argv
    answer = json.load(sys.stdin)
    if answer.get("status") != "success":
        print("query_exemplars failed: %s" % answer)
        return 1
    got = answer["data"]
    total = sum(len(s["exemplars"]) for s in got)
    if kind == "none":
        print("%d exemplars (want none)" % total)
        return 0 if total == 0 else 1
    want = om_exemplars(om_path) if kind == "classic" else pb_exemplars(pb_path)
    if not want:
        print("the capture holds no exemplar (%s)" % (om_path if kind == "classic" else pb_path))
        return 1
    errors, matched, notes = [], set(), []
    first = {}  # family name -> index of its first exemplar in the capture
    for i, (labels, _, _, _) in enumerate(want):
        first.setdefault(labels["__name__"], i)
    for i, (labels, ex, value, ts) in enumerate(want):
        series = [s for s in got if all(s["seriesLabels"].get(k) == v for k, v in labels.items())
                  and ("le" in labels or "le" not in s["seriesLabels"])]
        what = "%s{%s} %s" % (labels["__name__"], ",".join(
            '%s="%s"' % (k, v) for k, v in labels.items() if k != "__name__"), ex)
        hit = [e for s in series for e in s["exemplars"] if e["labels"] == ex]
        ok = [e for e in hit if math.isclose(float(e["value"]), value, rel_tol=0, abs_tol=1e-9)
              and (ts is None or abs(e["timestamp"] - ts) < 0.001)]
        if ok:
            matched.add(i)
            print("ok: %s %s at %s" % (what, ok[0]["value"], ok[0]["timestamp"]))
        elif hit:
            errors.append("%s: value/timestamp %s, want %s at %s" % (what, hit, value, ts))
        elif kind == "native" and i != first[labels["__name__"]]:
            notes.append("NOTE: %s not ingested (Prometheus' protobuf parser: only the first "
                         "native histogram of a family keeps its Histogram.exemplars)" % what)
        else:
            errors.append("%s: missing (series found: %d)" % (what, len(series)))
    # Only the capture's exemplars: nothing Prometheus invented or moved to another series.
    commands = {json.dumps(ex, sort_keys=True) for _, ex, _, _ in want}
    extra = [e["labels"] for s in got for e in s["exemplars"]
             if json.dumps(e["labels"], sort_keys=True) not in commands]
    if extra:
        errors.append("exemplars not in the capture: %s" % extra[:3])
    for line in notes + ["FAIL: " + e for e in errors]:
        print(line)
    print("%s: %d of the capture's %d exemplars found, %d in the answer"
          % (kind, len(matched), len(want), total))
    return 1 if errors else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        serve(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2:]))
    else:
        sys.exit(__doc__)
