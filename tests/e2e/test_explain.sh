#!/usr/bin/env bash
# `explain` against the real exporter (no NVMe-oF here, so its flight recorder is empty: a clear
# "no records" and exit 1; with the recorder off, the 404 named), a target that does not
# answer named while the host side is still read, --targets auto from the fixture controllers,
# TLS and basic auth as top --from takes them; then against two small servers answering canned
# host and target record files with a slow network injected: the tail names the network.
source "$(dirname "$0")/lib.sh"
require python3 openssl

# explain_fails WHAT WANT-RC WANT-SUBSTRING ARGS...: runs explain, checks its status and stderr.
explain_fails() {
  local what=$1 want_rc=$2 want=$3 rc=0
  shift 3
  timeout 60 "$EXPORTER" explain "$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
  [ "$rc" = "$want_rc" ] || fail "$what: exit $rc, want $want_rc: $(cat "$WORK/err" "$WORK/out")"
  grep -qF -- "$want" "$WORK/err" || fail "$what: no \"$want\" in: $(cat "$WORK/err")"
  pass "$what: $(tail -n 1 "$WORK/err")"
}

start_exporter plain "${FIXTURE_FLAGS[@]}"
HOST="http://127.0.0.1:$PORT"
explain_fails "empty flight recorder" 1 "no records: the host exporter's flight recorder holds no" \
  --host "$HOST"
explain_fails "empty, --format json" 1 "no records" --host "$HOST" --format json --since 5m
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["host_commands"] == 0 and d["tail"] is None, d' \
  "$WORK/out" || fail "empty window JSON: $(cat "$WORK/out")"
explain_fails "unreachable target" 1 \
  "target http://127.0.0.1:1: cannot connect to 127.0.0.1:1: Connection refused; the host side is shown without it" \
  --host "$HOST" --target http://127.0.0.1:1
grep -qF "no records" "$WORK/err" || fail "unreachable target: the host side not read: $(cat "$WORK/err")"
# The fixture host's controllers (tests/fixtures/sysfs) connect to 10.0.0.1 and 192.168.x.10:
# each is asked on the host's port and named when it does not answer; pcie is skipped.
explain_fails "--targets auto" 1 "target http://10.0.0.1:$PORT: " --host "$HOST" --targets auto
grep -qF "target http://192.168.1.10:$PORT: " "$WORK/err" || fail "--targets auto: $(cat "$WORK/err")"
grep -qF "0000:03:00.0" "$WORK/err" && fail "--targets auto asked a pcie address: $(cat "$WORK/err")"
explain_fails "no --host" 2 "--host=URL is required" --target "$HOST"
explain_fails "bad --since" 2 "--since: \"1y\" is not a duration" --host "$HOST" --since 1y

start_exporter off "${FIXTURE_FLAGS[@]}" --no-collector.bpf
explain_fails "flight recorder off" 1 "HTTP 404 Not Found" --host "http://127.0.0.1:$PORT"
grep -qF "no host exporter answered" "$WORK/err" || fail "recorder off: $(cat "$WORK/err")"

# TLS and basic auth: the --from.* flags of top.
if command -v htpasswd >/dev/null; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
  HASH=$(htpasswd -nbBC 10 prom 's3cret' | cut -d: -f2)
  printf 'tls_server_config: {cert_file: cert.pem, key_file: key.pem}\nbasic_auth_users: {prom: %s}\n' \
    "'$HASH'" >"$WORK/web-tls.yml"
  printf 's3cret\n' >"$WORK/pw"
  start_exporter tls "${FIXTURE_FLAGS[@]}" --web.config.file="$WORK/web-tls.yml"
  explain_fails "https, CA file, basic auth" 1 "no records" --host "https://127.0.0.1:$PORT" \
    --from.ca-file="$WORK/cert.pem" --from.username=prom --from.password-file="$WORK/pw"
  explain_fails "https, no credentials" 1 "HTTP 401 Unauthorized" --host "https://127.0.0.1:$PORT" \
    --from.ca-file="$WORK/cert.pem"
else
  echo "note: htpasswd not installed: TLS/basic auth part not run"
fi

# --- Canned flight recorders: 200 commands, every 50th with 5 ms more network.
python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
def header(role):
    return {"format": "nvmeof-record", "version": 1, "hostname": role + "-node", "kernel": "6.12",
            "role": role, "mechanism": "tp_btf", "sample_every": 32, "clock": "CLOCK_MONOTONIC"}
