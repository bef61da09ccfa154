#!/usr/bin/env python3
"""test_fleet.sh's checks against the running servers, each in one process (one interpreter
start, not one curl and one python per query: on the loaded 2-core machine those cost more than
the queries). Prints "ok: ..." lines (lib.sh's pass) and, on a failed check, "FAIL: ..." on
stderr and exits 1. Every poll is bounded in time (at least as long as the shell loops' tries
took at one curl and one python per query), and ends as soon as its condition holds.

  fleet_check.py central URL WANT_KEPT WANT_ALL N SCRAPED DROP WORK T_START
  fleet_check.py rules URL WORK T_START
  fleet_check.py federation CENTRAL GLOBAL SCRAPED N WORK T_START
  fleet_check.py thin URL T_START
"""
import json
import re
import sys
import time
import urllib.parse
import urllib.request


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def ok(msg):
    print(f"ok: {msg}", flush=True)


def since(t_start):
    return f"({int(time.time()) - int(t_start)} s)"


def get(url, path, params=None):
    if params:
        path += "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url + path, timeout=300) as r:
        return json.load(r)


def query(url, expr):
    """The instant query's result list (as the API gives it)."""
    return get(url, "/api/v1/query", {"query": expr})["data"]["result"]


def scalar(url, expr):
    """The one value of an aggregate ('' when the result is empty: no series), as the shell's
    query() printed it."""
    res = query(url, expr)
    return res[0]["value"][1] if res else ""


def by_name(url, names):
    """{name: series count} of the NAMES present on URL, in one query."""
    expr = "count by (__name__) ({__name__=~\"%s\"})" % "|".join(names)
    return {r["metric"]["__name__"]: r["value"][1] for r in query(url, expr)}


def poll(seconds, fn, delay=1.0):
    """fn() until it returns a true first element, for at most SECONDS; its last value."""
    deadline = time.monotonic() + seconds
    while True:
        v = fn()
        if v[0] or time.monotonic() + delay > deadline:
            return v
        time.sleep(delay)


def central(url, want_kept, want_all, n, scraped, drop, work, t_start):
    def arrived():
        got = scalar(url, f"count({scraped})")
        return (got == want_kept, got)
    got = poll(60, arrived)[1]
    if got != want_kept:
        with open(f"{work}/central-names.txt", "w") as f:
            for r in query(url, f"count by (__name__) ({scraped})"):
                print(r["metric"]["__name__"], r["value"][1], file=f)
        fail(f"central holds '{got}' series of job nvmeof, expected {want_kept} (of {want_all} "
             f"served); per name: {work}/central-names.txt")
    dropped = scalar(url, 'count({__name__=~"%s"})' % drop)
    if dropped:
        fail(f"dropped families reached central: {dropped} series")
    ok(f"central holds all {want_kept} series of {n} nodes through the agent; "
       f"metric_relabel_configs dropped {int(want_all) - int(want_kept)} {since(t_start)}")

    # The reference nodes are up through an agent that asks for protobuf (fleet_server.py serves
    # them as text, under a text content type).
    ref_up = scalar(url, 'count(up{job="node"} == 1)')
    ref_n = scalar(url, 'count(node_load1{job="node"})')
    if ref_up != "2" or ref_n != "2":
        line = next((l.strip() for l in open(f"{work}/agent.log")
                     if re.search("wiretype|scrape", l, re.I)), "")
        fail(f"reference nodes (r*): up on {ref_up} of 2, node_load1 from '{ref_n}' "
             f"(agent log: {line})")
    ok("both reference nodes up, scraped by a protobuf-asking agent")

    # Native histograms arrive as native histograms.
    res = query(url, 'nvmeof_stage_latency_seconds{role="host"}')
    native = sum(1 for r in res if "value" not in r)
    floats = len(res) - native
    if not native:
        fail(f"nvmeof_stage_latency_seconds on central is not native: {native} histogram, "
             f"{floats} float series")
    if floats:
        fail(f"some stage series on central are floats: {native} histogram, {floats} float")
    nb = scalar(url, 'count({__name__=~"nvmeof_(stage|command)_latency_seconds_bucket"})')
    if nb:
        fail(f"central stores classic buckets too: {nb} series")
    nh = scalar(url, "count(nvmeof_stage_latency_seconds) + count(nvmeof_command_latency_seconds)")
    ok(f"latency histograms arrive as native histograms ({nh} series, no classic buckets)")


FLEET_DATA = ["nqn:nvmeof_commands:rate5m", "nqn:nvmeof_network_estimate_seconds:mean5m",
              "nqn:nvmeof_network_estimate_seconds:max5m", "transport:nvmeof_commands:rate5m",
              "transport:nvmeof_command_latency_seconds:mean5m",
              "stage:nvmeof_stage_latency_seconds:p99_5m_top10"]


