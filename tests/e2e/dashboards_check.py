#!/usr/bin/env python3
"""Checks for the Grafana dashboards and Prometheus rules (python3 stdlib only).

  dashboards_check.py lint DASHBOARD_DIR
      valid JSON, unique uids and panel ids, every panel has a unit, a description and targets,
      no hard-coded datasource uid (only ${datasource}), every $variable used is defined,
      datasource, job (or cluster) and single-select instance variables.
  dashboards_check.py eval --prom URL --time T DASHBOARD_DIR
      [--expect-firing ALERT]... [--expect-quiet ALERT]... [--expect-empty RULE]...
      [--only REGEX] [--var NAME=VALUE]...
      evaluates, through Prometheus' HTTP API at time T, every panel query and every template
      variable query of every dashboard, and every rule Prometheus loaded (/api/v1/rules).
      A query that returns nothing fails. Template variables become the regex-all `.*`,
      $__rate_interval becomes 1m (--var __rate_interval=5m sets it). Alert expressions are evaluated with their comparisons
      turned into `bool` comparisons (the quantities behind the alert must exist), and as
      written (whether the alert condition holds now: reported, and checked for the alerts
      named with --expect-firing / --expect-quiet). --expect-empty names rules that must return
      nothing on this Prometheus (the native-histogram rules on one that stores classic
      buckets, and the reverse), so both halves of a native/classic pair are checked; a panel
      or variable query that reads such a recorded series may return nothing too. --only
      evaluates just the variables, panel queries and rules whose expression matches REGEX;
      --var sets a template variable (default: the regex-all `.*`).
  dashboards_check.py names DASHBOARD_DIR RULES_FILE... -- SOURCE_FILE...
      every exporter metric a dashboard or rule uses is emitted somewhere in the sources (by
      its quoted name).
  dashboards_check.py rules-coverage RULES_FILE TEST_FILE...
      every alert of RULES_FILE has for, summary, description, severity and a runbook_url that
      ends in deploy/runbooks/<Alert>.md (and that file exists), and at least one promtool test
      case where it fires and one where it does not.
  dashboards_check.py recording-rules RECORDING_RULES ALERT_RULES... DASHBOARD_DIR
      every recording rule is named level:metric:operations and is read by a dashboard or an
      alert.
  dashboards_check.py recorded-first RULES_FILE... DASHBOARD_DIR
      no alert or rule of RULES_FILE and no dashboard panel reads a raw latency histogram
      (recorded first: only nvmeof-recording.rules.yml does); heatmap panels, which need the
      distribution itself, are the exception.
"""
import glob
import json
import os
import re
import sys
import urllib.parse
import urllib.request

GRAFANA_GLOBALS = {"__rate_interval": "1m", "__interval": "15s", "__range": "1h",
                   "__interval_ms": "15000", "__range_s": "3600"}


def fail_list(problems):
    for p in problems:
        print("FAIL: " + p, file=sys.stderr)
    return 1 if problems else 0


def load_dashboards(directory):
    out = []
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        with open(path) as f:
            out.append((os.path.basename(path), json.load(f)))
    return out


def all_panels(dash):
    for p in dash.get("panels", []):
        yield p
        for q in p.get("panels", []):  # panels inside collapsed rows
            yield q


