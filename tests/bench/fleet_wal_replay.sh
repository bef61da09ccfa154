#!/usr/bin/env bash
# Kill the central Prometheus for 60 s: does the agent's WAL replay lose any sample? (issue 24;
# by hand, not in CI: it takes a few minutes.)
#
#   tests/bench/fleet_wal_replay.sh [-n N] [--outage SECONDS] [--interval SECONDS] [--signal KILL|TERM]
#
# The tested setup of tests/e2e/test_fleet.sh (docs/fleet.md): an agent (Debian's Prometheus
# 2.42, --enable-feature=agent,native-histograms) scrapes N simulated nodes (fleet_server.py)
# and remote-writes, native histograms included, to a central Prometheus
# (--web.enable-remote-write-receiver --enable-feature=native-histograms). Once central holds
# data, it is killed (--signal, default KILL: no shutdown at all; TERM: a clean one) and restarted
# --outage seconds later on the same port and TSDB.
# Then, once the agent has caught up, for every node: the samples central holds of `up` (one per
# scrape) and of one native histogram series, from well before the kill to after the restart,
# against the number of scrapes in that window, and the largest gap between two samples.
# Exit 1 if any series has a gap of more than 1.5 scrape intervals (a missing sample).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# prom_config, prom_remote_write, prom_fleet_relabel (the writers test_fleet.sh uses as well)
source "$HERE/../e2e/prom_config.sh"
N=200
OUTAGE=60
INTERVAL=15
SIGNAL=KILL
while [ $# -gt 0 ]; do
  case $1 in
    -n) N=$2; shift 2 ;;
    --outage) OUTAGE=$2; shift 2 ;;
    --interval) INTERVAL=$2; shift 2 ;;
    --signal) SIGNAL=$2; shift 2 ;;
    *) sed -n '2,16p' "$0" >&2; exit 2 ;;
  esac
done
WORK=$(mktemp -d /tmp/nvmeof-fleet-wal.XXXXXX)
PIDS=()
CENTRAL_PID=
finish() {
  local pid
  for pid in "${PIDS[@]}" $CENTRAL_PID; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}" $CENTRAL_PID; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap finish EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ready() { for _ in $(seq 300); do curl -fsS "$1/-/ready" >/dev/null 2>&1 && return 0; sleep 0.2; done; return 1; }
q() {  # q URL EXPR [TIME]: first value of an instant query
  curl -fsS --get "$1/api/v1/query" --data-urlencode "query=$2" ${3:+--data-urlencode "time=$3"} |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}
metric() { curl -fsS "$1/metrics" | awk -v m="$2" '$1 ~ "^"m"({|$)" {s += $2} END {printf "%.0f\n", s}'; }

python3 "$HERE/fleet_server.py" --nodes "$N" >"$WORK/fleet.port" 2>"$WORK/fleet.log" &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$WORK/fleet.port" ] && break; sleep 0.1; done
FP=$(cat "$WORK/fleet.port")
NODES=$(python3 "$HERE/fleet_server.py" --list "$N" | paste -sd, -)

CP=$(free_port)
CENTRAL=http://127.0.0.1:$CP
: >"$WORK/central.yml"
start_central() {
  prometheus --config.file="$WORK/central.yml" --storage.tsdb.path="$WORK/tsdb-central" \
    --web.listen-address="127.0.0.1:$CP" --web.enable-remote-write-receiver \
    --enable-feature=native-histograms >>"$WORK/central.log" 2>&1 &
  CENTRAL_PID=$!
  ready "$CENTRAL" || { echo "central did not start: $(tail -5 "$WORK/central.log")" >&2; exit 1; }
}
start_central
AP=$(free_port)
AGENT=http://127.0.0.1:$AP
prom_config "$WORK/agent.yml" "scrape_interval: ${INTERVAL}s, scrape_timeout: $((INTERVAL < 10 ? INTERVAL : 10))s" \
  nvmeof "$NODES" "$(prom_fleet_relabel "$FP")"
prom_remote_write "$WORK/agent.yml" "$CENTRAL/api/v1/write"
prometheus --config.file="$WORK/agent.yml" --storage.agent.path="$WORK/agent-wal" \
  --web.listen-address="127.0.0.1:$AP" --enable-feature=agent,native-histograms \
  --storage.remote.flush-deadline=5s >"$WORK/agent.log" 2>&1 &
PIDS+=($!)
ready "$AGENT" || { echo "agent did not start" >&2; exit 1; }
T0=$(date +%s)
echo "N=$N nodes, scrape interval ${INTERVAL}s; agent -> central ($(date -u +%T), load $(cut -d' ' -f1-3 /proc/loadavg))"
# Central has every node, and a few scrapes of history.
while :; do
  up=$(q "$CENTRAL" 'count(up)')
  [ "${up:-0}" = "$N" ] && [ $(($(date +%s) - T0)) -ge $((3 * INTERVAL)) ] && break
  [ $(($(date +%s) - T0)) -gt 600 ] && { echo "central never got all $N nodes (has ${up:-0})" >&2; exit 1; }
  sleep 2
