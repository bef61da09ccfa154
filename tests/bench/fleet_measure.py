#!/usr/bin/env python3
"""The measurements of fleet_bench.sh (python3 stdlib only).

  fleet_measure.py measure --prom URL --pid PID --nodes N --mode MODE --out FILE.json
      [--version 2.42|3.5] [--load-start "1m 5m 15m"] [--baseline-rss BYTES] [--reps R] [--range 1h] [--step 15s] [--instance NODE]
      Reads one settled Prometheus: head series, RSS, per-scrape samples and body bytes by node
      kind (first letter of the instance: h host, t target, b both, r node_exporter), rule group
      evaluation times against their intervals (/api/v1/rules evaluationTime, and the
      prometheus_rule_group_last_duration_seconds metric beside it), and the latency of every dashboard panel query
      (dashboards/*.json, variables as Grafana sets them: instance = one node, every other
      query variable All, i.e. its values for that node as a regex, variable_values())
      run as a range query over --range, R times each: p50 and p99 per query.
  fleet_measure.py table FILE.json...
      One table: every figure per node, the ratio to the node_exporter run of the same N and
      Prometheus version, and issue 32's budgets (met or missed, by how much, or not measured).
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


def grafana_regex(values):
    """A multi-value or All variable as Grafana's Prometheus data source writes it into a
    query: each value regex-escaped, one alone, several as (a|b), none as () (which matches only
    an empty label)."""
    esc = [re.sub(r"([\\^$*+?.()|{}\[\]])", r"\\\\\1", v) for v in values]
    return esc[0] if len(esc) == 1 else "(" + "|".join(esc) + ")"


def variable_values(d, instance, run):
    """The dashboard's variables as Grafana sets them on opening it: instance = one node; every
    other query variable its values for that node, in order (one may use the ones before),
    all selected (All), or its first value, unescaped, where it is single-select. run(promql) answers an
    instant query."""
    values = {"instance": instance}
    for v in d.get("templating", {}).get("list", []):
        if v.get("type") != "query" or v["name"] in values:
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        promql, label = dc.label_values_to_promql(dc.substitute(q, values))
        if promql is None:
            continue  # not label_values(...): left to dc.substitute (.*)
        found = sorted({r["metric"].get(label, "") for r in run(promql)} - {""})
        multi = v.get("multi") or v.get("includeAll")  # else single-select: its value as is
        values[v["name"]] = grafana_regex(found) if multi else (found[:1] or [""])[0]
    return values


def dashboard_queries(prom, instance):
    for name, d in dc.load_dashboards(DASH):
        values = variable_values(d, instance, lambda e: query(prom, e))
        for p in dc.all_panels(d):
            for t in p.get("targets", []):
                yield (f"{name} #{p['id']} {p['title']} {t['refId']}",
                       dc.substitute(t["expr"], values))


def measure(a):
    prom = a.prom.rstrip("/")
    res = {"mode": a.mode, "nodes": a.nodes, "version": a.version, "time": time.time(),
           "load_start": a.load_start.split(),
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
    res["rules_read_at"] = time.time()
    groups = json.loads(get(prom + "/api/v1/rules"))["data"]["groups"]
    last = {}  # prometheus_rule_group_last_duration_seconds{rule_group="FILE;GROUP"}
    for line in get(prom + "/metrics").decode().splitlines():
        m = re.match(r'prometheus_rule_group_last_duration_seconds\{rule_group="[^"]*;([^"]*)"\} (\S+)', line)
        if m:
            last[m.group(1)] = max(last.get(m.group(1), 0.0), float(m.group(2)))
    res["rule_groups"] = [{"name": g["name"], "interval": g["interval"],
                           "seconds": g.get("evaluationTime", 0.0),
                           "last_duration_metric": last.get(g["name"]),
                           "last_evaluation": g.get("lastEvaluation"),
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
    for where, expr in dashboard_queries(prom, a.instance) if a.reps else ():
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
    res["load_end"] = open("/proc/loadavg").read().split()[:3]
    res["queries_not_run"] = skipped  # past --deadline: named in the table, never hidden
    res["reps"] = a.reps
    res["range"] = a.range
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    slow = sorted(queries, key=lambda q: -q["p99"])[:5]
    print(f"{a.version} {a.mode} N={a.nodes}: {len(queries)} dashboard queries x {a.reps}; slowest p99: " +
          ", ".join(f"{q['p99'] * 1e3:.0f} ms ({q['where']})" for q in slow[:3]))
    empty = [q["where"] for q in queries if q["series"] == 0]
    if empty:
        print(f"  {len(empty)} queries returned no series (e.g. {empty[0]})")


def rfc3339(t):
    """Seconds since the epoch of Prometheus' lastEvaluation (nanoseconds cut to micro)."""
    import datetime
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z", t or "")
    if not m or m.group(1).startswith("0001"):
        return None
    frac = float("0" + m.group(2)) if m.group(2) else 0.0
    return datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(
        tzinfo=datetime.timezone.utc).timestamp() + frac


def share(r, g):
    """(seconds, lower_bound): a group's evaluation time. A group whose last evaluation is older
    than its interval allows is still evaluating when read: the evaluation under way started no
    later than one interval after the last one ended, so it has run at least
    read_at - (lastEvaluation + evaluationTime + interval) seconds; when that is longer than the
    last evaluationTime it is the figure, as a lower bound (">=")."""
    sec, iv = g["seconds"], float(g["interval"])
    last = rfc3339(g.get("last_evaluation"))
    read_at = r.get("rules_read_at") or r["time"] + 60.0
    if last is None:
        return sec, False
    running = read_at - (last + sec + iv)
    return (running, True) if running > sec else (sec, False)