def variables_used(text):
    return set(a or b for a, b in re.findall(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", text))


# --- lint -------------------------------------------------------------------------------------

def lint(directory):
    problems = []
    try:
        dashboards = load_dashboards(directory)
    except ValueError as e:
        return fail_list([f"invalid JSON: {e}"])
    if not dashboards:
        return fail_list([f"no dashboards in {directory}"])
    uids = {}
    for name, d in dashboards:
        where = name
        uid = d.get("uid")
        if not uid:
            problems.append(f"{where}: no uid")
        elif uid in uids:
            problems.append(f"{where}: uid {uid} also used by {uids[uid]}")
        uids[uid] = name
        if not d.get("title"):
            problems.append(f"{where}: no title")
        variables = {v.get("name"): v for v in d.get("templating", {}).get("list", [])}
        ds_var = variables.get("datasource")
        if not ds_var or ds_var.get("type") != "datasource" or ds_var.get("query") != "prometheus":
            problems.append(f"{where}: needs a 'datasource' variable of type datasource (prometheus)")
        if "job" not in variables and "cluster" not in variables:
            problems.append(f"{where}: needs a 'job' or 'cluster' variable (fleets)")
        inst = variables.get("instance")
        if not inst:
            problems.append(f"{where}: needs an 'instance' variable")
        elif inst.get("multi") or inst.get("includeAll"):
            problems.append(f"{where}: the 'instance' variable must be single-select by default")
        for vname, v in variables.items():
            if v.get("type") == "query":
                check_ds(v.get("datasource"), f"{where} variable {vname}", problems)
                q = v.get("query")
                q = q.get("query") if isinstance(q, dict) else q
                if not q:
                    problems.append(f"{where} variable {vname}: empty query")
                for used in variables_used(q or ""):
                    if used not in variables and used not in GRAFANA_GLOBALS:
                        problems.append(f"{where} variable {vname}: uses undefined ${used}")
        ids = set()
        for p in all_panels(d):
            pw = f"{where} panel {p.get('id')} '{p.get('title')}'"
            if "id" not in p:
                problems.append(f"{pw}: no id")
            elif p["id"] in ids:
                problems.append(f"{pw}: duplicate panel id {p['id']}")
            ids.add(p.get("id"))
            if not p.get("gridPos"):
                problems.append(f"{pw}: no gridPos")
            if p.get("type") == "row":
                continue
            if not p.get("title"):
                problems.append(f"{pw}: no title")
            if not p.get("description"):
                problems.append(f"{pw}: no description")
            unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit")
            if not unit:
                problems.append(f"{pw}: no unit (fieldConfig.defaults.unit)")
            check_ds(p.get("datasource"), pw, problems)
            targets = p.get("targets") or []
            if not targets:
                problems.append(f"{pw}: no targets")
            for t in targets:
                check_ds(t.get("datasource"), f"{pw} target {t.get('refId')}", problems)
                if not t.get("expr"):
                    problems.append(f"{pw} target {t.get('refId')}: no expr")
                for used in variables_used(t.get("expr", "")):
                    if used not in variables and used not in GRAFANA_GLOBALS:
                        problems.append(f"{pw}: uses undefined ${used}")
        # Any other place a datasource uid could hide.
        for m in re.finditer(r'"uid":\s*"([^"]*)"', json.dumps(d.get("panels", []))):
            if m.group(1) not in ("${datasource}", "$datasource"):
                problems.append(f"{where}: hard-coded datasource uid {m.group(1)!r}")
        print(f"ok: {name}: {len(ids)} panels, {len(variables)} variables")
    return fail_list(problems)


def check_ds(ds, where, problems):
    if isinstance(ds, str):
        ok = ds in ("${datasource}", "$datasource")
    elif isinstance(ds, dict):
        ok = ds.get("uid") in ("${datasource}", "$datasource")
    else:
        ok = False
    if not ok:
        problems.append(f"{where}: datasource must be the ${{datasource}} variable, got {ds!r}")


# --- PromQL helpers ---------------------------------------------------------------------------

def substitute(expr, values):
    def repl(m):
        name = m.group(1) or m.group(2)
        if name in GRAFANA_GLOBALS and name not in values:
            return GRAFANA_GLOBALS[name]
        return values.get(name, ".*")
    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", repl, expr)


def to_bool(expr):
    """Turns every comparison operator outside label matchers, strings and comments into its
    `bool` form, so the expression returns the quantities it compares instead of filtering."""
    out, i, depth = [], 0, 0
    while i < len(expr):
        c = expr[i]
        if c in "\"'`":
            j = i + 1
            while j < len(expr) and expr[j] != c:
                j += 2 if expr[j] == "\\" and c != "`" else 1
            out.append(expr[i:j + 1])
            i = j + 1
            continue
        if c == "#":
            j = expr.find("\n", i)
            j = len(expr) if j < 0 else j
            i = j
            continue
        if c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
        if depth == 0:
            op = None
            if expr[i:i + 2] in ("==", "!=", ">=", "<="):
                op = expr[i:i + 2]
            elif c in "<>":
                op = c
            if op:
                out.append(op)
                i += len(op)
                if not re.match(r"\s*bool\b", expr[i:]):
                    out.append(" bool ")
                continue
        out.append(c)
        i += 1
    return "".join(out)


class Prom:
    def __init__(self, url, time):
        self.url, self.time = url.rstrip("/"), time

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=30) as r:
            return json.load(r)

    def query(self, expr):
        data = urllib.parse.urlencode({"query": expr, "time": self.time}).encode()
        try:
            with urllib.request.urlopen(self.url + "/api/v1/query", data, timeout=60) as r:
                body = json.load(r)
        except urllib.error.HTTPError as e:
            body = json.load(e)
        if body.get("status") != "success":
            raise RuntimeError(body.get("error", body))
        res = body["data"]["result"]
        if body["data"]["resultType"] in ("scalar", "string"):
            return [res]
        return res


def label_values_to_promql(q):
    m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\s*\)\s*", q, re.S)
    if not m:
        return None, None
    return f"count by ({m.group(2)}) ({m.group(1)})", m.group(2)


