# Scenario (e): NVMe-oF per-stage latency. Target and host of NVMe/RDMA and NVMe/TCP in this VM;
# the exporter runs once per entry of MECHANISMS: `default` is the default tier (tracepoints,
# nothing forced) at sample_every 1, where the host's end to end must agree with the kernel's
# block accounting of the path disk (diskstats-*.txt); fentry, kprobe, tp_btf and raw_tp force
# that mechanism with the transport tier on (bpf.transport_stages). For each transport a fio
# random read and a random write of a known number of I/Os run between two scrapes. The 16 KiB
# writes exceed the 4 KiB in-capsule size, so the RDMA target pulls their data (RDMA READ).
# Queue depth 1: under TCG the VM's two vCPUs are saturated at higher depths, and completed
# I/Os then wait for fio to be scheduled, which fio's clat counts and the kernel does not.
# The host checks (check.py scenario_stages) compare stage counts, sums and means with fio.
. /opt/vm/lib.sh
conf SCENARIO stages
MECHANISMS=${MECHANISMS:-"default fentry kprobe"}
IOS=${IOS:-2000}
conf MECHANISMS "$MECHANISMS"
conf IOS "$IOS"
conf KERNEL "$(uname -r)"
EXPORTER_START_TIMEOUT=180
setup_rdma_tcp vm-stages
# Without module BTF (5.10) no fentry or kprobe variant of the NVMe-oF hooks can read the drivers'
# types: forcing those mechanisms is a named skip (check_stages.py), the default tier runs.
if no_module_btf nvmet; then
	skipped=
	for mech in $MECHANISMS; do [ "$mech" = default ] || skipped="$skipped $mech"; done
	conf MECHANISMS_SKIPPED "${skipped# }"
	MECHANISMS=default
	conf MECHANISMS "$MECHANISMS"
fi
mark probe_start
$EXPORTER probe --log.level=debug >"$R/probe.txt" 2>"$R/probe-debug.txt"
echo "probe exit $?" >>"$R/probe.txt"
mark probe_done
{ cat /opt/vm/stages.yml; echo "  sample_every: 1"; } >/tmp/stages-default.yml
# Per transport and read/write (each_transport_rw), with $mech the mechanism of the exporter running.
io_between_scrapes() { # T DEV RW BS
	scrape "$mech-$1-$3-before"
	diskstats "$mech-$1-$3-before"
	fio_ios "$1-$3" "$2" "$3" "$4" "$mech-$1-$3" || fail "fio $mech $1 $3"
	diskstats "$mech-$1-$3-after"
	scrape "$mech-$1-$3-after"
	# Its protobuf twin, I/O stopped: native vs classic counts (check_native.py).
	timeout 10 wget -q -O "$R/metrics-$mech-$1-$3-after.pb" --header \
		'Accept: application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited' \
		http://$LISTEN/metrics || fail "protobuf scrape $mech-$1-$3-after"
}
for mech in $MECHANISMS; do
	if [ "$mech" = default ]; then
		EXPORTER_ARGS="--config.file=/tmp/stages-default.yml"
	else
		EXPORTER_ARGS="--bpf.mechanism=$mech --bpf.transport-stages --config.file=/opt/vm/stages.yml"
	fi
	EXPORTER_ARGS=$EXPORTER_ARGS start_exporter || die "exporter ($mech)"
	each_transport_rw io_between_scrapes
	stop_exporter
	mv "$R/exporter.log" "$R/exporter-$mech.log"
	mark "mechanism_${mech}_done"
done
EXPORTER_PID=
finish
