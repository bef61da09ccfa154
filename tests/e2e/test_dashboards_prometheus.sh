#!/usr/bin/env bash
# Every dashboard panel query, every dashboard variable and every recording and alerting rule,
# evaluated by a real Prometheus server through its HTTP API, must return data.
#
# Where the data comes from:
# - LIVE: Prometheus scrapes the real exporter every second. One exporter reads a copy of the
#   fixture trees (RDMA/PFC/NVMe/nvmet/TCP) whose counters fixture_traffic.py advances every
#   second (a congested RoCE port with a pause storm); when the build has the bpf collector, a
#   second exporter reads this machine's real /sys and /proc with eBPF block-layer tracing while
#   dd does direct I/O.
# - REAL, RECORDED: the NVMe-oF stage series (host and target, NVMe/RDMA and NVMe/TCP) of a real
#   scrape from the VM suite's `stages` scenario (tests/fixtures/vm-stages/), replayed by
#   synthetic_nvmeof.py --vm-replay and backfilled with `promtool tsdb create-blocks-from
#   openmetrics` into the TSDB before Prometheus starts.
# - SYNTHETIC (clearly a stand-in): a host/target history (raw samples a week ago, a day ago
#   and now) with a drive that degraded 20 minutes ago and a weekly batch job, for the
#   latency-regression alerts, and a network estimate of known size, which one VM run cannot
#   show; the host as a Kubernetes node (two pods' volumes on its namespaces, kube-state-metrics'
#   kube_pod_info) for the p99 by pod; backfilled the same way. If the exporter was built without the bpf collector, its eBPF
#   and block-layer series are backfilled too (and the test says so).
# - RECORDED HISTORY: the regression alerts read recorded p99s a day and a week back, which a
#   new server lacks (they are silent: checked first). The test then runs docs/fleet.md's
#   two-pass `promtool tsdb create-blocks-from rules` block, as the docs give it, against the
#   Prometheus under test, loads the blocks into it, and checks that the alerts fire on the
#   degraded drive and stay silent on the weekly batch job.
# On each Prometheus version (lib.sh prom_versions: 2.42, then 3.5 LTS; exit 77 where 3.5
# cannot be had).
source "$(dirname "$0")/lib.sh"
type -P prometheus >/dev/null || fail "prometheus is not installed (apt-get install prometheus)"
type -P promtool >/dev/null || fail "promtool is not installed (apt-get install prometheus)"
REPO=$(cd "$E2E_DIR/../.." && pwd)
T_START=$(date +%s)
exec 3>&1  # the checks' own lines, also from inside the docs' backfill (its output goes to a log)

# --- live exporters
cp -a "$FIXTURES" "$WORK/fx"
python3 "$E2E_DIR/fixture_traffic.py" "$WORK/fx" >"$WORK/traffic.log" 2>&1 &
PIDS+=($!)
FX_FLAGS=(--path.sysfs="$WORK/fx/sysfs" --path.procfs="$WORK/fx/procfs"
  --path.configfs="$WORK/fx/configfs" --testing.ethtool-dir="$WORK/fx/ethtool")
BUILT_BPF=0 HAVE_BPF=0
"$EXPORTER" --help 2>&1 | grep -q '^ *bpf (default' && BUILT_BPF=1
[ $BUILT_BPF = 1 ] && [ "$(id -u)" = 0 ] && HAVE_BPF=1  # live eBPF tracing needs root here
if [ $BUILT_BPF = 1 ]; then
  start_exporter fixture "${FX_FLAGS[@]}" --no-collector.bpf
else
  start_exporter fixture "${FX_FLAGS[@]}"
