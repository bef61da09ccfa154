#!/usr/bin/env bash
# TLS and basic auth from an exporter-toolkit web config: plain HTTP and wrong passwords are
# refused, the right client gets /metrics; malformed web configs are refused at start (exit 2).
source "$(dirname "$0")/lib.sh"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
HASH=$(htpasswd -nbBC 10 prom 's3cret' | cut -d: -f2)
cat >"$WORK/web.yml" <<YAML
tls_server_config:
  cert_file: cert.pem   # relative to this file, as in exporter-toolkit
  key_file: key.pem
  min_version: TLS12
basic_auth_users:
  prom: '$HASH'
YAML

start_exporter tls --web.config.file="$WORK/web.yml" --no-collector.pfc
URL="https://127.0.0.1:$PORT/metrics"

code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/metrics" || true)
[ "$code" = 000 ] || fail "plain HTTP to the TLS port answered $code"
pass "plain HTTP refused"

code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$WORK/cert.pem" "$URL")
[ "$code" = 401 ] || fail "no credentials: expected 401, got $code"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$WORK/cert.pem" -u prom:wrong "$URL")
[ "$code" = 401 ] || fail "wrong password: expected 401, got $code"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$WORK/cert.pem" -u nobody:s3cret "$URL")
[ "$code" = 401 ] || fail "unknown user: expected 401, got $code"
pass "missing, wrong and unknown credentials get 401"

curl -fsS --cacert "$WORK/cert.pem" -u prom:s3cret "$URL" >"$WORK/m.prom" || fail "good client"
grep -q '^nvmeof_exporter_build_info{' "$WORK/m.prom" || fail "no build_info in /metrics"
proto=$(curl -s -o /dev/null -w '%{scheme} %{http_version}' --cacert "$WORK/cert.pem" -u prom:s3cret \
  --tlsv1.3 "$URL")
pass "correct client gets /metrics over TLS 1.3 ($proto)"

# `top --from` reads the same endpoint through the web config: TLS verified against the CA,
# basic auth from a password file.
printf 's3cret\n' >"$WORK/pw"
printf 'wrong\n' >"$WORK/pw-wrong"
"$EXPORTER" top --from="$URL" --from.ca-file="$WORK/cert.pem" --from.username=prom \
  --from.password-file="$WORK/pw" --once --interval=0.3 --format=json >"$WORK/top.json" \
  2>"$WORK/top.log" || fail "top --from over TLS with basic auth exited $?: $(cat "$WORK/top.log")"
python3 -c 'import json,sys; f=json.load(open(sys.argv[1])); assert "groups" in f, f' \
  "$WORK/top.json" || fail "top's frame: $(cat "$WORK/top.json")"
top_refused() {  # top_refused WHAT EXPECTED-SUBSTRING ARGS...
  local what=$1 want=$2 rc=0
  shift 2
  "$EXPORTER" top --from="$URL" --once --interval=0.3 "$@" >"$WORK/top.out" 2>&1 || rc=$?
  [ $rc = 1 ] || fail "top, $what: expected exit 1, got $rc: $(cat "$WORK/top.out")"
  grep -q -- "$want" "$WORK/top.out" || fail "top, $what: no \"$want\" in: $(cat "$WORK/top.out")"
}
top_refused "wrong password" "HTTP 401" --from.ca-file="$WORK/cert.pem" --from.username=prom \
  --from.password-file="$WORK/pw-wrong"
top_refused "no credentials" "HTTP 401" --from.ca-file="$WORK/cert.pem"
top_refused "untrusted certificate" "TLS handshake" --from.username=prom --from.password-file="$WORK/pw"
pass "top --from over TLS with basic auth reads /metrics; wrong, missing credentials and an untrusted certificate exit 1 ($(head -c 120 "$WORK/top.out"))"

# Malformed web configs: exit 2 at start, naming what is wrong.
bad() {  # bad NAME EXPECTED-SUBSTRING  (config text on stdin)
  cat >"$WORK/bad-$1.yml"
  set +e
  "$EXPORTER" --web.listen-address=127.0.0.1:0 --web.config.file="$WORK/bad-$1.yml" \
    >"$WORK/bad-$1.out" 2>&1
  local rc=$?
  set -e
  [ $rc = 2 ] || fail "web config $1: expected exit 2, got $rc: $(cat "$WORK/bad-$1.out")"
  grep -qF "$2" "$WORK/bad-$1.out" || fail "web config $1: message lacks '$2': $(cat "$WORK/bad-$1.out")"
  pass "web config $1 refused: $(head -n1 "$WORK/bad-$1.out")"
}
printf 'tls_server_config:\n  cert_file: %s\n' "$WORK/cert.pem" | bad nokey "key_file"
printf 'tls_server_config:\n  cert_file: /nonexistent.pem\n  key_file: /nonexistent.key\n' | bad missing "cannot read"
printf 'basic_auth_users:\n  prom: plaintext\n' | bad plainpw "not a bcrypt hash"
printf 'tls_server_config: [\n' | bad yaml "invalid YAML"
printf 'tls_server_confg:\n  cert_file: x\n' | bad typo "tls_server_confg: unknown key"
printf 'tls_server_config:\n  cert_file: %s\n  key_file: %s\n' "$WORK/key.pem" "$WORK/cert.pem" | bad swapped "not a PEM certificate"