# --- eval -------------------------------------------------------------------------------------

def evaluate(args):
    prom = Prom(args.prom, args.time)
    problems, checked = [], 0
    only = re.compile(args.only) if args.only else None
    var_values = dict(v.split("=", 1) for v in args.var)
    expect_empty = set(args.expect_empty)

    def reads_empty(expr):
        """The --expect-empty rule that EXPR reads, if any (its panel may be empty too)."""
        return next((r for r in sorted(expect_empty)
                     if re.search(r"(?<![\w:])" + re.escape(r) + r"(?![\w:])", expr)), None)

    def query(where, expr):
        """The result of EXPR; None, with the error added to the problems, where it fails."""
        try:
            return prom.query(expr)
        except RuntimeError as e:
            problems.append(f"{where}: error {e}: {expr}")
            return None

    def report(where, expr, found, nothing, some):
        """Says ok, or adds a problem where FOUND (what EXPR gave) is empty and EXPR reads no
        --expect-empty rule. NOTHING names the lack; SOME(FOUND) says what was found."""
        if found:
            print(f"ok: {where}: {some(found)}")
        elif reads_empty(expr):
            print(f"ok: {where}: {nothing}, as expected ({reads_empty(expr)} is empty here)")
        else:
            problems.append(f"{where}: {nothing}: {expr}")

    for name, d in load_dashboards(args.dir):
        for v in d.get("templating", {}).get("list", []):
            if v.get("type") != "query":
                continue
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            if only and not only.search(q):
                continue
            promql, label = label_values_to_promql(substitute(q, var_values))
            where = f"{name} variable ${v['name']}"
            res = query(where, promql)
            if res is None:
                continue
            checked += 1
            values = sorted({r["metric"].get(label, "") for r in res} - {""})
            report(where, promql, values, "no values", lambda v: f"{len(v)} values, e.g. {v[0]}")
        for p in all_panels(d):
            for t in p.get("targets", []):
                expr = substitute(t["expr"], var_values)
                if only and not only.search(expr):
                    continue
                where = f"{name} panel {p['id']} '{p['title']}' {t['refId']}"
                if t.get("exemplar") and expr.endswith(" < 0"):
                    # An exemplars-only target draws no line by design: check that its
                    # selector finds the raw series whose exemplars it shows (count: a
                    # comparison drops native histogram samples).
                    expr = f"count({expr[:-len(' < 0')]})"
                checked += 1
                res = query(where, expr)
                if res is not None:
                    report(where, expr, res, "no data", lambda r: f"{len(r)} series")

    rules = prom.get("/api/v1/rules")["data"]["groups"]
    fired, expect_firing, expect_quiet = set(), set(args.expect_firing), set(args.expect_quiet)
    seen = set()
    nrules = 0
    for g in rules:
        for r in g["rules"]:
            rname = r.get("name")
            seen.add(rname)
            if only and not only.search(r["query"]):
                continue
            nrules += 1
            where = f"rule {g['name']}/{rname} ({r['type']})"
            if r.get("health") != "ok":
                problems.append(f"{where}: health {r.get('health')}: {r.get('lastError')}")
            checked += 1
            expr = r["query"]
            probe = expr if r["type"] == "recording" else to_bool(expr)
            res = query(where, probe)
            if res is None:
                continue
            if rname in expect_empty:
                if res:
                    problems.append(f"{where}: {len(res)} series, expected none on this Prometheus")
                else:
                    print(f"ok: {where}: empty, as expected on this Prometheus")
                continue
            if not res:
                problems.append(f"{where}: no data: {probe}")
                continue
            if r["type"] == "alerting":
                holds = prom.query(expr)
                if holds:
                    fired.add(rname)
                state = f"condition holds for {len(holds)} series" if holds else "quiet"
                print(f"ok: {where}: {len(res)} series; {state}")
            else:
                print(f"ok: {where}: {len(res)} series")
    if nrules == 0:
        problems.append("Prometheus loaded no rules")
    for rname in sorted(expect_empty - seen):
        problems.append(f"--expect-empty {rname}: no such rule loaded")
    for a in sorted(expect_firing - fired):
        problems.append(f"alert {a}: expected its condition to hold on this data, it does not")
    for a in sorted(expect_quiet & fired):
        problems.append(f"alert {a}: expected quiet on this data, but its condition holds")
    print(f"evaluated {checked} expressions ({nrules} rules); alert conditions holding: "
          f"{', '.join(sorted(fired)) or 'none'}")
    return fail_list(problems)


