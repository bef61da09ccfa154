#!/usr/bin/env bash
# `top --from=URL --once --format=json` on a real VM scrape (tests/fixtures/vm-stages): the first
# scrape is the same series at 0, the second the recorded one, so each group's commands/s is
# its count over the measured interval and its stages are the fixture's.
source "$(dirname "$0")/lib.sh"

SNAP=$FIXTURES/vm-stages/metrics-6.12-fentry.prom.gz
zcat "$SNAP" | sed -E 's/ [0-9.e+-]+$/ 0/' >"$WORK/zero.prom"
start_server() {  # a fresh server: its first answer is the zero snapshot; sets PORT
  : >"$WORK/server.log"
  python3 "$E2E_DIR/snapshot_server.py" "$WORK/zero.prom" "$SNAP" >"$WORK/server.log" 2>&1 &
  PIDS+=($!)
  PORT=
  for _ in $(seq 50); do
    PORT=$(head -n 1 "$WORK/server.log")
    [ -n "$PORT" ] && break
    sleep 0.1
  done
  [ -n "$PORT" ] || fail "snapshot server did not start"
}
start_server

"$EXPORTER" top --from="http://127.0.0.1:$PORT/metrics" --once --interval=1 --format=json \
  >"$WORK/top.json" 2>"$WORK/top.log" || fail "top exited $?: $(cat "$WORK/top.log")"
python3 - "$WORK/top.json" <<'PY' || fail "top's JSON: $(cat "$WORK/top.json")"
import json, sys
frame = json.load(open(sys.argv[1]))
secs = frame['interval_seconds']
assert 0.9 <= secs <= 5, secs
groups = {(g['role'], g['transport'], g['op'], g['device']): g for g in frame['groups']}
assert len(groups) == 8, sorted(groups)
g = groups[('host', 'rdma', 'read', 'nvme0n1')]
assert abs(g['commands_per_second'] * secs / 2000 - 1) < 1e-6, g
assert g['sampled'] == 250, g
assert abs(g['mean_seconds'] / (0.457484803 / 250) - 1) < 1e-6, g
assert 0 < g['p50_seconds'] <= g['p99_seconds'], g
names = [s['stage'] for s in g['stages']]
assert names[0] == 'block_submit' and names[-1] == 'block_complete', names
assert 'command_send' in names and 'target_and_response' in names, names
t = groups[('target', 'tcp', 'write', 'nqn.2024-01.io.nvmeof-exporter:vm-stages-tcp')]
assert abs(t['commands_per_second'] * secs / 1998 - 1) < 1e-6, t
# rows sorted by time spent
spent = [x['queue_depth'] for x in frame['groups']]
assert spent == sorted(spent, reverse=True), spent
print('ok: top --once --format=json: %d groups over %.2f s; host rdma read %.0f cmd/s, '
      'mean %.1f us, p99 %.1f us' % (len(groups), secs, g['commands_per_second'],
                                      g['mean_seconds'] * 1e6, g['p99_seconds'] * 1e6))
PY

start_server
"$EXPORTER" top --from="http://127.0.0.1:$PORT/metrics" --once --interval=0.5 >"$WORK/top.txt" \
  2>"$WORK/top.log" || fail "top (text) exited $?"
grep -q "host rdma read - nvme0n1" "$WORK/top.txt" || fail "text frame: $(cat "$WORK/top.txt")"
pass "top text frame: $(head -n 1 "$WORK/top.txt")"

set +e
"$EXPORTER" top --from=http://127.0.0.1:1/metrics --once >"$WORK/out" 2>&1
rc=$?
set -e
[ $rc = 1 ] || fail "unreachable endpoint: expected exit 1, got $rc"
grep -q "cannot connect" "$WORK/out" || fail "unreachable: $(cat "$WORK/out")"
pass "unreachable endpoint: $(cat "$WORK/out")"
