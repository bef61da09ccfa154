# Scenario smoke: one short boot of everything an operator installs, for the kernels at the
# matrix's edges (CI runs it on 5.10 and 7.2; the full suite runs on 6.1 and 6.12). Target and
# host of NVMe/RDMA (port 1) and NVMe/TCP (port 2) in this VM; `nvmeof_exporter probe` (kept in
# probe.txt, its debug log with the verifier's messages in probe-debug.txt; with
# --bpf.transport-stages in probe-transport*.txt); the exporter at its
# defaults (the default hook tier, the lifecycle hooks) with bpf.enable_stats and bpf.sample_every 1;
# per transport a 4 KiB randread of IOS I/Os at queue depth 1 between two scrapes;
# the path disks' /proc/diskstats around each. check.py scenario_smoke checks the collectors,
# topology and rdma netlink, and the eBPF counts against fio's, or that the exporter says why
# it has none.
. /opt/vm/lib.sh
conf SCENARIO smoke
IOS=${IOS:-500}
conf IOS "$IOS"
conf KERNEL "$(uname -r)"
EXPORTER_START_TIMEOUT=180
setup_rdma_tcp vm-smoke
mark probe_start
# The target's tracepoint records as this kernel lays them out (the classic tracepoint
# variants read them where the kernel has no module BTF).
for e in nvmet_req_init nvmet_req_complete; do
	cat /sys/kernel/tracing/events/nvmet/$e/format >"$R/format-$e.txt" 2>&1
done
$EXPORTER probe --log.level=debug >"$R/probe.txt" 2>"$R/probe-debug.txt"
echo "probe exit $?" >>"$R/probe.txt"
# The transport tier's hooks as well (what the compatibility table reports for that tier).
$EXPORTER probe --bpf.transport-stages --log.level=debug >"$R/probe-transport.txt" 2>"$R/probe-transport-debug.txt"
echo "probe exit $?" >>"$R/probe-transport.txt"
mark probe_done
printf 'bpf:\n  enable_stats: true\n  sample_every: 1\n' >/tmp/smoke.yml
EXPORTER_ARGS="--config.file=/tmp/smoke.yml ${EXPORTER_ARGS:-}" start_exporter || die "exporter"
for t in rdma tcp; do
	eval dev=\$$(echo $t | tr a-z A-Z)_DEV
	snapshot "$t-before"
	diskstats "$t-before"
	fio_ios "$t-randread" "$dev" randread 4k "$t" || fail "fio $t"
	diskstats "$t-after"
	snapshot "$t-after"
done
# `record` (its own eBPF object) of every command on both roles during a short NVMe/TCP read,
# with libbpf's warnings (a refused load's verifier log): it exits non-zero when it recorded nothing.
mark record_start
NVMEOF_LIBBPF_LOG=1 $EXPORTER record --role=both -s 1 -o "$R/rec" 2>"$R/record-debug.txt" &
REC_PID=$!
deadline 240
until grep -q 'recording' "$R/record-debug.txt" 2>/dev/null; do
	[ -d "/proc/$REC_PID" ] || break
	before_deadline || break
	sleep 0.5
done
mark record_ready
fio_ios record "$TCP_DEV" randread 4k record || fail "fio record"
kill -INT $REC_PID 2>/dev/null
wait $REC_PID
echo "$?" >"$R/record-exit-code"
grep -v -e '^libbpf' -e '^[0-9]*: ' "$R/record-debug.txt" | tail -5
mark record_done
finish
