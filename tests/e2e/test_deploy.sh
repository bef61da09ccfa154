#!/usr/bin/env bash
# Deployment files: the systemd unit verifies and scores well, the exporter runs with exactly
# the unit's privileges (capabilities, non-root uid, no_new_privs, no write+execute memory, the
# unit's system-call filter) with every collector working; the Kubernetes DaemonSet's privilege
# model (non-root + file capabilities under no_new_privs) gives the same; the Prometheus scrape
# config, the PrometheusRule recipe and the Grafana provisioning are valid.
source "$(dirname "$0")/lib.sh"
REPO=$(cd "$E2E_DIR/../.." && pwd)
UNIT="$REPO/deploy/systemd/nvmeof_exporter.service.in"
CHECK="$E2E_DIR/deploy_check.py"
chmod 755 "$WORK"  # the unprivileged runs below execute and read from here
EXE=$(readlink -f "$EXPORTER")
HAVE_BPF=0
"$EXPORTER" --help 2>&1 | grep -q '^ *bpf (default' && HAVE_BPF=1

# --- systemd unit: the template filled in as for the package, ExecStart naming the binary under test
sed "s#@NVMEOF_BINDIR@/nvmeof_exporter#$EXE#; s#@NVMEOF_SYSCONFDIR@#/etc#g" "$UNIT" >"$WORK/nvmeof_exporter.service"
if command -v systemd-analyze >/dev/null; then
  # --man=no: Documentation= names the man page, which is only there once installed (the
  # package's is checked by test_package.sh).
  (cd "$WORK" && systemd-analyze verify --man=no ./nvmeof_exporter.service) >"$WORK/verify.log" 2>&1 ||
    fail "systemd-analyze verify: $(cat "$WORK/verify.log")"
  [ -s "$WORK/verify.log" ] && fail "systemd-analyze verify warns: $(cat "$WORK/verify.log")"
  pass "systemd-analyze verify: clean"
  if (cd "$WORK" && systemd-analyze security --offline=yes ./nvmeof_exporter.service) >"$WORK/security.log" 2>&1; then
    exposure=$(sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p' "$WORK/security.log")
    python3 -c "import sys; sys.exit(0 if float('$exposure') <= 2.0 else 1)" ||
      fail "systemd-analyze security: exposure $exposure > 2.0: $(grep '✗' "$WORK/security.log")"
    pass "systemd-analyze security: exposure $exposure (OK)"
  else
    echo "SKIP: systemd-analyze security --offline not supported here"
  fi
else
  echo "SKIP: systemd-analyze not installed: unit not verified (install systemd)"
fi

# --- the exporter under the unit's privileges (setpriv changes users: root only)
# MemoryDenyWriteExecute: the kernel's own version of it (PR_SET_MDWE, Linux 6.3+; inherited
# across execve), set before exec like systemd sets its seccomp equivalent.
MDWE=(python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(65, 1, 0, 0, 0) != 0:  # PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN
    print("MDWE-unsupported", file=sys.stderr)
os.execvp(sys.argv[1], sys.argv[1:])' )
privilege_runs() {
  command -v setpriv >/dev/null || fail "setpriv (util-linux) is needed"
  # The MDWE wrapper must really refuse writable+executable memory after exec.
  if "${MDWE[@]}" python3 -c 'import mmap; mmap.mmap(-1, 4096, prot=7)' 2>"$WORK/mdwe.log"; then
    echo "SKIP: PR_SET_MDWE not enforced by this kernel: MemoryDenyWriteExecute not checked"
  else
    grep -q 'MDWE-unsupported' "$WORK/mdwe.log" && echo "SKIP: PR_SET_MDWE unsupported"
    grep -q PermissionError "$WORK/mdwe.log" && pass "MDWE wrapper refuses a PROT_WRITE|PROT_EXEC mapping"
  fi
  read -r -a PRIV <<<"$(python3 "$CHECK" unit-caps "$UNIT")"
  echo "unit privileges as setpriv flags: ${PRIV[*]}"
  HAVE_STRACE=0
  command -v strace >/dev/null && HAVE_STRACE=1
  [ $HAVE_STRACE = 1 ] || echo "SKIP: strace not installed: system-call filter not checked"

  # wrapper NAME PREFIX...: a script that runs PREFIX... "$@" (start_exporter puts its own flags
  # first, so setpriv and friends go in a wrapper). $STRACE, when set, names an strace log.
  wrapper() {
    local name=$1; shift
    {
      echo '#!/bin/bash'
      printf 'exec'
      printf ' %q' "${MDWE[@]}"
      printf ' ${STRACE:+strace -f -qq -o "$STRACE"}'
      printf ' %q' "$@"
      printf ' "$@"\n'
    } >"$WORK/$name"
    chmod 755 "$WORK/$name"
  }
  scrape() { curl -fsS "http://127.0.0.1:$PORT/metrics" >"$WORK/scrape.prom" && check_series "$WORK/scrape.prom"; }
  collectors_ok() {  # every collector reported success
    local bad
    bad=$(grep '^nvmeof_exporter_collector_success' "$WORK/scrape.prom" | grep -v ' 1$' || true)
    [ -z "$bad" ] || fail "$1: collectors failing: $bad"
    grep -q '^nvmeof_exporter_collector_success' "$WORK/scrape.prom" || fail "$1: no collector_success"
  }
  proc_status() { grep -E "^$2:" "/proc/$1/status" | awk '{print $2}'; }
  # run_as WRAPPER BINARY NAME [flags...]: starts the exporter through WRAPPER; sets XPID to the
  # exporter process itself (BINARY, below strace/setpriv): the one listening on its port. Not
  # by command line: other tests run the same binary with the same first flags in parallel,
  # and stopping one of theirs would leave this one running.
  run_as() {
    local saved=$EXPORTER bin=$2
    EXPORTER="$WORK/$1"; shift 2
    start_exporter "$@"
    EXPORTER=$saved
    XPID=$(ss -Htlnp "( sport = :$PORT )" | sed -n 's/.*pid=\([0-9]*\),.*/\1/p' | head -n 1)
    [ -n "$XPID" ] || fail "cannot find the process listening on port $PORT"
    [ "$(readlink -f "/proc/$XPID/exe")" = "$(readlink -f "$bin")" ] ||
      fail "port $PORT: pid $XPID is $(readlink -f "/proc/$XPID/exe"), not $bin"
    PIDS+=("$XPID")  # strace waits for it: cleanup must end it too
  }
  stop() { kill "$XPID" 2>/dev/null || true; wait "$LAST_PID" 2>/dev/null || true; }
  caps_of() { capsh --decode="$(proc_status "$1" CapEff)" | cut -d= -f2; }

  wrapper unit.sh setpriv "${PRIV[@]}" -- "$EXE"

  # 1. Fixture trees, every collector, as the unit would run it.
  export STRACE=
  [ $HAVE_STRACE = 1 ] && STRACE="$WORK/strace-fixtures.log"
  run_as unit.sh "$EXE" unit-fixtures "${FIXTURE_FLAGS[@]}"
  [ "$(proc_status "$XPID" Uid)" = 65534 ] || fail "exporter does not run as uid 65534"
  [ "$(proc_status "$XPID" NoNewPrivs)" = 1 ] || fail "no_new_privs not set"
  [ "$(caps_of "$XPID")" = "cap_perfmon,cap_bpf" ] ||
    fail "effective capabilities are $(caps_of "$XPID"), want exactly cap_bpf,cap_perfmon"
  grep -q MDWE-unsupported "$WORK/unit-fixtures.log" && echo "SKIP: PR_SET_MDWE unsupported by this kernel"
  for _ in 1 2 3; do scrape; done
  collectors_ok "fixtures under the unit's privileges"
  n=$(grep -c '^nvmeof_exporter_collector_success' "$WORK/scrape.prom")
  pass "fixtures, uid 65534, caps $(caps_of "$XPID"), no_new_privs, MDWE: all $n collectors succeed"
  stop

  # 2. This machine's real /sys and /proc, a real netdev through the real ethtool ioctls and DCB
  #    netlink, and eBPF when built in.
  NETDEV=$(ip -o link show up 2>/dev/null | awk -F': ' '$2 != "lo" {sub(/@.*/, "", $2); print $2; exit}')
  NETDEV=${NETDEV:-lo}
  printf 'pfc:\n  netdevs: {include: "%s"}\n' "$NETDEV" >"$WORK/real.yml"
  chmod 644 "$WORK/real.yml"
  [ $HAVE_STRACE = 1 ] && STRACE="$WORK/strace-real.log"
  run_as unit.sh "$EXE" unit-real --config.file="$WORK/real.yml"
  [ $HAVE_BPF = 1 ] && { dd if=/dev/zero of="$WORK/io" bs=4k count=64 oflag=direct 2>/dev/null || true; }
  sleep 1
  for _ in 1 2 3; do scrape; done
  collectors_ok "real /sys and /proc under the unit's privileges"
  grep -q "^nvmeof_rdma_netdev_info{netdev=\"$NETDEV\"" "$WORK/scrape.prom" ||
    fail "ETHTOOL_GDRVINFO on $NETDEV did not work unprivileged: $(grep -i 'ethtool\|pfc' "$WORK/unit-real.log" | head -3)"
  msg="real roots: all collectors succeed; ethtool on $NETDEV works without CAP_NET_ADMIN"
  if [ $HAVE_BPF = 1 ]; then
    grep -q '^nvmeof_exporter_bpf_available{[^}]*} 1$' "$WORK/scrape.prom" ||
      fail "eBPF unavailable with the unit's capabilities: $(grep bpf_available "$WORK/scrape.prom") $(grep -i bpf "$WORK/unit-real.log" | head -3)"
    grep -q '^nvmeof_exporter_bpf_hook_attached{hook="block_rq_complete",.*} 1' "$WORK/scrape.prom" ||
      fail "block_rq_complete not attached: $(grep hook_attached "$WORK/scrape.prom")"
    msg="$msg; eBPF hooks attached under MDWE: $(grep '^nvmeof_exporter_bpf_hook_attached' "$WORK/scrape.prom" |
      sed 's/.*hook="\([^"]*\)",mechanism="\([^"]*\)".* \(.*\)/\1=\2:\3/' | tr '\n' ' ')"
  else
    echo "SKIP: this build has no bpf collector: eBPF not checked under the unit's privileges"
  fi
  pass "$msg"
  stop
  STRACE=

  if [ $HAVE_STRACE = 1 ]; then
    LOGS=("$WORK/strace-fixtures.log" "$WORK/strace-real.log")
    python3 "$CHECK" syscalls "$UNIT" "$EXE" "${LOGS[@]}" >"$WORK/syscalls.log" 2>&1 ||
      fail "system calls: $(cat "$WORK/syscalls.log")"
    pass "system calls within the unit's SystemCallFilter, no file opened for writing: $(cat "$WORK/syscalls.log")"
    printf '[Service]\nSystemCallFilter=@default @basic-io\n' >"$WORK/narrow.service"
    python3 "$CHECK" syscalls "$WORK/narrow.service" "$EXE" "${LOGS[@]}" >/dev/null 2>&1 &&
      fail "the system-call check accepts a filter that is too narrow"
  fi

  # 3. Without the capabilities, eBPF must say so (the capabilities are really needed).
  if [ $HAVE_BPF = 1 ]; then
    wrapper nocaps.sh setpriv --reuid=65534 --regid=65534 --clear-groups --bounding-set=-all \
      --inh-caps=-all --no-new-privs -- "$EXE"
    run_as nocaps.sh "$EXE" unit-nocaps --config.file="$WORK/real.yml"
    scrape
    grep -q '^nvmeof_exporter_bpf_available{reason="no_capability"} 0' "$WORK/scrape.prom" ||
      fail "without CAP_BPF/CAP_PERFMON: $(grep bpf_available "$WORK/scrape.prom")"
    collectors_ok "without capabilities"
    pass "without the capabilities eBPF reports no_capability and the other collectors still work"
    stop
  fi
}

image_run() {
  # The image: a non-root process whose runtime-given bounding and permitted sets are the added
  # capabilities, no_new_privs (allowPrivilegeEscalation: false), and the binary's file
  # capabilities (deploy/build-image.sh's setcap).
  if command -v setcap >/dev/null; then
    mkdir -p "$WORK/image" && cp "$EXE" "$WORK/image/nvmeof_exporter"
    caps=$(sed -n 's/^setcap \([^ ]*\) .*/\1/p' "$REPO/deploy/build-image.sh")
    setcap "$caps" "$WORK/image/nvmeof_exporter"
    bounding=$(printf '%s\n' "${PRIV[@]}" | grep -- '--bounding-set=')
    wrapper image.sh setpriv --reuid=65534 --regid=65534 --clear-groups "$bounding" \
      --no-new-privs -- "$WORK/image/nvmeof_exporter"
    run_as image.sh "$WORK/image/nvmeof_exporter" image "${FIXTURE_FLAGS[@]}"
    [ "$(caps_of "$XPID")" = "cap_perfmon,cap_bpf" ] ||
      fail "image model: effective capabilities $(caps_of "$XPID"), want cap_bpf,cap_perfmon"
    scrape
    collectors_ok "image model"
    pass "image model (file caps $caps, uid 65534, no_new_privs): exactly CAP_BPF+CAP_PERFMON, collectors succeed"
    stop
  else
    echo "SKIP: setcap not installed (libcap2-bin): image capability model not checked"
  fi
}

if [ "$(id -u)" = 0 ]; then
  privilege_runs
else
  echo "SKIP: not root: the exporter is not run under the unit's privileges"
fi

# --- Kubernetes: manifests consistent with the unit, and the image's privilege model
ARGS=$(python3 "$CHECK" k8s "$REPO/deploy/kubernetes/nvmeof-exporter.yaml" \
  "$REPO/deploy/build-image.sh" "$UNIT") || fail "Kubernetes manifest checks"
mapfile -t K8S_ARGS < <(sed "s#=/host/sys#=$FIXTURES/sysfs#; s#$FIXTURES/sysfs/kernel/config#$FIXTURES/configfs#; s#^--path.rootfs=/host\$#--path.rootfs=$FIXTURES/kubernetes/rootfs#" <<<"$ARGS")
"$EXPORTER" "${K8S_ARGS[@]}" --config.check >"$WORK/k8s-args.log" 2>&1 ||
  fail "DaemonSet args rejected: $(cat "$WORK/k8s-args.log")"
pass "DaemonSet: non-root, read-only root, drops ALL, adds only the unit's capabilities; args valid"
if [ "$(id -u)" = 0 ]; then
  image_run
else
  echo "SKIP: not root: image capability model not checked"
fi

# --- Prometheus scrape config, operator rules, Grafana provisioning
if command -v promtool >/dev/null; then
  cp "$REPO"/deploy/prometheus/*.yml "$WORK/"
  promtool check config "$WORK/prometheus.yml" >"$WORK/promcfg.log" 2>&1 ||
    fail "promtool check config: $(cat "$WORK/promcfg.log")"
  pass "deploy/prometheus/prometheus.yml: $(grep -c 'SUCCESS' "$WORK/promcfg.log") checks passed"
  # The 3.x form: prometheus.yml plus only fallback_scrape_protocol (comments aside); both forms
  # and the Kubernetes one valid to promtool 3.5 (whose build has kubernetes_sd_configs).
  python3 - "$WORK/prometheus.yml" "$WORK/prometheus-3.yml" <<'PY' || fail "prometheus-3.yml is not prometheus.yml plus the 3.x keys"
import re, sys
def body(path):
    return [l for l in open(path) if l.strip() and not l.lstrip().startswith("#")
            and not re.match(r"\s*fallback_scrape_protocol:", l)]
sys.exit(body(sys.argv[1]) != body(sys.argv[2]))
PY
  if dir35=$("$E2E_DIR/fetch_prometheus.sh" 3.5 2>"$WORK/fetch35.log"); then
    for f in prometheus-3.yml prometheus.yml prometheus-kubernetes.yml; do
      "$dir35/promtool" check config "$WORK/$f" >"$WORK/promcfg35.log" 2>&1 ||
        fail "promtool 3.5 check config $f: $(cat "$WORK/promcfg35.log")"
    done
    pass "deploy/prometheus/prometheus-3.yml, prometheus.yml and prometheus-kubernetes.yml: valid to promtool 3.5"
  else
    echo "SKIP: Prometheus 3.5 unavailable, prometheus-3.yml not checked: $(tail -n 1 "$WORK/fetch35.log")"
  fi
  if promtool check config "$WORK/prometheus-kubernetes.yml" >"$WORK/promk8s.log" 2>&1; then
    pass "deploy/prometheus/prometheus-kubernetes.yml: valid"
  elif grep -q 'field kubernetes_sd_configs not found' "$WORK/promk8s.log"; then
    echo "SKIP: this promtool is built without kubernetes_sd_configs (Debian): prometheus-kubernetes.yml not checked"
  else
    fail "promtool check config prometheus-kubernetes.yml: $(cat "$WORK/promk8s.log")"
  fi
  "$REPO/deploy/kubernetes/prometheusrule.sh" >"$WORK/prometheusrule.yaml"
  sed -n '/^  groups:/,$p' "$WORK/prometheusrule.yaml" | sed 's/^  //' >"$WORK/roundtrip.yml"
  promtool check rules "$WORK/roundtrip.yml" >"$WORK/roundtrip.log" 2>&1 ||
    fail "PrometheusRule from prometheusrule.sh: $(cat "$WORK/roundtrip.log")"
  # Every rule of every file (new rule files included, e.g. nvmeof-fleet and -connections).
  want=$(promtool check rules "$REPO"/deploy/prometheus/*.rules.yml 2>&1 | grep -o '[0-9]* rules found' |
    awk '{n += $1} END {print n}')
  got=$(grep -o '[0-9]* rules found' "$WORK/roundtrip.log" | awk '{print $1}')
  [ "$got" = "$want" ] || fail "prometheusrule.sh: $got rules, deploy/prometheus/*.rules.yml has $want"
  pass "prometheusrule.sh: $got rules found, all of deploy/prometheus/*.rules.yml"
fi
PROV="$REPO/deploy/grafana/provisioning"
grep -q 'path: /var/lib/grafana/dashboards/nvmeof' "$PROV/dashboards/nvmeof.yaml" ||
  fail "dashboard provider path"
grep -q 'type: prometheus' "$PROV/datasources/prometheus.yaml" || fail "datasource type"
pass "Grafana provisioning files present (dashboards are checked by test_dashboards*.sh)"
