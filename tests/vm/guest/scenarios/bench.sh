# Benchmark (not part of the suite; tests/bench/nvmeof_vm_bench.sh runs it): NVMe/RDMA and
# NVMe/TCP 4 KiB random reads, QD16, BENCH_SECONDS each, with no exporter and with the exporter's
# NVMe-oF stage hooks at sample_every 8 and 1, in blocks: none, s8, none, s1, none.
# Writes bench.txt: "MODE TRANSPORT ROUND IOPS" lines; the s8/s1 scrapes carry the programs'
# run time (bpf.enable_stats) for BPF ns per command.
. /opt/vm/lib.sh
conf SCENARIO bench
EXPORTER_START_TIMEOUT=240
BENCH_SECONDS=${BENCH_SECONDS:-8}
load_modules
setup_net || die "network/rxe setup"
setup_target rdma 1 4420 nqn.2024-01.io.nvmeof-exporter:bench-rdma /dev/nullb0 || die "nvmet rdma"
setup_target tcp 2 4421 nqn.2024-01.io.nvmeof-exporter:bench-tcp /dev/nullb1 || die "nvmet tcp"
connect rdma 4420 nqn.2024-01.io.nvmeof-exporter:bench-rdma || die "connect rdma"
RDMA_DEV=$DEV
connect tcp 4421 nqn.2024-01.io.nvmeof-exporter:bench-tcp || die "connect tcp"
TCP_DEV=$DEV
round=0
run_block() { # MODE ROUNDS
	local i t dev iops
	for i in $(seq "$2"); do
		round=$((round + 1))
		for t in rdma tcp; do
			eval dev=\$$(echo $t | tr a-z A-Z)_DEV
			fio --name=b --filename="$dev" --rw=randread --bs=4k --direct=1 --ioengine=libaio \
				--iodepth=16 --runtime="$BENCH_SECONDS" --time_based --size=256m \
				--output-format=json --output=/tmp/fio.json || fail "fio $1 $t"
			iops=$(sed -n 's/.*"iops" : \([0-9.]*\),.*/\1/p' /tmp/fio.json | head -1)
			echo "$1 $t $round $iops" | tee -a "$R/bench.txt"
		done
	done
}
with_exporter() { # MODE SAMPLE_EVERY ROUNDS
	printf 'bpf:\n  enable_stats: true\n  sample_every: %s\n' "$2" >/tmp/bench.yml
	EXPORTER_ARGS="--config.file=/tmp/bench.yml --collector.bpf" start_exporter || die "exporter $1"
	scrape "$1-before"
	run_block "$1" "$3"
	scrape "$1-after"
	stop_exporter
}
run_block none 2
with_exporter s8 8 3
run_block none 2
with_exporter s1 1 3
run_block none 2
EXPORTER_PID=
finish