fi
FX_TARGET=127.0.0.1:$PORT
TARGETS=$FX_TARGET  # prom_job's comma-separated TARGETS
LIVE_TARGET=
if [ $HAVE_BPF = 1 ]; then
  printf 'bpf:\n  enable_stats: true\n' >"$WORK/live.yml"
  start_exporter live --config.file="$WORK/live.yml"
  LIVE_TARGET=127.0.0.1:$PORT
  TARGETS="$TARGETS,$LIVE_TARGET"
  # Direct I/O on the disk under $WORK so the block-layer histograms move.
  (while :; do
    dd if=/dev/zero of="$WORK/io" bs=4k count=256 oflag=direct conv=notrunc 2>/dev/null
    dd if="$WORK/io" of=/dev/null bs=4k iflag=direct 2>/dev/null
    sleep 0.2
  done) &
  PIDS+=($!)
else
  echo "NOTE: no live eBPF here (bpf collector built: $BUILT_BPF, uid $(id -u)): eBPF and" \
    "block-layer series are SYNTHETIC (backfilled) in this run"
fi
curl -fsS "http://$FX_TARGET/metrics" >"$WORK/fixture.prom" || fail "fixture exporter does not answer"
check_series "$WORK/fixture.prom"

# --- the configuration of the Prometheus under test: the shipped rules, evaluated every second
# here (30 s and 1 m in the files)
mkdir -p "$WORK/rules"
for f in "$REPO"/deploy/prometheus/*.rules.yml; do
  sed -E 's/^(\s+interval:).*/\1 1s/' "$f" >"$WORK/rules/$(basename "$f")"
done
# What the Prometheus Operator adds to every series of a ServiceMonitor target (the backfill gets
# the same from synthetic_nvmeof.py --operator-labels): rules and panels must keep working, and no
# exporter label may collide with these.
OPERATOR_RELABEL=$(cat <<'YAML'
relabel_configs:
  - {target_label: namespace, replacement: monitoring}
  - {target_label: service, replacement: nvmeof-exporter}
  - {target_label: endpoint, replacement: metrics}
  - {source_labels: [__address__], regex: '([^:]+):.*', target_label: pod, replacement: 'nvmeof-exporter-$1'}
  # The fabric the node belongs to (deploy/prometheus/prometheus.yml): the fabric rules of
  # nvmeof-connections.rules.yml compare only series that carry one.
  - {target_label: fabric, replacement: roce-a}
YAML
)
prom_config "$WORK/prometheus.yml" 1s nvmeof "$TARGETS" "$OPERATOR_RELABEL"
prom_rules "$WORK/prometheus.yml" "$WORK/rules/*.rules.yml"

# query EXPR [TIME]: prints "value" lines of an instant query.
query() {
  curl -fsS --get "$PROM/api/v1/query" --data-urlencode "query=$1" ${2:+--data-urlencode "time=$2"} |
    python3 -c 'import json,sys; d=json.load(sys.stdin)
for r in d["data"]["result"]: print(r["value"][1])'
}

