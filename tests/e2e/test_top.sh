#!/usr/bin/env bash
# `top --from=URL --once --format=json` on a real VM scrape (tests/fixtures/vm-stages): the first
# scrape is the same series at 0, the second the recorded one, so each group's commands/s is
# its count over the measured interval and its stages are the fixture's. Then --from against the
# exporter's own web config (TLS, basic auth): what reads, what fails with which message, and
# that the frames' scrapes share one connection.
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
grep -qF "cannot connect to 127.0.0.1:1: Connection refused" "$WORK/out" ||
  fail "unreachable: $(cat "$WORK/out")"
pass "unreachable endpoint: $(cat "$WORK/out")"

# --- The exporter's own web config: TLS verified against a CA file or not at all
# (--from.insecure-skip-verify), basic auth over https and over plain http. Every failure exits
# 1 and names the step: the TLS handshake, the HTTP status.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
# A second CA, which did not sign the server's certificate.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=other \
  -keyout "$WORK/other-key.pem" -out "$WORK/other-ca.pem" 2>/dev/null
HASH=$(htpasswd -nbBC 10 prom 's3cret' | cut -d: -f2)
printf 'tls_server_config: {cert_file: cert.pem, key_file: key.pem}\nbasic_auth_users: {prom: %s}\n' \
  "'$HASH'" >"$WORK/web-tls.yml"
printf 'basic_auth_users: {prom: %s}\n' "'$HASH'" >"$WORK/web-auth.yml"
printf 's3cret\n' >"$WORK/pw"
printf 'wrong\n' >"$WORK/pw-wrong"
AUTH=(--from.username=prom --from.password-file="$WORK/pw")
start_exporter tls "${FIXTURE_FLAGS[@]}" --web.config.file="$WORK/web-tls.yml"
TLS_URL="https://127.0.0.1:$PORT"  # no path: top reads /metrics
start_exporter auth "${FIXTURE_FLAGS[@]}" --web.config.file="$WORK/web-auth.yml"
AUTH_URL="http://127.0.0.1:$PORT/metrics"

top_reads() {  # top_reads WHAT URL FLAG...: one JSON frame
  local what=$1 url=$2 rc=0
  shift 2
  "$EXPORTER" top --from="$url" --once --interval=0.3 --format=json "$@" >"$WORK/top.json" \
    2>"$WORK/top.log" || rc=$?
  [ $rc = 0 ] || fail "top, $what: exited $rc: $(cat "$WORK/top.log")"
  python3 -c 'import json,sys; f=json.load(open(sys.argv[1])); assert "groups" in f, f' \
    "$WORK/top.json" || fail "top, $what: frame: $(cat "$WORK/top.json")"
  pass "top, $what: reads a frame"
}
top_refused() {  # top_refused WHAT EXPECTED-SUBSTRING URL FLAG...
  local what=$1 want=$2 url=$3 rc=0
  shift 3
  "$EXPORTER" top --from="$url" --once --interval=0.3 "$@" >"$WORK/top.out" 2>&1 || rc=$?
  [ $rc = 1 ] || fail "top, $what: expected exit 1, got $rc: $(cat "$WORK/top.out")"
  grep -qF -- "$want" "$WORK/top.out" || fail "top, $what: no \"$want\" in: $(cat "$WORK/top.out")"
  pass "top, $what: $(head -c 200 "$WORK/top.out")"
}
top_reads "https, CA file, basic auth" "$TLS_URL" --from.ca-file="$WORK/cert.pem" "${AUTH[@]}"
top_reads "https, --from.insecure-skip-verify" "$TLS_URL" --from.insecure-skip-verify "${AUTH[@]}"
top_reads "http, basic auth" "$AUTH_URL" "${AUTH[@]}"
top_refused "https, wrong password" "HTTP 401 Unauthorized" "$TLS_URL" \
  --from.ca-file="$WORK/cert.pem" --from.username=prom --from.password-file="$WORK/pw-wrong"
top_refused "http, wrong password" "HTTP 401 Unauthorized" "$AUTH_URL" \
  --from.username=prom --from.password-file="$WORK/pw-wrong"
top_refused "http, no credentials" "HTTP 401 Unauthorized" "$AUTH_URL"
top_refused "https, another CA" "TLS handshake" "$TLS_URL" --from.ca-file="$WORK/other-ca.pem" \
  "${AUTH[@]}"
top_refused "https, system trust" "TLS handshake" "$TLS_URL" "${AUTH[@]}"
top_refused "https, a CA file without a certificate" "no PEM certificate" "$TLS_URL" \
  --from.ca-file="$WORK/key.pem" "${AUTH[@]}"
top_refused "https to a plain http port" "TLS handshake" "${AUTH_URL/http:/https:}" "${AUTH[@]}"
: >"$WORK/pw-empty"
top_refused "empty password file" "cannot read a password" "$AUTH_URL" \
  --from.username=prom --from.password-file="$WORK/pw-empty"

# Keep-alive: every frame's scrape reuses top's one connection (and its TLS session), so after
# several frames a fresh exporter has accepted two connections, top's and the curl reading it.
start_exporter keepalive "${FIXTURE_FLAGS[@]}" --web.config.file="$WORK/web-tls.yml"
TLS_URL="https://127.0.0.1:$PORT"
rc=0
timeout 2.5 "$EXPORTER" top --from="$TLS_URL" --from.ca-file="$WORK/cert.pem" "${AUTH[@]}" \
  --interval=0.2 --format=json >"$WORK/frames.json" 2>"$WORK/top.log" || rc=$?
[ $rc = 124 ] || fail "top over several frames: exit $rc: $(cat "$WORK/top.log")"
frames=$(grep -c '"groups"' "$WORK/frames.json" || true)
[ "$frames" -ge 3 ] || fail "top over 2.5 s at 0.2 s: only $frames frames: $(cat "$WORK/top.log")"
conns=$(curl -fsS --cacert "$WORK/cert.pem" -u prom:s3cret "$TLS_URL/metrics" |
  sed -n 's/^nvmeof_exporter_http_connections_total \([0-9]*\)$/\1/p')
[ "$conns" = 2 ] || fail "top's $((frames + 1)) scrapes: the exporter accepted '$conns'" \
  "connections, want 2 (top's one and curl's)"
pass "top: $((frames + 1)) scrapes over TLS with basic auth on one kept-alive connection"
