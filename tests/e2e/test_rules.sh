#!/usr/bin/env bash
# The shipped Prometheus rules: promtool accepts them, their unit tests pass, every alert has a
# firing and a quiet test case and its summary/description/runbook, and the tests would notice
# a changed threshold.
source "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null || fail "promtool is not installed (apt-get install prometheus)"
RULES=$(cd "$E2E_DIR/../../deploy/prometheus" && pwd)

promtool check rules "$RULES"/*.rules.yml >"$WORK/check.log" 2>&1 || fail "promtool check rules: $(cat "$WORK/check.log")"
grep -q FAILED "$WORK/check.log" && fail "promtool check rules: $(cat "$WORK/check.log")"
pass "promtool check rules: $(grep -o '[0-9]* rules found' "$WORK/check.log" | tr '\n' ' ')"

(cd "$RULES/tests" && promtool test rules ./*.test.yml) >"$WORK/test.log" 2>&1 ||
  fail "promtool test rules: $(cat "$WORK/test.log")"
pass "promtool test rules: $(grep -c SUCCESS "$WORK/test.log") test files"

python3 "$E2E_DIR/dashboards_check.py" rules-coverage "$RULES/nvmeof-alerts.rules.yml" "$RULES"/tests/*.test.yml ||
  fail "rules coverage"
python3 "$E2E_DIR/dashboards_check.py" recording-rules "$RULES/nvmeof-recording.rules.yml" \
  "$RULES/nvmeof-alerts.rules.yml" "$E2E_DIR/../../dashboards" || fail "recording rules"

# Mutation: raise one threshold; the unit tests must fail.
mkdir -p "$WORK/m/tests"
cp "$RULES"/tests/*.test.yml "$WORK/m/tests/"
sed 's/increase(nvmeof_rdma_local_ack_timeout_errors_total\[5m\]) > 10/increase(nvmeof_rdma_local_ack_timeout_errors_total[5m]) > 1000/' \
  "$RULES/nvmeof-alerts.rules.yml" >"$WORK/m/nvmeof-alerts.rules.yml"
cmp -s "$RULES/nvmeof-alerts.rules.yml" "$WORK/m/nvmeof-alerts.rules.yml" && fail "mutation did not apply"
if (cd "$WORK/m/tests" && promtool test rules nvmeof-alerts.test.yml) >"$WORK/mutant.log" 2>&1; then
  fail "the unit tests still pass with RdmaAckTimeouts' threshold raised 100x"
fi
grep -q 'alertname: RdmaAckTimeouts' "$WORK/mutant.log" || fail "mutant failed for another reason: $(head "$WORK/mutant.log")"
pass "a raised threshold makes the unit tests fail"
