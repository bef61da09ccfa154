#!/usr/bin/env bash
# Least privilege, shown (docs/operating.md "Privileges"): the exporter drops what it no longer needs once
# its collectors are set up (exporter/privileges.h).
# 1. File capabilities, as the container image uses them: a copy of the binary with
#    `setcap cap_bpf,cap_perfmon,cap_net_admin+ep`, run as nobody. What exec grants (the same
#    file capabilities on a copy of sleep, run the same way) vs every thread of the exporter
#    after start-up: CAP_NET_ADMIN gone (rdma_netlink.enable_optional_counters not set),
#    CAP_BPF + CAP_PERFMON kept for the module watcher; a scrape afterwards counts loop-device
#    writes in the eBPF series, exactly, and every collector succeeds.
# 2. The same with rdma_netlink.enable_optional_counters set: CAP_NET_ADMIN is kept.
# 3. As root: everything but CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN (module BTF) is dropped,
#    from the bounding set too, and scrapes still work.
# Not shown here: hooks of a module loaded after the drop attaching. This host has no NVMe-oF
# modules; the VM suite's hotload scenario shows it (exporter as root, so after the drop it
# holds cap_sys_admin,cap_perfmon,cap_bpf; docs/operating.md "Privileges").
source "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root (setcap, setpriv, loop devices)"
require setcap setpriv capsh losetup curl
[ -e /dev/loop-control ] || skip "no loop devices"
"$EXPORTER" --help 2>&1 | grep -q '^ *bpf (default' || skip "built without the bpf collector"

LOOP=
trap 'rc=$?; [ -n "$LOOP" ] && losetup -d "$LOOP"; (exit $rc); cleanup' EXIT
chmod 755 "$WORK"  # nobody executes and reads from here
EXE=$(readlink -f "$EXPORTER")
FILE_CAPS=cap_bpf,cap_perfmon,cap_net_admin+ep
mkdir -p "$WORK/fc"
cp "$EXE" "$WORK/fc/nvmeof_exporter"
cp "$(command -v sleep)" "$WORK/fc/sleep"
setcap "$FILE_CAPS" "$WORK/fc/nvmeof_exporter"
setcap "$FILE_CAPS" "$WORK/fc/sleep"
AS_NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
{ echo '#!/bin/bash'; printf 'exec'; printf ' %q' "${AS_NOBODY[@]}" "$WORK/fc/nvmeof_exporter"
  printf ' "$@"\n'; } >"$WORK/nobody.sh"
chmod 755 "$WORK/nobody.sh"

# caps PID FIELD: that /proc status field of the thread group leader, by name ("" for none).
decode() { capsh --decode="$1" | cut -d= -f2; }
caps() { decode "$(awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status")"; }
# every_thread PID WANT: CapEff and CapPrm of every thread are WANT, CapAmb and CapInh empty.
every_thread() {
  local pid=$1 want=$2 n=0 t f got
  for t in /proc/"$pid"/task/*; do
    for f in CapEff CapPrm CapInh CapAmb; do
      got=$(decode "$(awk -v f="$f:" '$1 == f {print $2}' "$t/status")")
      case $f in
        CapEff | CapPrm) [ "$got" = "$want" ] || fail "thread ${t##*/} of $pid: $f is '$got', want '$want'" ;;
        *) [ -z "$got" ] || fail "thread ${t##*/} of $pid: $f is '$got', want none" ;;
      esac
    done
    n=$((n + 1))
  done
  THREADS=$n
}
scrape() { curl -fsS "http://127.0.0.1:$PORT/metrics" >"$WORK/$1.prom" || fail "scrape $1"; check_series "$WORK/$1.prom"; }
collectors_ok() {
  local bad
  bad=$(grep '^nvmeof_exporter_collector_success' "$WORK/$1.prom" | grep -v ' 1$' || true)
  [ -z "$bad" ] || fail "$1: collectors failing: $bad"
}
writes() {  # writes counted for the loop disk in scrape $1
  awk -v d="disk=\"${LOOP#/dev/}\"" 'index($0, "nvmeof_block_requests_total{") == 1 &&
    index($0, d) && index($0, "op=\"write\"") {print $2}' "$WORK/$1.prom"
}

truncate -s 16M "$WORK/disk"
LOOP=$(losetup -f --show "$WORK/disk") || fail "losetup"

