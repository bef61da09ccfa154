#!/usr/bin/env bash
# Nothing is served at the defaults that no shipped panel, rule, alert or runbook reads
# (check_served_is_read.py; docs/fleet.md "What the defaults
# serve"). What the defaults serve, from three scrapes:
#   - golden.prom: the default scrape of the fixture trees (every collector but eBPF's series);
#   - the VM suite's real NVMe-oF scrape (tests/fixtures/vm-stages): the eBPF stage families;
#   - as root, a live default scrape of this machine with eBPF loaded: the block-layer and
#     eBPF self-metric families (without root the first two are checked alone, and it says so).
source "$(dirname "$0")/lib.sh"

SCRAPES=("$E2E_DIR/golden.prom" "$FIXTURES/vm-stages/metrics-6.12-fentry.prom.gz")
python3 "$E2E_DIR/check_served_is_read.py" "${SCRAPES[@]}" || fail "served but not read (fixtures)"
pass "every family of the fixture and VM scrapes is read, or allow-listed with a reason"

if [ "$(id -u)" != 0 ]; then
  echo "note: not root: no live eBPF scrape (block-layer and eBPF self-metric families unchecked)"
  exit 0
fi
start_exporter live  # the machine's own roots and every default
for _ in $(seq 300); do  # eBPF loads after the listener starts: 503 until then
  curl -fsS "http://127.0.0.1:$PORT/metrics" >"$WORK/live.prom" 2>/dev/null && break
  sleep 0.1
done
[ -s "$WORK/live.prom" ] || fail "live scrape failed: $(cat "$WORK/live.log")"
dd if=/dev/vda of=/dev/null bs=4k count=256 iflag=direct 2>/dev/null || true  # some block I/O
curl -fsS "http://127.0.0.1:$PORT/metrics" >"$WORK/live.prom" || fail "live scrape failed"
check_series "$WORK/live.prom"
if grep -q '^nvmeof_exporter_bpf_available{reason="ok"} 1' "$WORK/live.prom"; then
  python3 "$E2E_DIR/check_served_is_read.py" "${SCRAPES[@]}" "$WORK/live.prom" ||
    fail "served but not read (live scrape with eBPF: $WORK/live.prom)"
  pass "and every family of a live default scrape with eBPF ($(grep -c '^# TYPE' "$WORK/live.prom") families)"
else
  echo "note: eBPF not available here ($(grep '^nvmeof_exporter_bpf_available' "$WORK/live.prom")): live eBPF families unchecked"
fi
