#!/usr/bin/env bash
# `nvmeof_exporter probe`: the preflight table and its exit status, as root on this kernel and
# without privileges; and without privileges the exporter still serves every other collector
# and says why the eBPF stages are missing.
source "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root (to drop privileges and to load BPF)"

# As root: exit 0 iff the table ends in "result: ok", and the chosen mechanism is the forced one.
for mech in auto fentry kprobe tp_btf raw_tp; do
  rc=0
  "$EXPORTER" probe --bpf.mechanism=$mech >"$WORK/probe-$mech.txt" 2>"$WORK/probe-$mech.log" || rc=$?
  out="$WORK/probe-$mech.txt"
  sed "s/^/  $mech| /" "$out"
  head -n 1 "$out" | grep -Eq '^bpf: (available \(ok\)|unavailable \([a-z_]+\))' ||
    fail "$mech: first line is not the availability line"
  grep -Eq '^HOOK +STATUS +MECHANISM +REQUIRED +TIER +NOTES$' "$out" || fail "$mech: no table header"
  grep -Eq '^block_rq_issue +(ok|missing) +[a-z_-]+ +no +default( |$)' "$out" || fail "$mech: no block_rq_issue row"
  grep -Eq '^block_rq_complete +(ok|missing) +[a-z_-]+ +yes +default( |$)' "$out" ||
    fail "$mech: no block_rq_complete row"
  if [ $rc = 0 ]; then
    grep -q '^result: ok$' "$out" || fail "$mech: exit 0 without result: ok"
    grep -Eq '^block_rq_complete +ok ' "$out" || fail "$mech: exit 0 but required hook missing"
    if [ $mech != auto ]; then
      grep -Eq "^block_rq_complete +ok +$mech( |$)" "$out" || fail "$mech: forced, but another mechanism chosen"
    fi
  else
    [ $rc = 1 ] || fail "$mech: exit status $rc, want 0 or 1"
    grep -q '^result: a required hook cannot attach$' "$out" || fail "$mech: exit 1 without a reason"
    grep -Eq "^block_rq_complete +missing +- +yes +default +$mech: ." "$out" ||
      fail "$mech: missing hook without the mechanism's reason"
  fi
done
# Tracepoints work on every kernel this project targets; auto must find one.
grep -q '^result: ok$' "$WORK/probe-auto.txt" || fail "auto: no mechanism attaches"
pass "probe as root: table and exit status agree for every mechanism"

# Without privileges: probe fails with the reason, the exporter serves and reports it.
command -v setpriv >/dev/null || fail "setpriv (util-linux) missing: the unprivileged part cannot run"
NOPRIV=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all --)
rc=0
"${NOPRIV[@]}" "$EXPORTER" probe >"$WORK/probe-nopriv.txt" 2>&1 || rc=$?
cat "$WORK/probe-nopriv.txt"
[ $rc = 1 ] || fail "unprivileged probe exited $rc, want 1"
grep -q '^bpf: unavailable (no_capability): needs CAP_BPF and CAP_PERFMON' "$WORK/probe-nopriv.txt" ||
  fail "unprivileged probe does not say which capabilities are missing"
pass "probe without privileges: exit 1, says no_capability"

# CAP_BPF + CAP_PERFMON are enough on kernels >= 5.8 (no CAP_SYS_ADMIN, not root).
if "$EXPORTER" probe >/dev/null 2>&1 && grep -q 'CapBnd' /proc/self/status; then
  rc=0
  setpriv --reuid=65534 --regid=65534 --clear-groups --no-new-privs \
    --bounding-set=-all,+bpf,+perfmon --inh-caps=-all,+bpf,+perfmon \
    --ambient-caps=-all,+bpf,+perfmon -- "$EXPORTER" probe >"$WORK/probe-caps.txt" 2>&1 || rc=$?
  cat "$WORK/probe-caps.txt"
  [ $rc = 0 ] || fail "probe with CAP_BPF+CAP_PERFMON only exited $rc"
  pass "probe with only CAP_BPF and CAP_PERFMON: ok"
fi

log="$WORK/nopriv.log"
"${NOPRIV[@]}" "$EXPORTER" --web.listen-address=127.0.0.1:0 --collector.bpf >"$log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
  PORT=$(sed -n 's/.*msg="listening".* port="\([0-9]*\)".*/\1/p' "$log" | head -n 1)
  [ -n "$PORT" ] && break
  kill -0 "${PIDS[-1]}" 2>/dev/null || fail "unprivileged exporter exited: $(cat "$log")"
  sleep 0.1
done
[ -n "$PORT" ] || fail "unprivileged exporter did not start"
curl -fsS "http://127.0.0.1:$PORT/metrics" >"$WORK/nopriv.prom" || fail "scrape failed"
check_series "$WORK/nopriv.prom"
grep -q '^nvmeof_exporter_bpf_available{reason="no_capability"} 0$' "$WORK/nopriv.prom" ||
  fail "no nvmeof_exporter_bpf_available{reason=\"no_capability\"} 0"
grep -q '^nvmeof_exporter_collector_success{collector="bpf"} 1$' "$WORK/nopriv.prom" ||
  fail "bpf collector should succeed (reporting unavailability), not fail the scrape"
grep -q 'level=warn msg="eBPF stage latency unavailable' "$log" || fail "no log line saying why"
if grep -q '^nvmeof_exporter_collector_success' "$WORK/nopriv.prom"; then
  others=$(grep '^nvmeof_exporter_collector_success' "$WORK/nopriv.prom" | grep -vc 'collector="bpf"' || true)
  [ "$others" -gt 0 ] || fail "no other collector ran"
fi
pass "unprivileged exporter serves /metrics and reports why eBPF is off"
