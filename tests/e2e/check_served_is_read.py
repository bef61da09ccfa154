#!/usr/bin/env python3
"""Nothing is served at the defaults that nothing reads (docs/fleet.md "What the defaults serve").

Usage: check_served_is_read.py [--repo DIR] [--list] SCRAPE...

Every SCRAPE is a /metrics text body taken at the exporter's defaults (tests/e2e/golden.prom,
the VM suite's NVMe-oF scrape, a live scrape with eBPF). A family is *read* when a shipped
reader names it (or its _bucket/_sum/_count series, or matches a __name__ regex there):
  - every rule of deploy/prometheus/*.rules.yml: its expr and its annotations (templates query);
  - every dashboards/*.json panel target's expr and template variable query;
  - every deploy/runbooks/*.md, in code (`...` and fenced blocks: the queries an operator runs).
Each family served and not read fails the check, unless SELF below allow-lists it (a short list
of the exporter's own metrics that operators need for debugging, each with its reason) or
PROPOSED lists it (not yet resolved: a family that should get a panel or an alert, or move
behind an option). An entry of PROPOSED that is now read, or no longer served, fails too.
--list prints who reads each served family. Exit 1 with one line per problem.
"""
import argparse
import glob
import gzip
import json
import os
import re
import sys

# The exporter's own metrics that no panel or rule reads, served for debugging. Keep it short:
# every entry says what question it answers that the read ones do not.
SELF = {
    # Standard client-library metric: when the process (re)started; `changes()` of it tells a
    # crash loop from a flapping scrape, which `up` alone cannot.
    "process_start_time_seconds":
        "restart detection (client-library standard)",
    # nvmeof_exporter_collector_success reads 0 for a failed and for a timed-out collector
    # alike; this counter tells a hung kernel source (the scrape deadline cut it off) from a
    # failing one, the first question of the NvmeofExporterCollectorFailing runbook.
    "nvmeof_exporter_collector_timeouts_total":
        "a hung source vs. a failing one (collector_success is 0 for both)",
    # Label values the exporter had to rewrite (invalid UTF-8, control bytes, overlong): the only
    # sign that a label on a dashboard is not the kernel's string verbatim.
    "nvmeof_exporter_label_values_sanitized_total":
        "label values rewritten (a dashboard label that is not the kernel's string verbatim)",
    # Served only while a source is odd (a duplicate series dropped, a one-hot state in no
    # table, an RDMA state whose number and name disagree): why a series looks wrong.
    "nvmeof_exporter_collector_anomalies":
        "odd source data behind a dropped series or an all-0 one-hot state",
    # HTTP connections accepted: with keep-alive a scraper holds one; a rising count means a
    # scraper (or a proxy between) reconnects every scrape (issue 32 item 3).
    "nvmeof_exporter_http_connections_total":
        "keep-alive check: connections opened per scraper",
    # eBPF self-metrics (collectors/bpf.cc, loader/lifecycle.cc): what the kernel side
    # costs and what it could not record, for the memory cgroup's and the sampling's questions.
    "nvmeof_exporter_bpf_map_bytes":
        "eBPF map memory ceilings, charged to the memory cgroup (an OOM's first question)",
    "nvmeof_exporter_bpf_map_entries":
        "live entries of the per-series eBPF maps (how near map_full a node is)",
    "nvmeof_exporter_bpf_sampled_commands_total":
        "commands picked for timing: checks the 1-in-N sampling against nvmeof_commands_total",
    "nvmeof_exporter_bpf_hostnqn_folded_total":
        "host NQNs folded into hostnqn=\"other\" (bpf.hostnqn_limit too low)",
    "nvmeof_exporter_bpf_lifecycle_lost_events_total":
        "connection events the lifecycle maps could not count (their counters undercount)",
}

# Not yet resolved (issue 32 item 2), each with what is to be done: families that answer an
# operator question and should be read by a shipped panel or alert, and families to move
# behind an option. The check fails once one is read (remove it here) or no longer served.
PROPOSED = {}

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SUFFIXES = ("", "_bucket", "_sum", "_count")


