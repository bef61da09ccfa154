#!/usr/bin/env bash
# One command line (base/flags.h) for the exporter and every subcommand:
# - `--help` and `-h` print usage on stdout, nothing on stderr, exit 0, for the exporter, probe,
#   record, report and top; the exporter's lists every subcommand;
# - every flag a --help documents is run with one bad value (or none): exit 2, nothing on
#   stdout, one line on stderr that names the flag. A flag in --help without a case below fails
#   the test, so a new flag needs one;
# - -s N and -s=N are the same flag (record, top).
# No eBPF is loaded and nothing listens: every case fails before that, or reaches a closed port.
source "$(dirname "$0")/lib.sh"

run() {  # run ARGS...: sets RC, OUT (stdout), ERR (stderr)
  set +e
  timeout 20 "$EXPORTER" "$@" >"$WORK/stdout" 2>"$WORK/stderr"
  RC=$?
  set -e
  OUT=$(cat "$WORK/stdout")
  ERR=$(cat "$WORK/stderr")
}

# --help and -h on stdout, exit 0.
for cmd in "" probe record report top; do
  for h in --help -h; do
    run $cmd $h
    [ "$RC" = 0 ] || fail "${cmd:-exporter} $h: exit $RC: $ERR"
    [ -z "$ERR" ] || fail "${cmd:-exporter} $h: wrote to stderr: $ERR"
    grep -q "^usage: nvmeof_exporter" <<<"$OUT" || fail "${cmd:-exporter} $h: no usage line: $OUT"
  done
  pass "${cmd:-exporter} --help / -h: usage on stdout, exit 0"
done
run --help
for sub in probe record report top; do
  grep -qE "^  $sub  " <<<"$OUT" || fail "exporter --help does not list '$sub': $OUT"
done
pass "exporter --help lists probe, record, report, top"

# One bad value per documented flag. MISSING: the flag as the last argument, without a value.
declare -A BAD=(
  # the exporter (and probe, which takes the same flags)
  [web.listen-address]=no-port [web.telemetry-path]=metrics [web.config.file]=/nonexistent.yml
  [web.max-requests]=0 [web.max-connections]=1 [web.connection-timeout]=0
  [web.scrape-timeout]=0 [config.file]=/nonexistent.yml [config.check]=maybe
  [path.sysfs]=/nonexistent [path.procfs]=/nonexistent [path.configfs]=/nonexistent
  [path.rootfs]=/nonexistent
  [bpf.mechanism]=uprobe [bpf.btf-path]=/nonexistent [log.level]=loud [version]=maybe
  [bpf.transport-stages]=maybe
  [help]=maybe
  # record
  [output]=MISSING [sample-every]=0 [duration]=0 [role]=initiator [ring-size]=12
  # report
  [detail]=maybe [format]=xml [baseline]="a,b,c"
  # top
  [from]=ftp://localhost/ [from.ca-file]=/nonexistent.pem [from.insecure-skip-verify]=maybe
  [from.username]=MISSING [from.password-file]=/nonexistent [once]=maybe [interval]=0
)
# Arguments a subcommand needs besides the bad flag, so that the flag is what fails.
declare -A NEEDS=([record]="-o $WORK/never.jsonl" [report]="$WORK/never.jsonl" [top]="--once")

checked=0
for cmd in "" probe record report top; do
  run $cmd --help
  flags=$(sed -nE 's/^  (-[a-z], )?--([a-z][a-z0-9.-]*)(=[^ ]+)?$/\2/p' <<<"$OUT")
  [ -n "$flags" ] || fail "${cmd:-exporter} --help documents no flags: $OUT"
  for flag in $flags; do
    [ -n "${BAD[$flag]+x}" ] || fail "${cmd:-exporter} --$flag: no bad-value case in this test"
    bad=${BAD[$flag]}
    if [ "$bad" = MISSING ]; then
      # shellcheck disable=SC2086
      run $cmd ${NEEDS[${cmd:-exporter}]:-} --$flag
    else
      # shellcheck disable=SC2086
      run $cmd ${NEEDS[${cmd:-exporter}]:-} --$flag="$bad"
    fi
    what="${cmd:-exporter} --$flag=$bad"
    [ "$RC" = 2 ] || fail "$what: exit $RC, want 2: $OUT $ERR"
    [ -z "$OUT" ] || fail "$what: wrote to stdout: $OUT"
    [ "$(wc -l <"$WORK/stderr")" = 1 ] || fail "$what: want one line on stderr: $ERR"
    grep -qE -- "(--$flag|-[a-z])\b" <<<"$ERR" || fail "$what: message does not name the flag: $ERR"
    checked=$((checked + 1))
  done
  pass "${cmd:-exporter}: $(wc -w <<<"$flags") documented flags, each bad value exits 2 with one line"
done

# Unknown flags, stray arguments and missing arguments: exit 2, one line.
for args in "--bogus" "--collector.nope" "bogus" "probe stray" "record --bogus -o $WORK/x" \
    "record -o $WORK/x stray" "record" "record -s" "report --bogus $WORK/x" "report" \
    "report a b c" "report --baseline=a,b,c $WORK/x" "top --bogus" "top stray" "top -s"; do
  # shellcheck disable=SC2086
  run $args
  if [ "$RC" != 2 ] || [ -n "$OUT" ] || [ "$(wc -l <"$WORK/stderr")" != 1 ]; then
    fail "$args: exit $RC, want 2 and one line on stderr: $OUT $ERR"
  fi
done
pass "unknown flags, stray and missing arguments: exit 2, one line"

# -s N and -s=N (and --sample-every) are one flag: the same error for the same bad value, and
# a good one parses the same (top then fails to reach the closed port: exit 1, not 2).
for cmd in "record -o $WORK/x" "top --once"; do
  # shellcheck disable=SC2086
  run $cmd -s 0; a=$ERR
  # shellcheck disable=SC2086
  run $cmd -s=0; b=$ERR
  # shellcheck disable=SC2086
  run $cmd --sample-every 0; c=$ERR
  if [ "$a" != "$b" ] || [ "$b" != "$c" ] || [ "$RC" != 2 ]; then
    fail "$cmd: -s 0 / -s=0 / --sample-every 0 differ: '$a' '$b' '$c'"
  fi
done
for s in "-s 4" "-s=4"; do
  # shellcheck disable=SC2086
  run top --once --from=http://127.0.0.1:1/metrics $s
  [ "$RC" = 1 ] || fail "top $s: exit $RC, want 1 (connection refused): $ERR"
done
pass "-s N, -s=N and --sample-every N are one flag (record, top)"
[ "$checked" -ge 40 ] || fail "only $checked flag cases ran"
pass "$checked flag cases"
