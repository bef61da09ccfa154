#!/usr/bin/env bash
# Dashboards lint: generated from dashboards/generate.py and up to date; valid JSON, unique
# uids and panel ids, a unit and a description on every panel, datasource only as the
# ${datasource} variable, no undefined variables; every metric name they use is one the
# exporter's sources emit (renames show up here). The linter itself must catch each defect.
# (The queries are evaluated against a real Prometheus in test_dashboards_prometheus.sh.)
source "$(dirname "$0")/lib.sh"
DASH=$(cd "$E2E_DIR/../../dashboards" && pwd)
CHECK="$E2E_DIR/dashboards_check.py"

python3 "$DASH/generate.py" --check || fail "dashboards/*.json differ from what generate.py makes"
pass "dashboards are what dashboards/generate.py generates"
python3 "$CHECK" lint "$DASH" || fail "dashboard lint"
REPO=$(cd "$E2E_DIR/../.." && pwd)
python3 "$CHECK" names "$DASH" "$REPO"/deploy/prometheus/*.rules.yml -- \
  "$REPO"/collectors/*.cc "$REPO"/loader/*.cc "$REPO"/exporter/*.cc || fail "dashboards/rules use metric names the exporter does not emit"

# Each defect, planted in a copy, must be reported.
mutate() {  # mutate NAME PYTHON-STATEMENT-ON-d
  rm -rf "$WORK/bad" && cp -r "$DASH" "$WORK/bad" && rm -f "$WORK/bad/generate.py"
  python3 - "$WORK/bad/nvmeof-latency.json" "$2" <<'PY'
import json, sys
path, stmt = sys.argv[1], sys.argv[2]
d = json.load(open(path))
panels = [p for p in d["panels"] if p["type"] != "row"]
exec(stmt)
json.dump(d, open(path, "w"))
PY
  if python3 "$CHECK" lint "$WORK/bad" >"$WORK/bad.log" 2>&1; then
    fail "lint missed: $1"
  fi
  pass "lint catches $1: $(grep -m1 FAIL "$WORK/bad.log")"
}
mutate "a duplicate panel id" 'panels[1]["id"] = panels[0]["id"]'
mutate "a missing unit" 'del panels[2]["fieldConfig"]["defaults"]["unit"]'
mutate "a hard-coded datasource uid" 'panels[3]["datasource"] = {"type": "prometheus", "uid": "P1809F7CD0C75ACF3"}'
mutate "a hard-coded uid in a target" 'panels[3]["targets"][0]["datasource"]["uid"] = "prom-main"'
mutate "an undefined variable" 'panels[4]["targets"][0]["expr"] += " * on() group_left $nodevar"'
mutate "a multi-select instance variable" 'next(v for v in d["templating"]["list"] if v["name"] == "instance")["multi"] = True'
mutate "invalid JSON" 'open(path, "w").write("{"); sys.exit(0)'
