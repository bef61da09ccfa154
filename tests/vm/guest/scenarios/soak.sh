# Scenario: the soak of hours (tests/soak/vm_soak.sh runs it; not in the suite). One exporter
# process, started before any NVMe/RDMA module, serves 0.0.0.0:10420, which QEMU forwards to the
# host, where a real Prometheus scrapes it every 15 s. For SOAK_SECONDS it goes through rounds of
# ROUND_SECONDS, each:
#   up        the modules load (veth, null_blk, rdma_rxe, nvmet, nvmet_rdma, nvmet_tcp, nvme_rdma,
#             nvme_tcp), veth0 + rxe0, subsystem A on an RDMA port (1) and a TCP port (2), B on a
#             TCP port (3); A connected over both (one multipath head, two paths);
#   churn     fio on A's head throughout (QD 4, at most 400 IOPS); every few seconds B connects
#             and disconnects; every 60 s A's TCP port loses its subsystem link for 3 s (its path
#             reconnects every second; I/O fails over to the RDMA path meanwhile);
#   down      fio ends (no error allowed), every controller disconnects, the target's configfs,
#             rxe0 and veth0 are removed, and nvme_tcp, nvme_rdma, nvme_fabrics, nvmet_tcp,
#             nvmet_rdma, rdma_rxe and null_blk unload under the running exporter (nvme_core and
#             nvmet stay: the exporter's tracepoint hooks pin them, docs/metrics.md); then nothing
#             for DOWN_SECONDS (20), longer than a scrape interval, so that every series of the
#             round is absent from at least one scrape before the next round re-creates its objects
#             under the same names (rxe0 is a new device with counters from zero).
# Every 15 s samples.tsv gets the exporter's RSS, fds and threads and target-counts.tsv the
# target's nvmeof_commands_total lines of a scrape, and every 60 s maps.tsv the entries of every
# eBPF hash map (bpftool); rounds.tsv says what each round did and what failed.
# The host's tests/soak/vm_report.py reads these and Prometheus's data.
. /opt/vm/lib.sh
conf SCENARIO soak
conf KERNEL "$(uname -r)"
SOAK_SECONDS=${SOAK_SECONDS:-600}
ROUND_SECONDS=${ROUND_SECONDS:-300}
DOWN_SECONDS=20
conf SOAK_SECONDS "$SOAK_SECONDS"
conf ROUND_SECONDS "$ROUND_SECONDS"
LISTEN=0.0.0.0:10420
A=nqn.2024-01.io.nvmeof-exporter:soak-a
B=nqn.2024-01.io.nvmeof-exporter:soak-b

# The forwarded NIC (QEMU user networking, restrict=on: nothing but the forward reaches it).
modprobe virtio_net || die "modprobe virtio_net"
ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 || die "eth0"
start_exporter || die "exporter start"
cp "$R/exporter.pid" "$R/soak-exporter.pid"

sampler() {
	local n=0 rss fds thr m
	while exporter_alive; do
		rss=$(awk '$1 == "VmRSS:" {print $2}' /proc/$EXPORTER_PID/status)
		fds=$(ls /proc/$EXPORTER_PID/fd | wc -l)
		thr=$(ls /proc/$EXPORTER_PID/task | wc -l)
		echo "$(now) $rss $fds $thr" >>"$R/samples.tsv"
		# The target's command counts as served, beside Prometheus's: what a scrape got, raw.
		timeout 10 wget -q -O - http://127.0.0.1:10420/metrics 2>/dev/null |
			grep '^nvmeof_commands_total{role="target"' | sed "s/^/$(now) /" >>"$R/target-counts.tsv"
		# What bounds each map: its type (LRU or not) and max_entries, once.
		[ $n = 4 ] && bpftool map show >"$R/maps-info.txt" 2>&1
		if [ $((n % 4)) = 0 ]; then
			# Hash maps only: arrays, ring buffers and per-CPU arrays have a fixed size.
			bpftool map show 2>/dev/null | awk '/: (hash|lru_hash|percpu_hash|lru_percpu_hash) / {
				sub(":", "", $1); print $1, $4}' | while read -r id name; do
				echo "$(now) $name $(bpftool map dump id "$id" 2>/dev/null | grep -cE '^key:|"key":')"
			done >>"$R/maps.tsv"
		fi
		n=$((n + 1))
		sleep 15
	done
}
sampler &
SAMPLER=$!

