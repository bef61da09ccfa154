#!/usr/bin/env bash
# The shipped Prometheus rules: promtool accepts them and their unit tests pass under both
# servers' promtool (Debian 12's 2.42 and 3.5 LTS, from fetch_prometheus.sh; where 3.5 cannot be
# had, the test ends with a skip, exit 77, after the 2.42 half), every alert has a firing and a
# quiet test case and its summary/description/runbook, the tests would notice a changed
# threshold or a lost week-ago baseline, and the rules are recorded first (only the recording
# rules read a raw latency histogram).
source "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null || fail "promtool is not installed (apt-get install prometheus)"
RULES=$(cd "$E2E_DIR/../../deploy/prometheus" && pwd)

# promtool_checks LABEL PROMTOOL: check rules and every unit test file.
promtool_checks() {
  local v=$1 pt=$2
  "$pt" check rules "$RULES"/*.rules.yml >"$WORK/check-$v.log" 2>&1 || fail "promtool $v check rules: $(cat "$WORK/check-$v.log")"
  grep -q FAILED "$WORK/check-$v.log" && fail "promtool $v check rules: $(cat "$WORK/check-$v.log")"
  pass "promtool $v check rules: $(grep -o '[0-9]* rules found' "$WORK/check-$v.log" | tr '\n' ' ')"
  (cd "$RULES/tests" && "$pt" test rules ./*.test.yml) >"$WORK/test-$v.log" 2>&1 ||
    fail "promtool $v test rules: $(cat "$WORK/test-$v.log")"
  pass "promtool $v test rules: $(grep -c SUCCESS "$WORK/test-$v.log") test files"
}
promtool_checks 2.42 "$(command -v promtool)"
SKIP35=""
if P35=$("$E2E_DIR/fetch_prometheus.sh" 3.5 2>"$WORK/fetch35.log"); then
  promtool_checks "$("$P35/promtool" --version 2>&1 | sed -n '1s/^promtool, version \([0-9.]*\).*/\1/p')" "$P35/promtool"
else
  rc=$?
  [ $rc = 77 ] || fail "fetch_prometheus.sh 3.5 failed ($rc): $(cat "$WORK/fetch35.log")"
  SKIP35=$(cat "$WORK/fetch35.log")
  echo "SKIP (3.5 half): $SKIP35"
fi

python3 "$E2E_DIR/dashboards_check.py" rules-coverage "$RULES/nvmeof-alerts.rules.yml" \
  "$RULES"/tests/nvmeof-alerts.test.yml "$RULES"/tests/nvmeof-latency-*.test.yml || fail "rules coverage"
python3 "$E2E_DIR/dashboards_check.py" rules-coverage "$RULES/nvmeof-connections.rules.yml" \
  "$RULES"/tests/nvmeof-connections.test.yml || fail "rules coverage (connections)"
python3 "$E2E_DIR/dashboards_check.py" recording-rules "$RULES/nvmeof-recording.rules.yml" \
  "$RULES/nvmeof-alerts.rules.yml" "$RULES/nvmeof-fleet.rules.yml" "$E2E_DIR/../../dashboards" || fail "recording rules"
python3 "$E2E_DIR/dashboards_check.py" recorded-first "$RULES/nvmeof-alerts.rules.yml" \
  "$RULES/nvmeof-connections.rules.yml" "$RULES/nvmeof-fleet.rules.yml" "$E2E_DIR/../../dashboards" || fail "recorded first"

# Mutation: raise one threshold; the unit tests must fail.
mkdir -p "$WORK/m/tests"
cp "$RULES"/tests/*.test.yml "$WORK/m/tests/"
sed 's/increase(nvmeof_rdma_local_ack_timeout_errors_total\[5m\]) > 10/increase(nvmeof_rdma_local_ack_timeout_errors_total[5m]) > 1000/' \
  "$RULES/nvmeof-alerts.rules.yml" >"$WORK/m/nvmeof-alerts.rules.yml"
cmp -s "$RULES/nvmeof-alerts.rules.yml" "$WORK/m/nvmeof-alerts.rules.yml" && fail "mutation did not apply"
if (cd "$WORK/m/tests" && promtool test rules nvmeof-alerts.test.yml) >"$WORK/mutant.log" 2>&1; then
  fail "the unit tests still pass with RdmaAckTimeouts' threshold raised 100x"
fi
grep -q 'alertname: RdmaAckTimeouts' "$WORK/mutant.log" || fail "mutant failed for another reason: $(head "$WORK/mutant.log")"
pass "a raised threshold makes the unit tests fail"

# Mutation: without the week-ago baseline, the weekly batch job of the week test must fire.
cp "$RULES/nvmeof-alerts.rules.yml" "$WORK/m/"
sed 's/offset 1w/offset 3w/g' "$RULES/nvmeof-recording.rules.yml" >"$WORK/m/nvmeof-recording.rules.yml"
cmp -s "$RULES/nvmeof-recording.rules.yml" "$WORK/m/nvmeof-recording.rules.yml" && fail "week mutation did not apply"
cp "$RULES"/tests/nvmeof-latency-week.test.yml "$WORK/m/tests/"
if (cd "$WORK/m/tests" && promtool test rules nvmeof-latency-week.test.yml) >"$WORK/week-mutant.log" 2>&1; then
  fail "the week test still passes with the week-ago baseline moved to 3 weeks"
fi
grep -q 'controller="nvme0"' "$WORK/week-mutant.log" ||
  fail "week mutant failed for another reason: $(head "$WORK/week-mutant.log")"
pass "without the week-ago baseline the weekly pattern (nvme0) fires: the week test sees it"

# runbook_url base: the one sed line of deploy/README.md, applied to the rules and their tests,
# leaves every alert pointing at the new base and the unit tests passing.
BASE=https://git.example.org/storage/nvmeof_exporter/-/blob/v1
mkdir -p "$WORK/rb/tests"
cp "$RULES"/*.rules.yml "$WORK/rb/" && cp "$RULES"/tests/*.test.yml "$WORK/rb/tests/"
sed -i "s#https://example.com/nvmeof_exporter/blob/main#$BASE#" "$WORK"/rb/*.rules.yml "$WORK"/rb/tests/*.test.yml
n=$(grep -c "runbook_url: \"$BASE/deploy/runbooks/" "$WORK/rb/nvmeof-alerts.rules.yml")
[ "$n" = "$(grep -c '^ *- alert:' "$RULES/nvmeof-alerts.rules.yml")" ] || fail "runbook base: $n alerts carry $BASE"
grep -q example.com "$WORK"/rb/*.yml "$WORK"/rb/tests/*.yml && fail "runbook base: example.com left after the sed"
# nvmeof-alerts.test.yml asserts 17 of the runbook_urls (the slower latency tests add nothing).
(cd "$WORK/rb/tests" && promtool test rules nvmeof-alerts.test.yml) >"$WORK/rb.log" 2>&1 ||
  fail "promtool test rules after changing the runbook base: $(cat "$WORK/rb.log")"
pass "runbook base changed with one sed line: $n runbook_urls, nvmeof-alerts.test.yml passes"

# Alertmanager: the inhibition example is a valid config (amtool), and a real Alertmanager
# mutes what it says it mutes, and nothing else.
command -v amtool >/dev/null && command -v prometheus-alertmanager >/dev/null ||
  fail "amtool/alertmanager not installed (apt-get install prometheus-alertmanager)"
AM_DIR=$(cd "$E2E_DIR/../../deploy/alertmanager" && pwd)
{ printf 'route: {receiver: devnull, group_by: [alertname]}\nreceivers: [{name: devnull}]\n'
  cat "$AM_DIR/inhibit-rules.yml"; } >"$WORK/alertmanager.yml"
amtool check-config "$WORK/alertmanager.yml" >"$WORK/amtool.log" 2>&1 || fail "amtool check-config: $(cat "$WORK/amtool.log")"
grep -q ' - 5 inhibit rules' "$WORK/amtool.log" || fail "amtool check-config: $(cat "$WORK/amtool.log")"
pass "amtool check-config: the 5 inhibit rules of deploy/alertmanager/inhibit-rules.yml"

AM_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
prometheus-alertmanager --config.file="$WORK/alertmanager.yml" --storage.path="$WORK/am" \
  --web.listen-address="127.0.0.1:$AM_PORT" --cluster.listen-address= >"$WORK/alertmanager.log" 2>&1 &
PIDS+=($!)
AM=http://127.0.0.1:$AM_PORT
for _ in $(seq 50); do curl -fsS "$AM/-/ready" >/dev/null 2>&1 && break; sleep 0.2; done
add() { amtool --alertmanager.url="$AM" alert add "$@" >/dev/null || fail "amtool alert add $*"; }
# A target's maintenance: its controllers are not live (one alert per target).
add alertname=NvmeofControllerNotLive severity=warning nqn=nqn.x:pool-a transport=rdma
add alertname=NvmeofStageLatencyRegression severity=info instance=t1 role=target nqn=nqn.x:pool-a stage=storage
add alertname=NvmeofStageLatencyRegression severity=info instance=t2 role=target nqn=nqn.x:pool-b stage=storage
# ... and on the hosts: their latency alerts carry the subsystem's nqn (joined from
# nvmeof_namespace_info / nvmeof_controller_info), so the same maintenance mutes them, and
# their controllers flapping to that target.
add alertname=NvmeofLatencyRegression severity=warning instance=h4 role=host nqn=nqn.x:pool-a nvme_namespace=nvme0n1
add alertname=NvmeofLatencyRegression severity=warning instance=h4 role=host nqn=nqn.x:pool-b nvme_namespace=nvme1n1
add alertname=NvmeofControllerFlapping severity=warning instance=h2 controller=nvme0 nqn=nqn.x:pool-a
# A pause storm on h1 eth0.
add alertname=RdmaPfcPauseStorm severity=critical instance=h1 netdev=eth0
add alertname=RdmaPfcPausedHigh severity=warning instance=h1 netdev=eth0
add alertname=RdmaPfcPausedHigh severity=warning instance=h2 netdev=eth0
# An exporter that is down.
add alertname=NvmeofExporterDown severity=warning instance=h3
add alertname=RdmaRetransmitBurst severity=warning instance=h3 rdma_device=mlx5_0 rdma_port=1
curl -fsS "$AM/api/v2/alerts" | python3 -c '
import json, sys
want = {  # (alertname, instance, nqn) -> suppressed?
    ("NvmeofControllerNotLive", "", "nqn.x:pool-a"): False,
    ("NvmeofStageLatencyRegression", "t1", "nqn.x:pool-a"): True,
    ("NvmeofStageLatencyRegression", "t2", "nqn.x:pool-b"): False,
    ("NvmeofLatencyRegression", "h4", "nqn.x:pool-a"): True,
    ("NvmeofLatencyRegression", "h4", "nqn.x:pool-b"): False,
    ("NvmeofControllerFlapping", "h2", "nqn.x:pool-a"): True,
    ("RdmaPfcPauseStorm", "h1", ""): False,
    ("RdmaPfcPausedHigh", "h1", ""): True,
    ("RdmaPfcPausedHigh", "h2", ""): False,
    ("NvmeofExporterDown", "h3", ""): False,
    ("RdmaRetransmitBurst", "h3", ""): True,
}
got = {}
for a in json.load(sys.stdin):
    l = a["labels"]
    got[(l["alertname"], l.get("instance", ""), l.get("nqn", ""))] = a["status"]["state"] == "suppressed"
bad = [f"{k}: suppressed={got.get(k)}, want {v}" for k, v in want.items() if got.get(k) != v]
print("\n".join(bad) if bad else "%d alerts, %d inhibited as expected" % (len(got), sum(want.values())))
sys.exit(1 if bad else 0)' >"$WORK/inhibit.log" 2>&1 || fail "Alertmanager inhibition: $(cat "$WORK/inhibit.log")"
pass "a real Alertmanager (0.25) with the example: $(cat "$WORK/inhibit.log")"

[ -z "$SKIP35" ] || skip "the promtool 3.5 half did not run: $SKIP35"