def served_families(path):
    """Family names of a text exposition (TYPE lines; without them, the sample names, folding
    _bucket/_sum/_count into their histogram)."""
    opener = gzip.open if path.endswith(".gz") else open
    typed, samples = set(), set()
    with opener(path, "rt") as f:
        for line in f:
            m = re.match(r"# TYPE (\S+) ", line)
            if m:
                typed.add(m.group(1))
            elif line and not line.startswith("#"):
                m = re.match(NAME, line)
                if m:
                    samples.add(m.group(0))
    if typed:
        return typed
    fams = set()
    for s in samples:
        base = re.sub(r"_(bucket|sum|count)$", "", s)
        fams.add(base if base != s and base + "_bucket" in samples else s)
    return fams


def readers(repo):
    """(where, text) of every expression a shipped reader evaluates or shows."""
    import yaml  # python3-yaml: the rules are YAML

    out = []
    for path in sorted(glob.glob(os.path.join(repo, "deploy/prometheus/*.rules.yml"))):
        for g in yaml.safe_load(open(path))["groups"]:
            for r in g["rules"]:
                name = r.get("record") or r.get("alert")
                where = f"{os.path.basename(path)}: {name}"
                out.append((where, r["expr"]))
                for v in (r.get("annotations") or {}).values():
                    out.append((where + " (annotation)", v))

    def walk(node, where):
        if isinstance(node, dict):
            title = node.get("title", where)
            for k, v in node.items():
                if k in ("expr", "definition") and isinstance(v, str):
                    out.append((title, v))
                elif k == "query" and isinstance(v, str):
                    out.append((title, v))
                elif k == "query" and isinstance(v, dict) and isinstance(v.get("query"), str):
                    out.append((title, v["query"]))
                else:
                    walk(v, title)
        elif isinstance(node, list):
            for v in node:
                walk(v, where)

    for path in sorted(glob.glob(os.path.join(repo, "dashboards/*.json"))):
        walk(json.load(open(path)), os.path.basename(path))
    for path in sorted(glob.glob(os.path.join(repo, "deploy/runbooks/*.md"))):
        text = open(path).read()
        code = re.findall(r"```.*?```", text, re.S)
        code += re.findall(r"`[^`\n]+`", re.sub(r"```.*?```", "", text, flags=re.S))
        out.append((os.path.basename(path), "\n".join(code)))
    return out


def who_reads(families, exprs):
    found = {f: [] for f in families}
    for where, text in exprs:
        tokens = set(re.findall(NAME, text))
        regexes = re.findall(r'__name__\s*=~\s*"([^"]*)"', text)
        for f in families:
            if any(f + s in tokens for s in SUFFIXES) or any(
                    re.fullmatch(rx, f + s) for rx in regexes for s in SUFFIXES):
                found[f].append(where)
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--list", action="store_true")
    ap.add_argument("scrapes", nargs="+")
    a = ap.parse_args()
    served = set()
    for p in a.scrapes:
        served |= served_families(p)
    found = who_reads(served | set(PROPOSED), readers(a.repo))
    problems = []
    for f in sorted(served):
        if a.list:
            print(f"{f}: {'; '.join(found[f][:3]) or SELF.get(f) or PROPOSED.get(f) or '-'}")
        if found[f] or f in SELF or f in PROPOSED:
            continue
        problems.append(f"{f} is served at the defaults and nothing reads it: read it in a "
                        "panel, rule, alert or runbook, or put it behind an option (docs/fleet.md)")
    for f in sorted(PROPOSED):
        if found[f]:
            problems.append(f"{f} is read now ({found[f][0]}): remove it from PROPOSED")
        elif f not in served and any(p.endswith("golden.prom") for p in a.scrapes):
            problems.append(f"{f} is not served at the defaults now: remove it from PROPOSED")
    for p in problems:
        print("FAIL:", p)
    if not problems:
        n_self = len(served & set(SELF))
        n_prop = len(served & set(PROPOSED))
        print(f"ok: {len(served)} families served at the defaults, {len(served) - n_self - n_prop}"
              f" read by a shipped panel, rule, alert or runbook; {n_self} self-metrics "
              f"allow-listed, {n_prop} not yet resolved (PROPOSED)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