RFAILS=0
rfail() { echo "round $ROUND: $*" >>"$R/round-failures.txt"; RFAILS=$((RFAILS + 1)); fail "round $ROUND: $*"; }
ctrl_of() { # NQN SVCID: the host controller of that subsystem and port
	local c
	for c in /sys/class/nvme/nvme*; do
		[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$1" ] && grep -q "trsvcid=$2" "$c/address" 2>/dev/null &&
			echo "${c##*/}"
	done | head -1
}
port() { # ID TRTYPE SVCID NQN
	local p=$CFG/ports/$1
	mkdir "$p" && echo "$2" >"$p/addr_trtype" && echo ipv4 >"$p/addr_adrfam" &&
		echo $IP >"$p/addr_traddr" && echo "$3" >"$p/addr_trsvcid" && ln -s "$CFG/subsystems/$4" "$p/subsystems/$4"
}

round_up() {
	local m
	for m in veth rdma_rxe nvmet nvmet_rdma nvmet_tcp nvme_rdma nvme_tcp tcp_diag; do modprobe $m || rfail "modprobe $m"; done
	modprobe null_blk nr_devices=2 gb=1 || rfail "modprobe null_blk"
	ip link add veth0 type veth peer name veth1 && ip addr add $IP/24 dev veth0 &&
		ip link set veth0 up && ip link set veth1 up && rdma link add rxe0 type rxe netdev veth0 || { rfail "veth0/rxe0"; return 1; }
	deadline 30
	until grep -qs ACTIVE /sys/class/infiniband/rxe0/ports/1/state; do
		before_deadline || { rfail "rxe0 not ACTIVE"; return 1; }
		sleep 0.2
	done
	subsystem $A /dev/nullb0 && subsystem $B /dev/nullb1 && port 1 rdma 4420 $A && port 2 tcp 4421 $A &&
		port 3 tcp 4422 $B || { rfail "nvmet configfs"; return 1; }
	nvme connect -t tcp -a $IP -s 4421 -n $A --reconnect-delay=1 --ctrl-loss-tmo=60 >/dev/null &&
		nvme connect -t rdma -a $IP -s 4420 -n $A --reconnect-delay=1 --ctrl-loss-tmo=60 >/dev/null ||
		{ rfail "connect A"; return 1; }
	HEAD=
	deadline 30
	while [ -z "$HEAD" ]; do
		for s in /sys/class/nvme-subsystem/nvme-subsys*; do
			[ "$(cat "$s/subsysnqn" 2>/dev/null)" = $A ] || continue
			for d in "$s"/nvme*n1; do [ -b "/dev/${d##*/}" ] && HEAD=/dev/${d##*/}; done
		done
		[ -n "$HEAD" ] || { before_deadline || { rfail "no head for A"; return 1; }; sleep 0.2; }
	done
	mark "round_${ROUND}_up"
}

# A flap: port 2 loses A (nvmet disables the port), A's TCP path resets and reconnects every
# second; I/O goes over the RDMA path meanwhile. Back after 3 s.
flap() {
	rm "$CFG/ports/2/subsystems/$A" || { rfail "flap: unlink"; return; }
	sleep 3
	ln -s "$CFG/subsystems/$A" "$CFG/ports/2/subsystems/$A" || rfail "flap: link"
	FLAPS=$((FLAPS + 1))
}
churn_b() { # one connect and disconnect of B
	if nvme connect -t tcp -a $IP -s 4422 -n $B >/dev/null 2>&1; then
		sleep 2
		nvme disconnect -n $B >/dev/null 2>&1 || rfail "disconnect B"
		CHURNS=$((CHURNS + 1))
	else
		rfail "connect B"
	fi
}

round_down() {
	local m c left
	nvme disconnect-all >/dev/null 2>&1
	deadline 60
	while ls /sys/class/nvme/ 2>/dev/null | grep -q nvme; do
		before_deadline || { rfail "controllers left after disconnect-all"; break; }
		sleep 0.5
	done
	for c in 1:$A 2:$A 3:$B; do rm -f "$CFG/ports/${c%%:*}/subsystems/${c#*:}"; done
	for c in 1 2 3; do rmdir "$CFG/ports/$c" 2>/dev/null; done
	for c in $A $B; do
		echo 0 >"$CFG/subsystems/$c/namespaces/1/enable" 2>/dev/null
		rmdir "$CFG/subsystems/$c/namespaces/1" "$CFG/subsystems/$c" 2>/dev/null
	done
	rdma link del rxe0 2>/dev/null
	ip link del veth0 2>/dev/null
	sleep 4 # the exporter releases its nvme_tcp/nvme_rdma hooks within its 2 s poll
	UNLOADED=
	for m in nvme_tcp nvme_rdma nvme_fabrics nvmet_tcp nvmet_rdma rdma_rxe null_blk; do
		if rmmod $m 2>>"$R/rmmod.txt"; then UNLOADED="$UNLOADED,$m"; else rfail "rmmod $m"; fi
	done
	left=$(grep -oE '^(nvme_tcp|nvme_rdma|nvme_fabrics|nvmet_tcp|nvmet_rdma|rdma_rxe|null_blk) ' /proc/modules | tr -d ' ' | tr '\n' ,)
	[ -z "$left" ] || rfail "still loaded: $left"
	sleep "$DOWN_SECONDS"
}

deadline "$SOAK_SECONDS"
END=$DEADLINE
ROUND=0
echo "round start up fio_ios fio_errors flaps b_churns unloaded failures" >"$R/rounds.tsv"
while uptime_s && [ $((UP + ROUND_SECONDS / 2)) -lt "$END" ]; do
	ROUND=$((ROUND + 1)) FLAPS=0 CHURNS=0 RFAILS=0 UNLOADED=
	t0=$(now)
	if round_up; then
		t_up=$(now)
		uptime_s
		run=$((ROUND_SECONDS - 60))
		[ $((UP + run + 30)) -le "$END" ] || run=$((END - UP - 30))
		[ "$run" -ge 30 ] || run=30
		# SIGPIPE ignored: nvme-tcp may send on a path's socket from the submitting task, and
		# when the flap has closed it, sendmsg without MSG_NOSIGNAL signals that task (seen on
		# 6.12: "nvme nvme0: failed to send request -32", then fio killed by signal 13); the
		# send's EPIPE is nvme-tcp's error, which fails the I/O over.
		(trap '' PIPE && exec fio --name=soak --filename="$HEAD" --rw=randrw --rwmixread=70 --bs=4k --direct=1 --ioengine=libaio \
			--iodepth=4 --rate_iops=280,120 --runtime=$run --time_based --output-format=json \
			--output="$R/fio-round-$ROUND.json") >/dev/null 2>&1 &
		FIO=$!
		i=0
		while kill -0 $FIO 2>/dev/null; do
			i=$((i + 1))
			if [ $((i % 10)) = 0 ]; then flap; else churn_b; fi
			sleep 3
		done
		wait $FIO || rfail "fio exit status"
		ios=$(awk -F: '/"total_ios"/ {gsub(/[ ,]/, "", $2); s += $2; if (++n == 2) exit} END {print s}' "$R/fio-round-$ROUND.json")
		errs=$(grep -m1 '"error"' "$R/fio-round-$ROUND.json" | grep -oE '[0-9]+')
		[ "${errs:-1}" = 0 ] || rfail "fio error ${errs:-unknown}"
	else
		t_up=- ios=- errs=-
	fi
	round_down
	echo "$ROUND $t0 $t_up ${ios:--} ${errs:--} $FLAPS $CHURNS ${UNLOADED#,} $RFAILS" >>"$R/rounds.tsv"
	mark "round_${ROUND}_down"
done
conf ROUNDS "$ROUND"
kill $SAMPLER 2>/dev/null
finish
