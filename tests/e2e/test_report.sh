#!/usr/bin/env bash
# `report` on a synthetic host/target pair (tests/e2e/synthetic_records.py): the join's match
# rate and unmatched reasons, per-command network, JSON, --baseline naming the stage that moved,
# and exit 2 with a message on truncated, corrupt and wrong-version files.
source "$(dirname "$0")/lib.sh"

mkdir -p "$WORK/a" "$WORK/b"
python3 "$E2E_DIR/synthetic_records.py" "$WORK/a" 2000 1.0
python3 "$E2E_DIR/synthetic_records.py" "$WORK/b" 2000 2.0  # target storage twice as slow

"$EXPORTER" report "$WORK/a/host.jsonl" >"$WORK/single.txt" || fail "report on one file: $?"
grep -q "network_and_target" "$WORK/single.txt" || fail "single: $(cat "$WORK/single.txt")"
pass "report on a host file"

"$EXPORTER" report --detail "$WORK/a/target.jsonl" "$WORK/a/host.jsonl" >"$WORK/join.txt" ||
  fail "report (join) exited $?"
grep -q "join: 1960 matched, 98.0% of the host's 2000 records" "$WORK/join.txt" ||
  fail "match rate: $(grep -A5 join: "$WORK/join.txt")"
grep -q "40 with no target record of the same qid/cid/slba/nlb" "$WORK/join.txt" ||
  fail "unmatched reasons: $(grep -A5 join: "$WORK/join.txt")"
pass "$(grep '^join:' "$WORK/join.txt")"

"$EXPORTER" report --format=json "$WORK/a/host.jsonl" "$WORK/a/target.jsonl" >"$WORK/join.json"
python3 - "$WORK/join.json" <<'PY' || fail "report JSON"
import json, sys
r = json.load(open(sys.argv[1]))
assert r['join']['matched'] == 1960 and r['join']['negative_network'] == 0, r['join']
for g in r['joined']:
    names = [c['name'] for c in g['components']]
    assert names.index('driver_submit') < names.index('network') < names.index('target:storage') \
        < names.index('host_receive'), names
    net = g['components'][names.index('network')]
    assert 15e-6 < net['mean_seconds'] < 40e-6 and net['p99_seconds'] > net['p50_seconds'], net
print('ok: JSON: %d joined groups, network p50/p99 of the first: %.1f/%.1f us' % (
    len(r['joined']), r['joined'][0]['components'][names.index('network')]['p50_seconds'] * 1e6,
    r['joined'][0]['components'][names.index('network')]['p99_seconds'] * 1e6))
PY

"$EXPORTER" report --baseline="$WORK/a/host.jsonl,$WORK/a/target.jsonl" "$WORK/b/host.jsonl" \
  "$WORK/b/target.jsonl" >"$WORK/cmp.txt" || fail "baseline exited $?"
grep -q "^moved most: target:storage" "$WORK/cmp.txt" || fail "baseline: $(tail -3 "$WORK/cmp.txt")"
pass "$(grep '^moved most' "$WORK/cmp.txt")"

expect_exit2() {  # expect_exit2 EXPECTED FILE...
  local want=$1; shift
  set +e
  "$EXPORTER" report "$@" >"$WORK/out" 2>&1
  local rc=$?
  set -e
  [ $rc = 2 ] || fail "$*: expected exit 2, got $rc: $(cat "$WORK/out")"
  grep -qF -- "$want" "$WORK/out" || fail "$*: message lacks '$want': $(cat "$WORK/out")"
  pass "exit 2: $(cat "$WORK/out")"
}
head -c 5000 "$WORK/a/host.jsonl" >"$WORK/truncated.jsonl"
expect_exit2 "truncated (no newline at end of file" "$WORK/truncated.jsonl"
{ head -n 3 "$WORK/a/host.jsonl"; echo '{"role":"host",'; } >"$WORK/corrupt.jsonl"
expect_exit2 "line 4: corrupt" "$WORK/corrupt.jsonl"
sed '1s/"version": 1/"version": 2/' "$WORK/a/host.jsonl" >"$WORK/v2.jsonl"
expect_exit2 "version 2 is not supported (this build reads version 1)" "$WORK/v2.jsonl"
expect_exit2 "are both host files" "$WORK/a/host.jsonl" "$WORK/b/host.jsonl"
head -c 3000 /dev/urandom >"$WORK/random.bin"
expect_exit2 "line 1" "$WORK/random.bin"
