#!/usr/bin/env python3
"""The measurements of fleet_bench.sh (python3 stdlib only).

  fleet_measure.py measure --prom URL --pid PID --nodes N --mode MODE --out FILE.json
      [--baseline-rss BYTES] [--reps R] [--range 1h] [--step 15s] [--instance NODE]
      Reads one settled Prometheus: head series, RSS, per-scrape samples and body bytes by node
      kind (first letter of the instance: h host, t target, b both, r node_exporter), rule group
      evaluation times against their intervals, and the latency of every dashboard panel query
      (dashboards/*.json, variables as Grafana sets them: instance = one node, the rest All)
      run as a range query over --range, R times each: p50 and p99 per query.
  fleet_measure.py table FILE.json...
      One table: every figure per node, the ratio to the node_exporter run of the same N, and
      the issue's budgets (met or missed, by how much).
"""
import json
import os
import re
import statistics
import sys
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import dashboards_check as dc  # noqa: E402

DASH = os.path.join(HERE, "..", "..", "dashboards")
KINDS = {"h": "host 4x8", "t": "target 16 subsys", "b": "host+target", "r": "node_exporter"}


def get(url, params=None, timeout=120):
    if params:
        url += "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


def query(prom, expr):
    body = json.loads(get(prom + "/api/v1/query", {"query": expr}))
    return body["data"]["result"]