done
T_KILL=$(date +%s)
kill -s "$SIGNAL" "$CENTRAL_PID"; wait "$CENTRAL_PID" 2>/dev/null || true
echo "central killed at +$((T_KILL - T0))s (SIG$SIGNAL); down for ${OUTAGE}s"
sleep "$OUTAGE"
pending=$(metric "$AGENT" prometheus_remote_storage_samples_pending)
failed=$(metric "$AGENT" prometheus_remote_storage_samples_failed_total)
retried=$(metric "$AGENT" prometheus_remote_storage_samples_retried_total)
echo "during the outage: agent samples pending $pending, failed sends $failed, retried $retried"
T_UP=$(date +%s)
start_central
echo "central restarted at +$((T_UP - T0))s (replayed its own WAL: $(grep -o 'total_replay_duration=[^ ]*' "$WORK/central.log" | tail -1))"
# Caught up: the agent has sent samples newer than the restart plus two intervals.
T_CAUGHT=""
for _ in $(seq 300); do
  sent=$(metric "$AGENT" prometheus_remote_storage_queue_highest_sent_timestamp_seconds)
  pending=$(metric "$AGENT" prometheus_remote_storage_samples_pending)
  if [ "${sent:-0}" -ge $((T_UP + 2 * INTERVAL)) ] && [ "${pending:-1}" = 0 ]; then
    T_CAUGHT=$(date +%s); break
  fi
  sleep 1
done
[ -n "$T_CAUGHT" ] || { echo "the agent did not catch up in 300 s" >&2; exit 1; }
echo "agent caught up $((T_CAUGHT - T_UP))s after the restart; dropped samples: $(metric "$AGENT" prometheus_remote_storage_samples_dropped_total), histograms dropped: $(metric "$AGENT" prometheus_remote_storage_histograms_dropped_total)"
# The window: from 2 intervals before the kill to 2 intervals after the restart.
FROM=$((T_KILL - 2 * INTERVAL))
TO=$((T_UP + 2 * INTERVAL))
python3 - "$CENTRAL" "$FROM" "$TO" "$INTERVAL" "$N" "$T_KILL" "$T_UP" <<'PY'
import json, sys, urllib.parse, urllib.request
url, t_from, t_to, interval, n, t_kill, t_up = (int(x) if x.isdigit() else x for x in sys.argv[1:8])

def samples(selector):
    q = urllib.parse.urlencode({"query": f"{selector}[{t_to - t_from}s]", "time": t_to})
    with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=120) as r:
        res = json.load(r)["data"]["result"]
    return {s["metric"].get("instance"): [v[0] for v in s.get("values", s.get("histograms", []))]
            for s in res}

want = (t_to - t_from) // interval
bad = 0
for name, sel in (("up", 'up{job="nvmeof"}'),
                  ("native histogram", 'nvmeof_stage_latency_seconds{stage="storage",op="read",transport="rdma",role="target",nqn=~".*-ss00"}')):
    got = samples(sel)
    counts = sorted(len(v) for v in got.values())
    gaps = [max((b - a for a, b in zip(v, v[1:])), default=0) for v in got.values()]
    nodes = len(got)
    short = sum(1 for c in counts if c < want)
    # Lost: a gap of more than 1.5 intervals anywhere, or at either end of the window (a count
    # one short with no such gap is a scrape that fell just outside the window's edge).
    lost = sum(1 for v in got.values()
               if not v or v[0] - t_from > 1.5 * interval or t_to - v[-1] > 1.5 * interval
               or any(b - a > 1.5 * interval for a, b in zip(v, v[1:])))
    bad += lost + (nodes == 0)
    # Where the gaps are: seconds after the kill at which a series' gap (> 1.5 intervals) starts.
    starts = {}
    for v in got.values():
        for a, b in zip(v, v[1:]):
            if b - a > 1.5 * interval:
                k = int((a - t_kill) // interval) * interval
                starts[k] = starts.get(k, 0) + 1
    if starts:
        print(f"  {name}: gaps start (seconds after the kill, per {interval}s; the restart was at "
              f"+{t_up - t_kill}s): " + ", ".join(f"{k:+d}s: {c}" for k, c in sorted(starts.items())))
    print(f"{name}: {nodes} series; samples in [kill - {2 * interval}s, restart + {2 * interval}s] "
          f"({t_to - t_from}s, {want} scrapes): min {counts[0] if counts else 0}, max "
          f"{counts[-1] if counts else 0}; largest gap {max(gaps, default=0):.1f}s; "
          f"series one or more short of {want}: {short}; series with a gap > 1.5 intervals: {lost}")
print("no sample lost" if not bad else "SAMPLES LOST")
sys.exit(1 if bad else 0)
PY