def table(files):
    runs = [json.load(open(f)) for f in files]
    for r in runs:
        r.setdefault("version", "2.42")
    key = lambda r: (r["nodes"], r["version"])  # noqa: E731
    ref = {key(r): r for r in runs if r["mode"] == "node_exporter"}
    rows = []
    hdr = ["N", "prom", "mode", "head series/node", "x ref", "RSS/node MiB", "x ref", "bytes/scrape",
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
        rb = ref.get(key(r))
        ratio = (lambda x, y: f"{x / y:.2f}" if rb and y else "-")
        ref_series = rb["head_series"] / n if rb else 0
        ref_rss = (rb["rss"] - (rb.get("baseline_rss") or 0)) / n if rb else 0
        ref_body = rb["body_bytes"].get("r", 0) if rb else 0
        evals = [share(r, g)[0] / float(g["interval"]) * 100 for g in r["rule_groups"]]
        cpu = r.get("cpu_cores", 0) / n * 1000
        ref_cpu = rb.get("cpu_cores", 0) / n * 1000 if rb else 0
        q = r["queries"]
        rows.append([str(n), r["version"], r["mode"], f"{series:,.0f}", ratio(series, ref_series),
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
        print(f"  N={r['nodes']} {r['version']} {r['mode']}: " + ", ".join(
            f"{KINDS.get(k, k)} {v:,.0f}" for k, v in sorted(r["samples_per_scrape"].items())) +
            f"; up {r['up']:.0f}/{r['nodes']}; load {' '.join(r.get('load_start', []))} at start, "
            f"{' '.join(r['loadavg'])} when measured, {' '.join(r.get('load_end', []))} at the end, "
            f"on {r['cpus']} CPUs")
    print()
    print("budgets (issue 32; met / MISSED by how much / not measured):")
    for r in runs:
        n, mode, ver = r["nodes"], r["mode"], r["version"]
        if mode == "node_exporter":
            continue
        rb = ref.get(key(r))
        tag = f"  N={n} {ver} {mode}:"
        checks = []
        if rb:
            ref_rss = (rb["rss"] - (rb.get("baseline_rss") or 0)) / n
            rssn = (r["rss"] - (r.get("baseline_rss") or 0)) / n
            checks.append(("CPU/1k nodes <= 3x node_exporter's",
                           r.get("cpu_cores", 0) / rb["cpu_cores"] if rb.get("cpu_cores") else None, 3.0))
            checks.append(("head series/node <= 2x node_exporter's",
                           r["head_series"] / rb["head_series"], 2.0))
            checks.append(("RSS/node <= 3x node_exporter's", rssn / ref_rss if ref_rss > 0 else None, 3.0))
        else:
            for name in ("CPU/1k nodes <= 3x node_exporter's", "head series/node <= 2x node_exporter's",
                         "RSS/node <= 3x node_exporter's"):
                checks.append((name + " (no reference run)", None, 1))
        evals = [share(r, g)[0] / float(g["interval"]) for g in r["rule_groups"]]
        checks.append(("every rule group <= 10% of its interval (>= where still evaluating)",
                       max(evals) * 100 if evals else None, 10.0))
        checks.append((f"every dashboard query p99 <= 1 s ({r.get('range', '1h')})",
                       max(x["p99"] for x in r["queries"]) if r["queries"] else None, 1.0))
        for name, got, limit in checks:
            if got is None:
                print(f"{tag} {name}: not measured")
                continue
            verdict = "met" if got <= limit else f"MISSED by {got / limit:.2f}x"
            print(f"{tag} {name}: {got:,.3g} -> {verdict}")
        groups = sorted(r["rule_groups"], key=lambda g: -share(r, g)[0] / float(g["interval"]))
        print(f"{tag} rule groups, evaluation time / interval (share; >= = still evaluating when "
              "read, time so far): " + ", ".join(
                  f"{g['name']} {'>=' if share(r, g)[1] else ''}{share(r, g)[0]:.3f}s/"
                  f"{float(g['interval']):.0f}s ({share(r, g)[0] / float(g['interval']) * 100:.1f}%)"
                  for g in groups))
        late = [g["name"] for g in r["rule_groups"] if g.get("never_evaluated")]
        if late:
            print(f"{tag} not evaluated yet when measured (settle longer): {', '.join(late)}")
        bad = [g["name"] + ": " + "; ".join(g["unhealthy"]) for g in r["rule_groups"] if g["unhealthy"]]
        if bad:
            print(f"{tag} rules not healthy: {'; '.join(bad)}")
        if r.get("queries_not_run"):
            print(f"{tag} {r['queries_not_run']} of {r['queries_not_run'] + len(r['queries'])} "
                  f"dashboard queries NOT RUN (past the --deadline); the p99 above is of the others")
        err = [x for x in r["queries"] if x["error"]]
        if err:
            print(f"{tag} {len(err)} dashboard queries failed, e.g. {err[0]['where']}: "
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
    ap.add_argument("--version", default="2.42")
    ap.add_argument("--load-start", default="")
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
