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
load_modules
setup_net || die "network/rxe setup"
setup_target rdma 1 4420 nqn.2024-01.io.nvmeof-exporter:vm-stages-rdma /dev/nullb0 || die "nvmet rdma"
conf RDMA_NQN nqn.2024-01.io.nvmeof-exporter:vm-stages-rdma
conf RDMA_PORTID 1
setup_target tcp 2 4421 nqn.2024-01.io.nvmeof-exporter:vm-stages-tcp /dev/nullb1 || die "nvmet tcp"
conf TCP_NQN nqn.2024-01.io.nvmeof-exporter:vm-stages-tcp
conf TCP_PORTID 2
connect rdma 4420 nqn.2024-01.io.nvmeof-exporter:vm-stages-rdma || die "nvme connect rdma"
conf RDMA_CONTROLLER "$CTRL"
conf RDMA_DEV "$DEV"
RDMA_DEV=$DEV
connect tcp 4421 nqn.2024-01.io.nvmeof-exporter:vm-stages-tcp || die "nvme connect tcp"
conf TCP_CONTROLLER "$CTRL"
conf TCP_DEV "$DEV"
TCP_DEV=$DEV
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
diskstats() { grep -E ' nvme[0-9]+(c[0-9]+)?n[0-9]+ ' /proc/diskstats >"$R/diskstats-$1.txt"; }
for mech in $MECHANISMS; do
	if [ "$mech" = default ]; then
		EXPORTER_ARGS="--config.file=/tmp/stages-default.yml"
	else
		EXPORTER_ARGS="--bpf.mechanism=$mech --bpf.transport-stages --config.file=/opt/vm/stages.yml"
	fi
	EXPORTER_ARGS=$EXPORTER_ARGS start_exporter || die "exporter ($mech)"
	for t in rdma tcp; do
		eval dev=\$$(echo $t | tr a-z A-Z)_DEV
		for rw in randread randwrite; do
			bs=4k
			[ $rw = randwrite ] && bs=16k
			scrape "$mech-$t-$rw-before"
			diskstats "$mech-$t-$rw-before"
			fio --name="$t-$rw" --filename="$dev" --rw=$rw --bs=$bs --direct=1 --ioengine=libaio \
				--iodepth=1 --number_ios="$IOS" --size=256m --output-format=json \
				--output="$R/fio-$mech-$t-$rw.json" || fail "fio $mech $t $rw"
			diskstats "$mech-$t-$rw-after"
			scrape "$mech-$t-$rw-after"
			# Its protobuf twin, I/O stopped: native vs classic counts (check_native.py).
			timeout 10 wget -q -O "$R/metrics-$mech-$t-$rw-after.pb" --header \
				'Accept: application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited' \
				http://$LISTEN/metrics || fail "protobuf scrape $mech-$t-$rw-after"
		done
	done
	stop_exporter
	mv "$R/exporter.log" "$R/exporter-$mech.log"
	mark "mechanism_${mech}_done"
done
EXPORTER_PID=
finish