host, target = [header("host")], [header("target")]
wall = 1_700_000_000_000_000_000
for i in range(200):
    t = 1_000_000_000 + i * 100_000
    net = 30_000 + (5_000_000 if i % 50 == 7 else 0) + i * 10
    res = 40_000 + i * 7
    posted = t + 10_000
    resp = posted + net + res
    base = {"transport": "tcp", "op": "read", "size": 4096, "qid": 1 + i % 4, "cid": i,
            "cntlid": 1, "subsys": "nqn.2024-06.io.example:pool",
            "hostnqn": "nqn.2014-08.org.nvmexpress:uuid:host", "device": "", "slba": 8 * i,
            "nlb": 7}
    h = {"role": "host", **base, "device": "nvme0c1n1",
         "ts": [t, t + 1000, posted, 0, resp, resp + 1000, resp + 20_000]}
    h["time_ns"] = wall + h["ts"][-1]
    h["ref"] = "h-%d" % h["ts"][-1]
    recv = posted + net // 2 + 3_000_000_000
    g = {"role": "target", **base, "ts": [recv, recv + 1000, 0, 0, recv + res, recv + res + 500]}
    g["time_ns"] = wall + recv - 3_000_000_000
    g["ref"] = "t-%d" % g["ts"][-1]
    host.append(h)
    target.append(g)
for name, lines in (("host", host), ("target", target)):
    with open("%s/%s.jsonl" % (work, name), "w") as f:
        for line in lines:
            f.write(json.dumps(line, separators=(",", ":")) + "\n")
        f.write(json.dumps({"end": True, "records": len(lines) - 1, "lost": 0},
                           separators=(",", ":")) + "\n")
PY
cat >"$WORK/recorder.py" <<'PY'
# A flight recorder endpoint answering one canned record file (argv[1]) for its role (argv[2]).
import http.server, sys, urllib.parse
body, role = open(sys.argv[1], "rb").read(), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query)
        if u.path != "/api/v1/commands" or q.get("role") != [role] or "since" not in q:
            self.send_response(400); self.end_headers(); self.wfile.write(b"bad query\n"); return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
start_recorder() {  # start_recorder ROLE: sets RPORT
  python3 "$WORK/recorder.py" "$WORK/$1.jsonl" "$1" >"$WORK/recorder-$1.log" 2>&1 &
  PIDS+=($!)
  RPORT=
  for _ in $(seq 50); do
    RPORT=$(head -n 1 "$WORK/recorder-$1.log")
    [ -n "$RPORT" ] && return 0
    sleep 0.1
  done
  fail "canned $1 recorder did not start"
}
start_recorder host
HPORT=$RPORT
start_recorder target
TPORT=$RPORT
"$EXPORTER" explain --host "http://127.0.0.1:$HPORT" --target "http://127.0.0.1:$TPORT" \
  --slowest 4 >"$WORK/explain.txt" 2>"$WORK/err" || fail "explain on canned recorders: $(cat "$WORK/err")"
grep -qF "join: 200 of 200 host commands found their target record" "$WORK/explain.txt" &&
  grep -qF "slowest 4 of 200 commands" "$WORK/explain.txt" &&
  grep -qF "network dominates the tail" "$WORK/explain.txt" &&
  grep -qF "target (incl. drive)" "$WORK/explain.txt" ||
  fail "explain text: $(cat "$WORK/explain.txt" "$WORK/err")"
pass "explain text: $(grep 'dominates' "$WORK/explain.txt")"
"$EXPORTER" explain --host "http://127.0.0.1:$HPORT/metrics" --target "http://127.0.0.1:$TPORT" \
  --format=json >"$WORK/explain.json" 2>"$WORK/err" || fail "explain json: $(cat "$WORK/err")"
python3 - "$WORK/explain.json" <<'PY' || fail "explain JSON: $(cat "$WORK/explain.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["host_commands"] == 200 and d["joined"] == 200 and d["unmatched"] == 0, d
assert d["tail"]["dominant"] == "network" and d["tail"]["clear"], d["tail"]
s = d["slowest"][0]
assert s["largest"] == "network" and s["controller"] == "nvme1" and s["joined"], s
assert abs(s["components"]["network"] - 5.0e-3) < 0.1e-3, s
assert s["components"]["drive"] is None, s
print("ok: explain JSON: slowest %s %.3f ms, network %.1f%% of the tail" % (
    s["ref"], s["e2e_seconds"] * 1e3, d["tail"]["dominant_share"] * 100))
PY
# Host only: the same host commands, the wait unsplit.
"$EXPORTER" explain --host "http://127.0.0.1:$HPORT" >"$WORK/host-only.txt" 2>"$WORK/err" ||
  fail "host only: $(cat "$WORK/err")"
grep -qF "host side only" "$WORK/host-only.txt" &&
  grep -qF "network+target dominates the tail" "$WORK/host-only.txt" ||
  fail "host only: $(cat "$WORK/host-only.txt")"
pass "explain host only: $(grep 'dominates' "$WORK/host-only.txt")"
# --watch refreshes until interrupted: a JSON object per refresh, on one kept-alive client.
rc=0
timeout 2.5 "$EXPORTER" explain --host "http://127.0.0.1:$HPORT" --watch 0.5 --format json \
  >"$WORK/watch.json" 2>"$WORK/err" || rc=$?
[ $rc = 124 ] || fail "explain --watch: exit $rc: $(cat "$WORK/err")"
frames=$(grep -c '"tail"' "$WORK/watch.json" || true)
[ "$frames" -ge 3 ] || fail "explain --watch 0.5 over 2.5 s: $frames refreshes"
pass "explain --watch: $frames refreshes in 2.5 s"