# --- rules coverage ---------------------------------------------------------------------------

def rules_coverage(rules_file, test_files):
    problems = []
    alerts, current, alert_name = {}, None, None
    for line in open(rules_file):
        m = re.match(r"\s*- alert:\s*(\w+)", line)
        if m:
            alert_name = m.group(1)
            current = alerts.setdefault(alert_name, set())
            continue
        m = re.match(r"\s*- (record|alert):", line)
        if m:
            current = None
        m = re.match(r"\s*(summary|description|runbook_url|severity|for):\s*(.*)", line)
        if m and current is not None:
            current.add(m.group(1))
            if m.group(1) == "runbook_url":
                # deploy/runbooks/<Alert>.md, next to deploy/prometheus/
                want = f"/deploy/runbooks/{alert_name}.md"
                url = m.group(2).strip().strip('"')
                if not url.endswith(want):
                    problems.append(f"alert {alert_name}: runbook_url {url} is not .../{want[1:]}")
                path = os.path.join(os.path.dirname(os.path.abspath(rules_file)), "..",
                                    "runbooks", f"{alert_name}.md")
                if not os.path.exists(path):
                    problems.append(f"alert {alert_name}: no runbook file {path}")
    for a, keys in alerts.items():
        for k in ("summary", "description", "runbook_url", "severity", "for"):
            if k not in keys:
                problems.append(f"alert {a}: no {k}")
    firing, quiet = set(), set()
    for tf in test_files:
        name, exp_line = None, None
        lines = open(tf).read().split("\n")
        for i, line in enumerate(lines):
            m = re.match(r"\s*alertname:\s*(\w+)", line)
            if m:
                name = m.group(1)
            m = re.match(r"\s*exp_alerts:\s*(\[\])?\s*(#.*)?$", line)
            if m and name:
                if m.group(1):
                    quiet.add(name)
                else:
                    firing.add(name)
                name = None
    for a in sorted(alerts):
        if a not in firing:
            problems.append(f"alert {a}: no test case where it fires")
        if a not in quiet:
            problems.append(f"alert {a}: no test case where it stays quiet")
    for a in sorted((firing | quiet) - set(alerts)):
        problems.append(f"test for unknown alert {a}")
    print(f"ok: {len(alerts)} alerts, each with a firing and a quiet test case"
          if not problems else "rules coverage problems:")
    return fail_list(problems)


def metric_names(text):
    names = set()
    # Not the metric part of a recording rule's name (level:metric:operations).
    for n in re.findall(r"(?<![\w:])((?:rdma|nvmeof)_[a-z0-9_]+)(?![\w:])", text):
        names.add(re.sub(r"_(bucket|sum|count)$", "", n))
    return names


