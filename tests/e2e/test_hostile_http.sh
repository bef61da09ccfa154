#!/usr/bin/env bash
# Hostile HTTP: a 20,000-slash request line (civetweb's CVE-2025-55763 input), 200 idle
# connections held open and a slowloris client; the exporter must stay up and a normal scrape
# must still succeed within a second. Also: only /, /metrics; 404 elsewhere; 503 past the cap.
source "$(dirname "$0")/lib.sh"

start_exporter hostile "${FIXTURE_FLAGS[@]}" --web.connection-timeout=5
python3 "$E2E_DIR/hostile_http.py" 127.0.0.1 "$PORT" || fail "hostile HTTP checks"
kill -0 "$LAST_PID" || fail "exporter died"
pass "exporter alive after hostile clients"
