#!/usr/bin/env bash
# `record` and `top` (own eBPF programs) on this machine, which has no NVMe-oF drivers: bad usage
# exits 2 with a message; a valid invocation that cannot attach (no nvme_core/nvmet hooks, or no
# privileges) exits 1 saying why and writes no file. The recording itself is shown by the VM
# scenario `record` (tests/vm/check_record.py).
source "$(dirname "$0")/lib.sh"

expect() {  # expect RC MESSAGE ARGS...
  local want=$1 msg=$2; shift 2
  set +e
  "$EXPORTER" "$@" >"$WORK/out" 2>&1
  local rc=$?
  set -e
  [ "$rc" = "$want" ] || fail "$*: expected exit $want, got $rc: $(cat "$WORK/out")"
  grep -qF -- "$msg" "$WORK/out" || fail "$*: message lacks '$msg': $(cat "$WORK/out")"
  pass "exit $want: $* -> $(head -n 1 "$WORK/out")"
}
expect 2 "-o FILE is required" record -s 4
expect 2 "is not a whole number" record -s 0 -o "$WORK/x"
expect 2 "is not host, target or both" record --role=initiator -o "$WORK/x"
expect 2 "is not a power of 2 MiB" record --ring-size=12 -o "$WORK/x"
expect 2 "--bogus: unknown flag" record --bogus -o "$WORK/x"
expect 2 "is not a whole number" top -s 0
expect 0 "usage: nvmeof_exporter record" record --help
if [ -d /sys/module/nvme_core ] || [ -d /sys/module/nvmet ]; then
  skip "NVMe modules are loaded here: the cannot-attach case does not apply"
fi
expect 1 "cannot load the record eBPF programs" record --duration=1 -o "$WORK/rec.jsonl"
[ ! -e "$WORK/rec.jsonl" ] || fail "record wrote $WORK/rec.jsonl without recording"
expect 1 "--from=URL reads a running exporter instead" top --once