def check_names(directory, rules, sources):
    used = {}
    for name, d in load_dashboards(directory):
        for p in all_panels(d):
            for t in p.get("targets", []):
                for n in metric_names(t.get("expr", "")):
                    used.setdefault(n, name)
        for v in d.get("templating", {}).get("list", []):
            q = v.get("query")
            q = q.get("query") if isinstance(q, dict) else q
            for n in metric_names(q or ""):
                used.setdefault(n, name)
    for r in rules:  # expressions, and the metrics runbooks tell people to look at
        for n in metric_names(open(r).read()):
            used.setdefault(n, r)
    text = "".join(open(f).read() for f in sources)
    missing = [(n, where) for n, where in sorted(used.items()) if f'"{n}"' not in text]
    problems = [f"{n} (used in {where}) is not emitted by the exporter's sources"
                for n, where in missing]
    print(f"ok: {len(used)} metric names used, all emitted by the exporter's sources"
          if not problems else "metric names:")
    return fail_list(problems)


def recording_rules(rules_file, alert_files, directory):
    """Every recording rule is named level:metric:operations and read by a dashboard or an
    alert (or by another recording rule that is)."""
    problems = []
    records = re.findall(r"^\s*- record:\s*(\S+)", open(rules_file).read(), re.M)
    text = "".join(open(f).read() for f in alert_files)
    for _, d in load_dashboards(directory):
        text += json.dumps(d)
    rules_text = open(rules_file).read()
    for r in records:
        if not re.fullmatch(r"[a-z_]+:nvmeof_[a-z0-9_]+:[a-z0-9_]+", r):
            problems.append(f"recording rule {r}: not level:metric:operations")
        readers = text.count(r) + rules_text.count(r) - 1  # minus its own record: line
        if readers < 1:
            problems.append(f"recording rule {r}: read by no dashboard or alert")
    print(f"ok: {len(records)} recording rules, all named level:metric:operations and read"
          if not problems else "recording rules:")
    return fail_list(problems)


RAW_HISTOGRAM = re.compile(
    r"(?<![\w:])nvmeof_(?:command|stage|block_stage|block)_latency_seconds(?:_bucket|_sum|_count)?\b")


def recorded_first(rule_files, directory):
    problems, n = [], 0
    for f in rule_files:
        for m in re.finditer(r"^\s*- (alert|record):\s*(\S+)\n\s*expr:\s*(\|\n(?:\s{10,}.*\n?)+|.*)",
                             open(f).read(), re.M):
            n += 1
            if RAW_HISTOGRAM.search(m.group(3)):
                problems.append(f"{os.path.basename(f)}: {m.group(2)} reads a raw histogram")
    for name, d in load_dashboards(directory):
        for p in all_panels(d):
            if p.get("type") == "heatmap":
                continue
            for t in p.get("targets", []):
                n += 1
                # An exemplars-only target (no sample passes its `< 0`) draws no line: it
                # selects the raw series because recorded series carry no exemplars.
                if t.get("exemplar") and t["expr"].endswith(" < 0"):
                    continue
                if RAW_HISTOGRAM.search(t["expr"]):
                    problems.append(f"{name} panel '{p['title']}' reads a raw histogram: {t['expr']}")
    if not problems:
        print(f"ok: recorded first: {n} rules and panel queries read no raw latency histogram")
    return fail_list(problems)


def main(argv):
    if len(argv) >= 3 and argv[0] == "recorded-first":
        return recorded_first(argv[1:-1], argv[-1])
    if len(argv) >= 4 and argv[0] == "recording-rules":
        return recording_rules(argv[1], argv[2:-1], argv[-1])
    if len(argv) >= 2 and argv[0] == "lint":
        return lint(argv[1])
    if len(argv) >= 4 and argv[0] == "names" and "--" in argv:
        i = argv.index("--")
        return check_names(argv[1], argv[2:i], argv[i + 1:])
    if len(argv) >= 3 and argv[0] == "rules-coverage":
        return rules_coverage(argv[1], argv[2:])
    if argv and argv[0] == "eval":
        import argparse
        ap = argparse.ArgumentParser(prog="dashboards_check.py eval")
        ap.add_argument("--prom", required=True)
        ap.add_argument("--time", required=True)
        ap.add_argument("--expect-firing", action="append", default=[])
        ap.add_argument("--expect-quiet", action="append", default=[])
        ap.add_argument("--expect-empty", action="append", default=[])
        ap.add_argument("--only")
        ap.add_argument("--var", action="append", default=[])
        ap.add_argument("dir")
        return evaluate(ap.parse_args(argv[1:]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
