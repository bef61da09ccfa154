#!/usr/bin/env bash
# Bad flags and config files: exit code 2 and a message that names the key and the problem.
source "$(dirname "$0")/lib.sh"

expect_exit2() {  # expect_exit2 EXPECTED-SUBSTRING args...
  local want=$1; shift
  set +e
  "$EXPORTER" --web.listen-address=127.0.0.1:0 "$@" >"$WORK/out" 2>&1
  local rc=$?
  set -e
  [ $rc = 2 ] || fail "$*: expected exit 2, got $rc: $(cat "$WORK/out")"
  grep -qF -- "$want" "$WORK/out" || fail "$*: message lacks '$want': $(cat "$WORK/out")"
  pass "exit 2: $(head -n1 "$WORK/out")"
}
cfg() { printf '%b' "$2" >"$WORK/$1.yml"; echo "$WORK/$1.yml"; }

expect_exit2 'unknown collector "nope"' --collector.nope
expect_exit2 'unknown collector "nope"' --no-collector.nope
expect_exit2 '--frobnicate: unknown flag' --frobnicate
expect_exit2 '--path.sysfs: "/nonexistent"' --path.sysfs=/nonexistent
mkdir -m 000 "$WORK/noread"
if [ "$(id -u)" != 0 ]; then expect_exit2 'cannot be read' --path.procfs="$WORK/noread"; fi
expect_exit2 '--path.configfs: "'"$WORK"'/file" is not a readable directory' \
  --path.configfs="$(touch "$WORK/file"; echo "$WORK/file")"
expect_exit2 '--config.file: cannot read' --config.file=/nonexistent.yml
expect_exit2 'collectors.nope: unknown collector' --config.file="$(cfg a 'collectors:\n  nope: true\n')"
expect_exit2 'collectors.rdma: expected true or false' --config.file="$(cfg b 'collectors:\n  rdma: maybe\n')"
expect_exit2 'rdma.devices.include: invalid regular expression' \
  --config.file="$(cfg c 'rdma:\n  devices:\n    include: "mlx5_[0-"\n')"
expect_exit2 'pfc.netdev: unknown key' --config.file="$(cfg d 'pfc:\n  netdev:\n    include: eth0\n')"
expect_exit2 'bpf.sample_every' --config.file="$(cfg e 'bpf:\n  sample_every: 0\n')"
expect_exit2 'bpf.buckets[1]' --config.file="$(cfg f 'bpf:\n  buckets: [0.001, 0.0001]\n')"
expect_exit2 "$WORK/g.yml: yaml-cpp" --config.file="$(cfg g 'rdma: {devices: [\n')"
expect_exit2 '--log.level: "loud"' --log.level=loud
expect_exit2 '--web.telemetry-path' --web.telemetry-path=metrics

# --config.check accepts a good config and exits 0 without serving.
good=$(cfg good 'collectors:\n  pfc: false\nrdma:\n  devices:\n    include: "mlx5_.*"\nbpf:\n  sample_every: 4\n')
"$EXPORTER" --config.file="$good" --config.check >"$WORK/out" 2>&1 || fail "good config rejected: $(cat "$WORK/out")"
pass "--config.check accepts a good config"
