# Scenario: the rdma_netlink collector against the kernel's own `rdma statistic`/`rdma resource`,
# during NVMe/RDMA I/O over rxe, with per-QP mode on. The exporter also records every netlink
# reply it gets (netlink-capture/<request>.bin): the source of tests/fixtures/netlink/.
. /opt/vm/lib.sh
conf SCENARIO netlink
load_modules
setup_net || die "network/rxe setup"
setup_target rdma 1 4420 nqn.2024-01.io.nvmeof-exporter:vm-netlink /dev/nullb0 || die "nvmet setup"
mkdir -p "$R/netlink-capture"
printf 'rdma_netlink:\n  per_qp: true\n' >/tmp/netlink.yml
# No eBPF here: its program loads cost tens of seconds of start-up under TCG, and this scenario is
# about netlink.
EXPORTER_ARGS="${EXPORTER_ARGS:-} --no-collector.bpf --config.file=/tmp/netlink.yml --testing.rdma-netlink-record-dir=$R/netlink-capture"
start_exporter || die "exporter start"
connect rdma 4420 nqn.2024-01.io.nvmeof-exporter:vm-netlink || die "nvme connect"
# Admin + I/O queues: each is one rdma_cm id + QP on the host (nvme_rdma) and one on the target.
conf QUEUE_COUNT "$(cat /sys/class/nvme/$CTRL/queue_count)"
netlink_snapshot idle
# Scrape while fio runs, so counters move between the kernel's reads and the exporter's.
run_fio io "$DEV" "$FIO_RUNTIME" &
fio_pid=$!
sleep 1
netlink_snapshot during-io
wait $fio_pid
netlink_snapshot after-io
uname -r >"$R/kernel-release.txt"
# rxe has no optional counters, and the kernel never auto-binds kernel QPs (NVMe-oF's) to
# counters; a manual bind needs the driver's counter_bind_qp (mlx5 has it, rxe not). Record what
# this kernel answers to both, for the README. The last scrape's recorded replies become
# tests/fixtures/netlink/<kernel>/, with its /metrics and rdma's JSON around it to check them by.
{
	rdma statistic qp set link rxe0/1 auto type on; echo "auto rc=$?"
	qpn=$(rdma resource show qp link rxe0/1 | awk '/ RC / {for (i = 1; i < NF; i++) if ($i == "lqpn") {print $(i + 1); exit}}')
	rdma statistic qp bind link rxe0/1 lqpn "$qpn"; echo "bind lqpn $qpn rc=$?"
	rdma statistic qp show; echo "show rc=$?"
} >"$R/rdma-qp-bind.txt" 2>&1
netlink_snapshot final
finish
