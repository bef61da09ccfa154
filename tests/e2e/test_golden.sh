#!/usr/bin/env bash
# /metrics on the fixture trees must equal tests/e2e/golden.prom (minus timing-dependent lines)
# and pass `promtool check metrics`. Regenerate after an intended change with:
#   UPDATE_GOLDEN=1 tests/e2e/test_golden.sh build/nvmeof_exporter
source "$(dirname "$0")/lib.sh"

start_exporter golden "${FIXTURE_FLAGS[@]}"
curl -fsS "http://127.0.0.1:$PORT/metrics" >"$WORK/raw.prom" || fail "scrape failed"

# Durations and the build revision change every run, and sock_diag reads the live kernel's
# sockets (no fixture root exists for netlink); everything else must be identical.
grep -v -e '^nvmeof_exporter_collector_duration_seconds{' -e '^nvmeof_exporter_build_info{' \
  -e '^nvmeof_tcp_connections{' -e '^nvmeof_tcp_connection_retransmits{' -e '^process_' \
  "$WORK/raw.prom" >"$WORK/metrics.prom"

promtool check metrics <"$WORK/raw.prom" >"$WORK/promtool.log" 2>&1 ||
  { cat "$WORK/promtool.log" >&2; fail "promtool check metrics reported problems"; }
[ -s "$WORK/promtool.log" ] && { cat "$WORK/promtool.log" >&2; fail "promtool printed warnings"; }
pass "promtool check metrics is clean"

python3 "$E2E_DIR/check_metric_model.py" "$WORK/raw.prom" || fail "metric model 1.0 (names, labels)"
pass "every metric is nvmeof_* or process_*, no forbidden label"

if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
  cp "$WORK/metrics.prom" "$E2E_DIR/golden.prom"
  echo "golden.prom updated"
  exit 0
fi
diff -u "$E2E_DIR/golden.prom" "$WORK/metrics.prom" || fail "/metrics differs from golden.prom"
pass "/metrics equals golden.prom"