# --- what exec grants: the same file capabilities, the same setpriv, on sleep
"${AS_NOBODY[@]}" "$WORK/fc/sleep" 30 &
SLEEP_PID=$!
PIDS+=("$SLEEP_PID")
sleep 0.3
GRANTED_EFF=$(caps $SLEEP_PID CapEff)
GRANTED_PRM=$(caps $SLEEP_PID CapPrm)
[ "$GRANTED_PRM" = "cap_net_admin,cap_perfmon,cap_bpf" ] ||
  fail "exec with file caps $FILE_CAPS as nobody grants '$GRANTED_PRM'"
kill $SLEEP_PID
pass "before: exec of a file with $FILE_CAPS as uid 65534 gives CapPrm=$GRANTED_PRM CapEff=$GRANTED_EFF"

# --- 1. file capabilities, no optional counters configured: NET_ADMIN goes
EXPORTER="$WORK/nobody.sh" start_exporter fc
XPID=$LAST_PID
[ "$(awk '$1 == "Uid:" {print $2}' /proc/$XPID/status)" = 65534 ] || fail "not running as 65534"
grep -q 'msg="capabilities after start-up" kept="cap_perfmon,cap_bpf" dropped="cap_net_admin"' \
  "$WORK/fc.log" || fail "log line: $(grep capabilities "$WORK/fc.log")"
every_thread $XPID "cap_perfmon,cap_bpf"
pass "after: every thread ($THREADS) CapEff=CapPrm=cap_perfmon,cap_bpf, no inheritable/ambient; log: $(grep -o 'kept=.*' "$WORK/fc.log")"
scrape fc-before
grep -q '^nvmeof_exporter_bpf_available{reason="ok"} 1' "$WORK/fc-before.prom" ||
  fail "eBPF not available: $(grep bpf_available "$WORK/fc-before.prom")"
before=$(writes fc-before)
dd if=/dev/zero of="$LOOP" bs=4k count=64 oflag=direct status=none || fail "dd"
sleep 0.5
scrape fc-after
collectors_ok fc-after
after=$(writes fc-after)
[ "$(( ${after:-0} - ${before:-0} ))" = 64 ] ||
  fail "64 direct writes to $LOOP after the drop counted as $(( ${after:-0} - ${before:-0} )) (${before:-none} -> ${after:-none})"
every_thread $XPID "cap_perfmon,cap_bpf"  # also the threads the scrapes made
pass "scrape after the drop: all collectors succeed, eBPF counted 64 of 64 writes to ${LOOP#/dev/}; still $THREADS threads with cap_perfmon,cap_bpf only"
kill "$XPID"; wait "$XPID" 2>/dev/null || true

# --- 2. optional RDMA counters configured (rdma_netlink is off by default): NET_ADMIN
# (STAT_SET on a scrape) stays
printf 'rdma_netlink:\n  enable_optional_counters: [cc_rx_ce_pkts]\n' >"$WORK/optional.yml"
chmod 644 "$WORK/optional.yml"
EXPORTER="$WORK/nobody.sh" start_exporter fc-netadmin --collector.rdma_netlink \
  --config.file="$WORK/optional.yml"
XPID=$LAST_PID
grep -q 'kept="cap_net_admin,cap_perfmon,cap_bpf" dropped=""' "$WORK/fc-netadmin.log" ||
  fail "log line: $(grep capabilities "$WORK/fc-netadmin.log")"
every_thread $XPID "cap_net_admin,cap_perfmon,cap_bpf"
scrape fc-netadmin
collectors_ok fc-netadmin
pass "with rdma_netlink.enable_optional_counters: cap_net_admin kept with cap_perfmon,cap_bpf"
kill "$XPID"; wait "$XPID" 2>/dev/null || true

# --- 3. as root: only the watcher's capabilities stay, bounding set included
start_exporter root
XPID=$LAST_PID
WANT="cap_sys_admin,cap_perfmon,cap_bpf"
grep -q "msg=\"capabilities after start-up\" kept=\"$WANT\" dropped=\"cap_chown,.*cap_net_admin," \
  "$WORK/root.log" || fail "log line: $(grep capabilities "$WORK/root.log")"
every_thread $XPID "$WANT"
[ "$(caps $XPID CapBnd)" = "$WANT" ] || fail "bounding set: $(caps $XPID CapBnd)"
scrape root
collectors_ok root
grep -q '^nvmeof_exporter_bpf_available{reason="ok"} 1' "$WORK/root.prom" || fail "eBPF as root"
pass "as root: every thread ($THREADS) and the bounding set keep only $WANT; scrape ok"
echo "not shown here: a hooked module loaded after the drop attaching (no NVMe-oF modules on this host; VM hotload scenario)"