def rules(url, work, t_start):
    # The [5m] rates need two samples of each series (a few seconds at 2 s scrapes); the group
    # then evaluates every 2 s.
    poll(120, lambda: (scalar(url, "count(stage:nvmeof_stage_latency_seconds:p99_5m_top10) + "
                                  "count(nqn:nvmeof_network_estimate_seconds:max5m) * 0"),))
    # Every group evaluated at least once more: the fixed 4 s sleep this replaced, ended early
    # once each group's lastEvaluation has moved on. (Under load the shipped latency group's one
    # evaluation can take a minute, so this does not wait for it, no more than the sleep did.)
    first = {g["name"]: g.get("lastEvaluation") for g in get(url, "/api/v1/rules")["data"]["groups"]}
    def evaluated():
        body = get(url, "/api/v1/rules")
        return (all(g.get("lastEvaluation") != first.get(g["name"])
                    for g in body["data"]["groups"]), body)
    body = poll(4, evaluated, 0.5)[1]
    with open(f"{work}/rules.json", "w") as f:
        json.dump(body, f)
    bad = [f"{g['name']}/{r['name']}: {r['health']} {r.get('lastError', '')}"
           for g in body["data"]["groups"] for r in g["rules"]
           if r["type"] == "recording" and r["health"] != "ok"]
    if bad:
        fail("rules on central: " + "; ".join(bad)[:600])
    counts = by_name(url, FLEET_DATA)
    for r in FLEET_DATA:
        print(f"  {r}: {counts.get(r, 'no data')} series")
    missing = [r for r in FLEET_DATA if r not in counts]
    if missing:
        fail(f"fleet rules with no data on central: {' '.join(missing)}")
    # Hosts and targets agree per subsystem: every subsystem a host reads from has its target's
    # rate. (On a loaded machine a target's second sample can arrive a few evaluations after its
    # host's.)
    def agree():
        a = scalar(url, 'count(nqn:nvmeof_commands:rate5m{role="host"} and on (nqn, transport, op) '
                        'nqn:nvmeof_commands:rate5m{role="target"})')
        h = scalar(url, 'count(nqn:nvmeof_commands:rate5m{role="host"})')
        return (a != "" and a == h, a, h)
    good, a, h = poll(60, agree)
    if not good:
        fail(f"host subsystems with a target side: '{a}' of '{h}'")
    ok(f"every recording rule healthy on central; fleet rules return data; all {h} host-side "
       f"subsystem series have their target {since(t_start)}")


# Every fleet rule's series, on both servers (the top list's members can change between the two
# reads: its count is compared, within its bound of 10 per role, transport and stage).
FLEET_RULES = ["nqn:nvmeof_commands:rate5m", "nqn:nvmeof_network_estimate_seconds:mean5m",
               "nqn:nvmeof_network_estimate_seconds:max5m", "transport:nvmeof_commands:rate5m",
               "transport:nvmeof_command_latency_seconds:mean5m",
               "nqn:nvmeof_target_residence_seconds:mean5m"]
FLEET_RE = "nqn:nvmeof_.+|transport:nvmeof_.+|stage:nvmeof_.+"


def members(url):
    return {(m["instance"], m["role"], m["transport"], m["stage"])
            for m in (r["metric"] for r in
                      query(url, "stage:nvmeof_stage_latency_seconds:p99_5m_top10"))}


def federation(central_url, global_url, scraped, n, work, t_start):
    # One query per server per try: the counts of all the fleet rules, read together.
    def same():
        g, c = by_name(global_url, FLEET_RULES), by_name(central_url, FLEET_RULES)
        return (all(g.get(r) == c.get(r) for r in FLEET_RULES), c, g)
    fed_ok, c, g = poll(45, same)
    for r in FLEET_RULES:
        print(f"  {r}: central {c.get(r, '')}, global {g.get(r, '')}")
    if not fed_ok:
        diff = [r for r in FLEET_RULES if g.get(r) != c.get(r)]
        fail(f"the global server does not hold the fleet rules' series of central: {' '.join(diff)}")
    # The top list: every member central has now is on the global server (which may still show a
    # member that just dropped out of it, until its lookback passes).
    def top():
        tc, tg = members(central_url), members(global_url)
        return (not (tc - tg), tc, tg)
    good, tc, tg = poll(30, top)
    with open(f"{work}/top-central.txt", "w") as f:
        f.write("".join(" ".join(m) + "\n" for m in sorted(tc)))
    with open(f"{work}/top-global.txt", "w") as f:
        f.write("".join(" ".join(m) + "\n" for m in sorted(tg)))
    if not good:
        fail(f"top list: {len(tc - tg)} of central's members are not on the global server: "
             f"{sorted(tc - tg)[:5]}")
    print(f"  stage:nvmeof_stage_latency_seconds:p99_5m_top10: central {len(tc)}, "
          f"global {len(tg)} (all of central's)")
    other = scalar(global_url, 'count({job=~".+", __name__!~"up|scrape_.+|%s"})' % FLEET_RE)
    if other:
        names = [r["metric"].get("__name__", "") for r in query(
            global_url, 'count by (__name__) ({job=~".+", __name__!~"up|scrape_.+|%s"})' % FLEET_RE)]
        fail(f"federation carried {other} series that are not fleet rules: {' '.join(names[:10])}")
    fed = scalar(global_url, 'count({__name__=~"%s"})' % FLEET_RE)
    raw = scalar(central_url, f"count({scraped})")
    ok(f"global Prometheus federates {fed} fleet series of {n} nodes (central holds {raw} raw "
       f"series); job and instance kept (honor_labels) {since(t_start)}")


def thin(url, t_start):
    # Every other bucket dropped from a text scrape: 8 bounds and +Inf left of the 16 and +Inf,
    # and histogram_quantile still answers from them.
    les = scalar(url, "count(count by (le) (nvmeof_stage_latency_seconds_bucket))")
    full = len(query(url, 'count by (le) (nvmeof_stage_latency_seconds_bucket'
                          '{le=~"0\\\\.0009765625|0\\\\.001953125"})'))
    p99 = scalar(url, "histogram_quantile(0.99, sum by (le) (rate(nvmeof_stage_latency_seconds_bucket"
                      '{instance="h00000",stage="block_submit"}[1m])))')
    if not (les == "9" and full == 1 and p99 and p99 != "NaN"):
        fail(f"every-other-bucket relabeling: {les} bucket bounds (want 9), {full} of 2 "
             f"neighbours (want 1), p99 '{p99}'")
    ok(f"text scrape with every other bucket dropped: 9 bounds of 17, p99 still answers "
       f"({p99} s) {since(t_start)}")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"central": central, "rules": rules, "federation": federation, "thin": thin}[cmd](*args)