def self_metric(prom, name):
    for line in get(prom + "/metrics").decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return None


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid):
    """utime + stime of a process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def by_kind(prom, expr):
    out = {}
    for r in query(prom, expr):
        out.setdefault(r["metric"].get("instance", "?")[0], []).append(float(r["value"][1]))
    return {k: statistics.mean(v) for k, v in out.items()}


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def dashboard_queries(instance):
    for name, d in dc.load_dashboards(DASH):
        for p in dc.all_panels(d):
            for t in p.get("targets", []):
                yield (f"{name} #{p['id']} {p['title']} {t['refId']}",
                       dc.substitute(t["expr"], {"instance": instance}))


def measure(a):
    prom = a.prom.rstrip("/")
    res = {"mode": a.mode, "nodes": a.nodes, "time": time.time(),
           "loadavg": open("/proc/loadavg").read().split()[:3], "cpus": os.cpu_count()}
    # CPU in steady state (scrapes, ingestion, rule evaluations; no queries): the figure a busy
    # machine does not distort the way it does wall-clock times.
    c0, t0 = cpu_seconds(a.pid), time.time()
    time.sleep(a.cpu_window)
    res["cpu_cores"] = (cpu_seconds(a.pid) - c0) / (time.time() - t0)
    res["head_series"] = self_metric(prom, "prometheus_tsdb_head_series")
    res["rss"] = rss(a.pid)
    res["baseline_rss"] = a.baseline_rss
    res["samples_per_scrape"] = by_kind(prom, "scrape_samples_scraped")
    res["body_bytes"] = by_kind(prom, "scrape_body_size_bytes")
    res["scrape_seconds"] = by_kind(prom, "scrape_duration_seconds")
    res["up"] = sum(float(r["value"][1]) for r in query(prom, "up"))
    groups = json.loads(get(prom + "/api/v1/rules"))["data"]["groups"]
    res["rule_groups"] = [{"name": g["name"], "interval": g["interval"],
                           "seconds": g.get("evaluationTime", 0.0),
                           "unhealthy": [r["name"] + ": " + (r.get("lastError") or "")[:120]
                                         for r in g["rules"] if r.get("health") == "err"],
                           "never_evaluated": [r["name"] for r in g["rules"]
                                               if r.get("health") == "unknown"]}
                          for g in groups]
    end = time.time()
    rng = {"1h": 3600, "24h": 86400}[a.range]
    queries = []
    deadline = time.time() + a.deadline
    skipped = 0
    for where, expr in dashboard_queries(a.instance) if a.reps else ():
        if time.time() > deadline:
            skipped += 1
            continue
        times, err, nres = [], None, 0
        for _ in range(a.reps):
            t = time.perf_counter()
            try:
                body = json.loads(get(prom + "/api/v1/query_range", {
                    "query": expr, "start": end - rng, "end": end, "step": a.step}))
                nres = len(body["data"]["result"])
            except Exception as e:  # noqa: BLE001 (reported, not hidden)
                err = str(e)[:200]
            times.append(time.perf_counter() - t)
        queries.append({"where": where, "p50": pct(times, 50), "p99": pct(times, 99),
                        "series": nres, "error": err})
    res["queries"] = queries
    res["queries_not_run"] = skipped  # past --deadline: named in the table, never hidden
    res["reps"] = a.reps
    res["range"] = a.range
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    slow = sorted(queries, key=lambda q: -q["p99"])[:5]
    print(f"{a.mode} N={a.nodes}: {len(queries)} dashboard queries x {a.reps}; slowest p99: " +
          ", ".join(f"{q['p99'] * 1e3:.0f} ms ({q['where']})" for q in slow[:3]))
    empty = [q["where"] for q in queries if q["series"] == 0]
    if empty:
        print(f"  {len(empty)} queries returned no series (e.g. {empty[0]})")


def table(files):
    runs = [json.load(open(f)) for f in files]
    ref = {r["nodes"]: r for r in runs if r["mode"] == "node_exporter"}
    rows = []
    hdr = ["N", "mode", "head series/node", "x ref", "RSS/node MiB", "x ref", "bytes/scrape",
           "x ref", "CPU cores/1k nodes", "x ref", "rule eval max % of interval",
           "dash p50 ms (median)", "dash p99 ms (worst)"]
    for r in runs:
        n = r["nodes"]
        base = r.get("baseline_rss") or 0
        series = r["head_series"] / n
        rssn = (r["rss"] - base) / n
        kinds = r["samples_per_scrape"]
        body = sum(r["body_bytes"].values()) / max(1, len(r["body_bytes"]))
        # Mean body over nodes, weighted by how many nodes of each kind (h 1/2, t 1/4, b 1/4).
        if set(r["body_bytes"]) >= {"h", "t", "b"}:
            bb = r["body_bytes"]
            body = 0.5 * bb["h"] + 0.25 * bb["t"] + 0.25 * bb["b"]
        rb = ref.get(n)
        ratio = (lambda x, y: f"{x / y:.2f}" if rb and y else "-")
        ref_series = rb["head_series"] / n if rb else 0
        ref_rss = (rb["rss"] - (rb.get("baseline_rss") or 0)) / n if rb else 0
        ref_body = rb["body_bytes"].get("r", 0) if rb else 0
        evals = [g["seconds"] / float(g["interval"]) * 100 for g in r["rule_groups"]]
        cpu = r.get("cpu_cores", 0) / n * 1000
        ref_cpu = rb.get("cpu_cores", 0) / n * 1000 if rb else 0
        q = r["queries"]
        rows.append([str(n), r["mode"], f"{series:,.0f}", ratio(series, ref_series),
                     f"{rssn / 2**20:.2f}", ratio(rssn, ref_rss), f"{body:,.0f}",
                     ratio(body, ref_body), f"{cpu:.2f}", ratio(cpu, ref_cpu),
                     f"{max(evals):.2f}" if evals else "-",
                     f"{statistics.median(x['p50'] for x in q) * 1e3:.0f}" if q else "-",
                     f"{max(x['p99'] for x in q) * 1e3:.0f}" if q else "-"])
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(hdr)]
    line = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths))  # noqa: E731
    print(line(hdr))
    for row in rows:
        print(line(row))
    print()
    print("samples per scrape by node kind (= series per node; a native histogram is one):")
    for r in runs:
        print(f"  N={r['nodes']} {r['mode']}: " + ", ".join(
            f"{KINDS.get(k, k)} {v:,.0f}" for k, v in sorted(r["samples_per_scrape"].items())) +
            f"; up {r['up']:.0f}/{r['nodes']}; load {' '.join(r['loadavg'])} on {r['cpus']} CPUs")
    print()
    print("budgets (issue 24):")
    for r in runs:
        n, k, mode = r["nodes"], r["samples_per_scrape"], r["mode"]
        rb = ref.get(n)
        checks = []
        if mode == "native" and "h" in k:
            checks.append(("host node series <= 1,000", k["h"], 1000))
        if mode == "text" and "h" in k:
            checks.append(("host node series (text) <= 10,000", k["h"], 10000))
        if mode in ("native", "text") and rb:
            ref_rss = (rb["rss"] - (rb.get("baseline_rss") or 0)) / n
            rssn = (r["rss"] - (r.get("baseline_rss") or 0)) / n
            checks.append(("RSS/node <= 3x node_exporter's", rssn / ref_rss, 3.0))
        if mode in ("native", "text"):
            evals = [g["seconds"] / float(g["interval"]) for g in r["rule_groups"]]
            if evals:
                checks.append(("rule evaluation <= 10% of interval", max(evals) * 100, 10.0))
            if r["queries"]:
                checks.append((f"dashboard query p99 <= 1 s ({r['range']})",
                               max(x["p99"] for x in r["queries"]), 1.0))
        for name, got, limit in checks:
            verdict = "met" if got <= limit else f"MISSED by {got / limit:.2f}x"
            print(f"  N={n} {mode}: {name}: {got:,.3g} -> {verdict}")
        evals = sorted(r["rule_groups"], key=lambda g: -g["seconds"] / float(g["interval"]))
        if evals and mode != "node_exporter":
            print(f"  N={n} {mode}: rule groups, evaluation time / interval: " + ", ".join(
                f"{g['name']} {g['seconds']:.2f}s/{g['interval']:.0f}s" for g in evals[:3]))
        late = [g["name"] for g in r["rule_groups"] if g.get("never_evaluated")]
        if late:
            print(f"  N={n} {mode}: not evaluated yet when measured (settle longer): {', '.join(late)}")
        bad = [g["name"] + ": " + "; ".join(g["unhealthy"]) for g in r["rule_groups"] if g["unhealthy"]]
        if bad:
            print(f"  N={n} {mode}: rules not healthy: {'; '.join(bad)}")
        if r.get("queries_not_run"):
            print(f"  N={n} {mode}: {r['queries_not_run']} of {r['queries_not_run'] + len(r['queries'])} "
                  f"dashboard queries NOT RUN (past the --deadline); the p99 above is of the others")
        err = [x for x in r["queries"] if x["error"]]
        if err:
            print(f"  N={n} {mode}: {len(err)} dashboard queries failed, e.g. {err[0]['where']}: "
                  f"{err[0]['error']}")


def main(argv):
    if argv and argv[0] == "table":
        return table(argv[1:])
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["measure"])
    ap.add_argument("--prom", required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--mode", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--baseline-rss", type=int, default=0)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--cpu-window", type=float, default=60.0)
    ap.add_argument("--deadline", type=float, default=1800.0,
                    help="seconds for all dashboard queries; the rest are counted as not run")
    ap.add_argument("--range", default="1h", choices=["1h", "24h"])
    ap.add_argument("--step", default="15s")
    ap.add_argument("--instance", default="h00000")
    a = ap.parse_args(argv)
    if a.mode == "node_exporter":
        a.reps = 0  # no dashboard of ours reads node_exporter
    measure(a)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) or 0)