# --- docs/fleet.md's backfill of the recorded history: its ```sh block that runs `promtool tsdb
# create-blocks-from rules`, run as written with this server's URL, the repository's rules, this
# server's data directory, a range set here (no `start=` line) and load_blocks in place of the
# `sleep` that waits for a running server to load the blocks (a restart loads them at once).
awk '/^```sh$/ { b = ""; inb = 1; next }
     /^```$/ { if (inb && b ~ /create-blocks-from rules/) { printf "%s", b; exit } inb = 0; next }
     inb { b = b $0 "\n" }' "$REPO/docs/fleet.md" >"$WORK/backfill-docs.sh"
sed -e '/^start=/d' \
  -e 's|http://127.0.0.1:9090|"$PROM"|' \
  -e 's|/etc/prometheus/rules/|"$REPO"/deploy/prometheus/|' \
  -e 's|/var/lib/prometheus/metrics2/|"$WORK"/tsdb/|' \
  -e 's|^\( *\)sleep [0-9]*|\1load_blocks $pass|' "$WORK/backfill-docs.sh" >"$WORK/backfill.sh"
grep -q '^start=' "$WORK/backfill-docs.sh" && grep -q 'create-blocks-from rules' "$WORK/backfill.sh" &&
  grep -q -- '--url="$PROM"' "$WORK/backfill.sh" && grep -q 'load_blocks \$pass' "$WORK/backfill.sh" &&
  grep -q '"$REPO"/deploy/prometheus/nvmeof-recording.rules.yml' "$WORK/backfill.sh" &&
  grep -q 'mv backfill-$pass/\* "$WORK"/tsdb/' "$WORK/backfill.sh" &&
  ! grep -Eq '9090|/etc/prometheus|/var/lib/prometheus|sleep' "$WORK/backfill.sh" ||
  fail "docs/fleet.md's backfill block is not the shape this test runs: $(cat "$WORK/backfill-docs.sh")"

# restart_prometheus: the Prometheus under test again, on the same data directory and port.
restart_prometheus() {
  local pid
  for pid in "${PROM_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  PROM_PIDS=()
  "$(prom_bin prometheus)" --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
    --web.listen-address="127.0.0.1:$PROM_PORT" >>"$WORK/prometheus.log" 2>&1 &
  PIDS+=($!)
  PROM_PIDS+=($!)
  for _ in $(seq 240); do
    curl -fsS "$PROM/-/ready" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  fail "Prometheus did not come back after a restart"
}

# load_blocks PASS (in the docs' block, for its `sleep`): loads the blocks just moved into the
# data directory, and checks what the pass wrote over the window ($start..$end): on this
# classic-bucket server, pass 1 the bucket rates but no p99 (the p99 reads the recorded bucket
# rates, which the server did not have yet), pass 2 the p99s.
load_blocks() {
  local t=$((end - 60)) sel='{instance="vm-target:10420"}' rates p99
  restart_prometheus
  rates=$(query "count(instance:nvmeof_stage_latency_seconds_bucket:rate5m$sel)" "$t")
  p99=$(query "count(instance:nvmeof_stage_latency_seconds:p99_5m$sel)" "$t")
  case $1 in
    1) [ -n "$rates" ] && [ -z "$p99" ] ||
         fail "$WINDOW, pass 1: recorded bucket rates '$rates', p99s '$p99' (expected rates, no p99)" ;;
    *) [ -n "$p99" ] || fail "$WINDOW, pass 2: no recorded p99 (bucket rates '$rates')" ;;
  esac
  pass "T_END+$(($(date +%s) - T_END))s: backfill $WINDOW, pass $1: $(find "$WORK/tsdb" -maxdepth 1 -name '01*' | wc -l) blocks loaded;" \
    "recorded at -$(((T_END - t) / 60)) min: ${rates:-0} stage bucket rates, ${p99:-no} stage p99s" >&3
}

# firing ALERT TIME: one line per series for which the alert's condition holds at TIME (the
# expression Prometheus loaded): "role instance op nqn stage".
firing() {
  python3 - "$PROM" "$1" "$2" <<'PY'
import json, sys, urllib.parse, urllib.request
prom, name, t = sys.argv[1:]
get = lambda path: json.load(urllib.request.urlopen(prom + path))["data"]
expr = [r["query"] for g in get("/api/v1/rules")["groups"] for r in g["rules"] if r["name"] == name][0]
for r in get("/api/v1/query?" + urllib.parse.urlencode({"query": expr, "time": t}))["result"]:
    m = r["metric"]
    print(" ".join(m.get(k) or "-" for k in ("role", "instance", "op", "nqn", "stage")))
PY
}

check_version() {
  # --- synthetic NVMe-oF stage series, backfilled before Prometheus opens the TSDB (Prometheus
  # refuses live samples older than the newest block, so the backfill ends now).
  T_END=$(date +%s)
  local SYN_FLAGS=(--end "$T_END" --out "$WORK/synthetic.om" --host-instance vm-host:10420
    --target-instance vm-target:10420 --topology "$WORK/fixture.prom"
    --vm-replay "$FIXTURES/vm-stages/metrics-6.12-fentry.prom.gz" --vm-instance vm-stages:10420
    --operator-labels --kubernetes)
  [ $HAVE_BPF = 1 ] || SYN_FLAGS+=(--with-bpf)
  python3 "$E2E_DIR/synthetic_nvmeof.py" "${SYN_FLAGS[@]}"
  promtool tsdb create-blocks-from openmetrics "$WORK/synthetic.om" "$WORK/tsdb" >"$WORK/backfill.log" 2>&1 ||
    fail "backfill failed: $(tail -n 5 "$WORK/backfill.log")"
  rm -f "$WORK/synthetic.om"
  promtool check config "$WORK/prometheus.yml" >"$WORK/check-config.log" 2>&1 ||
    fail "promtool check config: $(cat "$WORK/check-config.log")"
  pass "backfilled recorded VM and synthetic NVMe-oF stage series ($(grep -c '^[0-9A-Z]\{26\}' "$WORK/backfill.log") blocks)"

  # --- Prometheus with the shipped rules, evaluated every second here (30 s and 1 m in the files)
  start_prometheus
  PROM=http://127.0.0.1:$PROM_PORT

  local want_up
  want_up=$([ -n "$LIVE_TARGET" ] && echo 2 || echo 1)
  for _ in $(seq 90); do
    [ "$(query 'count(up{job="nvmeof"} == 1)' 2>/dev/null)" = "$want_up" ] && break
    sleep 1
  done
  [ "$(query 'count(up{job="nvmeof"} == 1)')" = "$want_up" ] || fail "Prometheus never scraped the exporters"
  local T_UP T_EVAL
  T_UP=$(date +%s)
  sleep 6  # 1 s scrapes: 5+ live samples in every rate window
  # Evaluate at a fixed time: live rate windows hold 5+ scrapes, and the backfill (5 s apart
  # until T_END) still holds 2+ samples per 5-minute window (the rules', and the panels' here:
  # $__rate_interval is 5m, so that a slow start on a loaded machine does not empty them).
  T_EVAL=$((T_UP + 6 > T_END + 15 ? T_UP + 6 : T_END + 15))
  while [ "$(date +%s)" -le "$T_EVAL" ]; do sleep 1; done
  [ $((T_EVAL - T_END)) -le 150 ] ||
    fail "Prometheus took $((T_EVAL - T_END)) s to start scraping; the backfill's 5-minute windows (and the backfill of the history after this) need <= 150 s, the backfill after it the rest of 270 s"
  pass "Prometheus scrapes $want_up exporter(s); evaluating at T_END+$((T_EVAL - T_END))s"

  # The live data is what the fixtures and the traffic say (not a backfill).
  [ "$(query "nvmeof_rdma_port_rate_bytes_per_second{instance=\"$FX_TARGET\",rdma_device=\"mlx5_0\"}" "$T_EVAL")" = 12500000000 ] ||
    fail "live fixture series missing"
  local ecn reqs
  ecn=$(query "rate(nvmeof_rdma_ecn_marked_packets_total{instance=\"$FX_TARGET\",rdma_device=\"mlx5_0\"}[5s])" "$T_EVAL")
  python3 -c "import sys; sys.exit(0 if 4000 < float('${ecn:-0}') < 8000 else 1)" ||
    fail "ECN-marked rate of the moving fixture is '${ecn}', expected ~6000/s"
  pass "live scrape of the fixture exporter: mlx5_0 at 100 Gb/s, ${ecn%%.*} ECN-marked packets/s"
  if [ -n "$LIVE_TARGET" ]; then
    [ "$(query "nvmeof_exporter_bpf_hook_attached{instance=\"$LIVE_TARGET\",hook=\"block_rq_complete\"}" "$T_EVAL")" = 1 ] ||
      fail "live exporter: block_rq_complete hook not attached: $(grep -i bpf "$WORK/live.log" | head -3)"
    reqs=$(query "sum(increase(nvmeof_block_requests_total{instance=\"$LIVE_TARGET\"}[1m]))" "$T_EVAL")
    python3 -c "import sys; sys.exit(0 if float('${reqs:-0}') > 0 else 1)" ||
      fail "live exporter: no block requests traced"
    pass "live eBPF block-layer tracing: ${reqs%%.*} requests in the last minute"
  fi

  # --- no recorded history yet (a new server): no baseline, so the regression alerts cannot even
  # be computed (docs/fleet.md: they arm after a day and a week of recorded history).
  python3 "$E2E_DIR/dashboards_check.py" eval --prom "$PROM" --time "$T_EVAL" \
    --only 'p99_5m_baseline|p99_5m offset' \
    --expect-empty instance:nvmeof_command_latency_seconds:p99_5m_baseline \
    --expect-empty instance:nvmeof_stage_latency_seconds:p99_5m_baseline \
    --expect-empty NvmeofLatencyRegression --expect-empty NvmeofStageLatencyRegression \
    "$REPO/dashboards" 2>&1 | tee "$WORK/eval-no-history.log" || fail "baseline/regression evaluation without history"

  # --- the recorded history, backfilled with docs/fleet.md's block, over the raw samples a week
  # and a day ago (synthetic_nvmeof.py timestamps: -12 to +6 minutes around T_END - 1w / 1d).
  local back T_EVAL2 p99s
  (cd "$WORK" && rm -rf backfill-1 backfill-2)
  for back in week:604800 day:86400; do
    WINDOW=${back%%:*} start=$((T_END - ${back#*:} - 12 * 60)) end=$((T_END - ${back#*:} + 6 * 60))
    pushd "$WORK" >/dev/null
    source "$WORK/backfill.sh" >>"$WORK/backfill-rules.log" 2>&1
    popd >/dev/null
  done

  # The baselines are the live rules' (1 s here), reading that history: wait for their first
  # evaluation after the last restart. The live p99s read the raw samples up to T_END: 5-minute
  # windows, so this must come within about 4 minutes of T_END.
  for _ in $(seq 60); do
    [ -n "$(query 'count(instance:nvmeof_stage_latency_seconds:p99_5m_baseline)')" ] && break
    sleep 0.5
  done
  # And both exporters scraped since the restart (up is 1 for each): right after a restart a
  # first scrape of an ASan build can miss its 1 s timeout, and an evaluation then would read
  # the exporters as down.
  for _ in $(seq 60); do
    [ "$(query 'count(up{job="nvmeof"} == 1)')" = 2 ] && break
    sleep 0.5
  done
  sleep 2
  T_EVAL2=$(date +%s)
  [ $((T_EVAL2 - T_END)) -le 270 ] ||
    fail "the backfill took until T_END+$((T_EVAL2 - T_END))s; the live rules' 5-minute windows need <= 270 s"
  # --- every panel, variable and rule, with the recorded history
  local EXPECT=(
    # fixtures (nvme2 is connecting) and fixture_traffic.py (storm, losses, ECN). Not
    # RdmaPfcPausedHigh: a 5-minute rate over seconds of scrapes cannot reach 25% paused.
    --expect-firing NvmeofControllerNotLive --expect-firing RdmaPfcPauseStorm
    --expect-firing RdmaPfcPauseStormWarning
    --expect-firing RdmaRetransmitBurst --expect-firing RdmaAckTimeouts
    --expect-firing RdmaEcnCongestion
    # the drive under ssd-pool that degraded 20 minutes ago, against the backfilled baselines
    --expect-firing NvmeofLatencyRegression --expect-firing NvmeofStageLatencyRegression
    # fabric roce-a (the fixture exporter alone): rxe0 on veth0 (MTU 1500, RoCE path MTU 1024)
    # beside mlx5_0 and bnxt_re0 at 4096; ECN and PFC differ only on mlx5_2, whose port is down
    --expect-firing RdmaFabricMtuMismatch --expect-quiet RdmaFabricEcnMismatch
    --expect-quiet RdmaFabricPfcMismatch
    # the synthetic connection lifecycle (synthetic_nvmeof.py emit_lifecycle)
    --expect-firing NvmeofHostConnectFailures --expect-firing NvmeofTargetConnectRejected
    --expect-firing NvmeofControllerFlapping --expect-firing NvmeofHostKeepAliveFailures
    --expect-firing NvmeofTargetKeepAliveExpired --expect-firing RdmaCmConnectFailures
    # healthy on this data: nvme1n1 still has a live path, mlx5_2 was never up, exporters run
    --expect-quiet NvmeofNamespaceNoUsablePath --expect-quiet RdmaPortDown
    --expect-quiet NvmeofExporterDown --expect-quiet NvmeofExporterCollectorFailing
    # the counter now minus 5 minutes ago: nothing before a series is 5 minutes old (seconds
    # here; its promtool tests cover it)
    --expect-empty RdmaTransportRetryExceeded
    # the synthetic multipath events (synthetic_nvmeof.py emit_multipath): nvme0 fails over
    # once a minute, nvme0n1 requeues I/O without a path and stalls 6 s every 2 minutes
    --expect-firing NvmeofNamespaceFailingOver --expect-firing NvmeofNamespaceIoWithoutPath
    --expect-firing NvmeofNamespaceFailoverStall
  )
  # This Prometheus stores classic buckets (no native-histogram flag); every panel and rule must
  # answer from them (test_native_histograms.sh does the same with native histograms).
  [ $HAVE_BPF = 1 ] && EXPECT+=(--expect-quiet NvmeofExporterBpfRequiredHookMissing
    --expect-quiet NvmeofExporterBpfUnavailable)
  python3 "$E2E_DIR/dashboards_check.py" eval --prom "$PROM" --time "$T_EVAL2" "${EXPECT[@]}" \
    --var __rate_interval=5m \
    "$REPO/dashboards" 2>&1 | tee "$WORK/eval.log" || fail "dashboard/rule evaluation"

  # The network estimate recording rules join host and target correctly: the synthetic data puts
  # 7 us of network under NVMe/RDMA and 45 us under NVMe/TCP (synthetic_nvmeof.py NETWORK_US); the
  # estimate is the host's round trip (driver_submit 3 + network_and_target + host_receive 4 us,
  # HOST_MEANS) minus the target's residence (submit + storage), so it also counts the host driver
  # and receive path (7 us) and the target's receive and response stages (3 + 8 us RDMA, 6 + 15 us
  # TCP, reads, TARGET_MEANS): 7 + 7 + 11 = 25 us and 45 + 7 + 21 = 73 us.
  local case got n t nqn role
  for case in "ssd-pool rdma 25" "null-test tcp 73"; do
    set -- $case
    got=$(query "instance_nqn:nvmeof_network_estimate_seconds:mean5m{nqn=\"nqn.2024-06.io.example:$1\",op=\"read\"}" "$T_EVAL2")
    python3 -c "import sys; v=float('${got:-nan}')*1e6; sys.exit(0 if abs(v-$3) < 0.1*$3 else 1)" ||
      fail "network estimate for $1 ($2) is '${got}' s, expected ~$3 us"
    pass "network estimate $1 ($2): $(python3 -c "print(round(float('$got')*1e6,2))") us"
  done

  # The real VM series: both roles present, and the estimate (host network_and_target minus the
  # target's residence, joined on the subsystem NQN) is positive for both transports.
  for t in rdma tcp; do
    nqn=nqn.2024-01.io.nvmeof-exporter:vm-stages-$t
    got=$(query "instance_nqn:nvmeof_network_estimate_seconds:mean5m{instance=\"vm-stages:10420\",nqn=\"$nqn\",op=\"read\"}" "$T_EVAL2")
    python3 -c "import sys; sys.exit(0 if float('${got:-nan}') > 0 else 1)" ||
      fail "network estimate of the recorded VM series ($t) is '${got}', expected > 0"
    for role in host target; do
      n=$(query "count(nvmeof_stage_latency_seconds_count{instance=\"vm-stages:10420\",role=\"$role\",transport=\"$t\"})" "$T_EVAL2")
      [ "${n:-0}" -ge 3 ] || fail "recorded VM series: $role/$t has ${n:-0} stage series"
    done
    pass "recorded VM series ($t): network estimate $(python3 -c "print(round(float('$got')*1e6,1))") us"
  done

  # Prometheus itself runs the alerts (every alert has a `for`, so they are pending or firing).
  local alerts
  alerts=$(curl -fsS "$PROM/api/v1/alerts" | python3 -c 'import json,sys
for a in json.load(sys.stdin)["data"]["alerts"]: print(a["labels"]["alertname"], a["state"])' | sort -u)
  grep -Eq '^RdmaPfcPauseStorm (pending|firing)' <<<"$alerts" || fail "RdmaPfcPauseStorm not active in Prometheus: $alerts"
  grep -Eq '^NvmeofControllerNotLive (pending|firing)' <<<"$alerts" || fail "NvmeofControllerNotLive not active: $alerts"
  pass "T_END+$(($(date +%s) - T_END))s: Prometheus alert states: $(tr '\n' ' ' <<<"$alerts")"

  # Which series: the drive under ssd-pool degraded 20 minutes ago (writes, storage stage), so
  # the end-to-end p99 of its writes (target and host) and the target's storage stage fire. Quiet:
  # reads, the weekly batch job (null-test writes: as slow a week ago), the VM series (no history).
  local e2e stg ssd=nqn.2024-06.io.example:ssd-pool nul=nqn.2024-06.io.example:null-test
  e2e=$(firing NvmeofLatencyRegression "$T_EVAL2")
  stg=$(firing NvmeofStageLatencyRegression "$T_EVAL2")
  grep -qx "target vm-target:10420 write $ssd -" <<<"$e2e" &&
    grep -qx "host vm-host:10420 write $ssd -" <<<"$e2e" ||
    fail "NvmeofLatencyRegression does not fire for ssd-pool's writes (host and target): $e2e"
  grep -qx "target vm-target:10420 write $ssd storage" <<<"$stg" ||
    fail "NvmeofStageLatencyRegression does not fire for ssd-pool's storage stage: $stg"
  ! printf '%s\n' "$e2e" "$stg" | grep -v "^[a-z]* vm-[a-z]*:10420 write $ssd " | grep -q . ||
    fail "regression alerts fire beyond ssd-pool's writes: $e2e / $stg"
  # The weekly batch job: against the day-ago p99 alone the stage would fire; the week-ago one
  # (the larger) keeps it quiet, and is what the baseline holds.
  sel="{role=\"target\",nqn=\"$nul\",op=\"write\",stage=\"storage\"}"
  p99s=$(query "instance:nvmeof_stage_latency_seconds:p99_5m$sel > 2 * (instance:nvmeof_stage_latency_seconds:p99_5m$sel offset 1d)" "$T_EVAL2")
  [ -n "$p99s" ] || fail "null-test's storage stage p99 is not over twice its day-ago value"
  got=$(query "instance:nvmeof_stage_latency_seconds:p99_5m_baseline$sel / (instance:nvmeof_stage_latency_seconds:p99_5m$sel offset 1w)" "$T_EVAL2")
  python3 -c "import sys; sys.exit(0 if abs(float('${got:-nan}') - 1) < 0.05 else 1)" ||
    fail "null-test's storage stage baseline is not its week-ago p99 (ratio '$got')"
  pass "regression alerts at T_END+$((T_EVAL2 - T_END))s: NvmeofLatencyRegression on" \
    "$(cut -d' ' -f1 <<<"$e2e" | sort | tr '\n' ' ')(ssd-pool writes), NvmeofStageLatencyRegression on" \
    "$(cut -d' ' -f1,5 <<<"$stg" | sort | tr '\n' ',' | sed 's/,$//') (ssd-pool writes);" \
    "quiet: reads, the weekly batch job (null-test's storage p99 is over 2x its day-ago value," \
    "its baseline is the week-ago one), the VM series (no history)"
}

for v in $(prom_versions); do
  use_prometheus "$v" || continue
  check_version
  stop_prometheus
done
pass "took $(($(date +%s) - T_START)) s"
prom_done
