# Scenario: faults survived. NVMe/RDMA (port 1) and NVMe/TCP (port 2) connected, the exporter
# running with eBPF on throughout, and a background scraper recording every scrape's HTTP status
# and self-metrics (series.txt) while, in turn:
#   link      the rxe netdev (veth0) goes down and up during fio (on the TCP namespace: see
#             below why), then rxe0 is re-created and NVMe/RDMA reconnects;
#   port      nvmet port 2 (tcp) loses its subsystem link and is removed, then re-created;
#   kill      the exporter is SIGKILLed during I/O: every BPF prog/map/link it had is gone
#             (bpftool lists before start, while running, after the kill), then it restarts;
#   rmmod     both controllers disconnected, so the exporter releases the hooks it held in
#             nvme_rdma and nvme_tcp; both unloaded while it runs, loaded again and reconnected:
#             the hooks come back and count fio's I/Os;
#   sigterm   SIGTERM with scrapes in flight and a half-sent request: exit time and status.
# Each step's phase name is written into series.txt with every scrape; check.py scenario_faults
# judges them.
. /opt/vm/lib.sh
conf SCENARIO faults
EXPORTER_START_TIMEOUT=180
NQN_R=nqn.2024-01.io.nvmeof-exporter:vm-faults-rdma
NQN_T=nqn.2024-01.io.nvmeof-exporter:vm-faults-tcp
FIO_IOS=${FIO_IOS:-400}
conf FIO_IOS "$FIO_IOS"
conf KERNEL "$(uname -r)"

phase() { echo "$1" >/tmp/phase; mark "phase_$1"; }
phase setup

bpf_ids() { # KIND -> sorted ids of every loaded BPF object of that kind
	bpftool -j "$1" list 2>/dev/null | grep -o '"id":[0-9]*' | cut -d: -f2 | sort -n
}
bpf_list() { # NAME -> bpf-NAME.txt: "KIND ID" lines
	local k i
	for k in prog map link; do
		for i in $(bpf_ids $k); do echo "$k $i"; done
	done >"$R/bpf-$1.txt"
}

# Every scrape: a header, then the lines the checks judge (self-metrics, hooks, commands, state).
scraper() {
	local t t2 rc code ph
	while [ ! -e /tmp/stop-scraper ]; do
		read -r ph </tmp/phase
		t=$(now)
		# The exporter answers within its 10 s scrape deadline; 20 s leaves TCG room to deliver it.
		if timeout 20 wget -S -q -O /tmp/scrape.prom http://$LISTEN/metrics 2>/tmp/scrape.hdr; then rc=0; else rc=$?; fi
		t2=$(now)
		code=$(sed -n 's/^ *HTTP\/[0-9.]* \([0-9]*\).*/\1/p' /tmp/scrape.hdr | tail -1)
		{
			echo "# scrape $t $t2 phase=$ph rc=$rc http=${code:-none}"
			[ $rc = 0 ] && grep -E '^nvmeof_(exporter_collector_success|exporter_bpf_hook_attached|commands_total|rdma_port_state|target_port_info|controller_state)[{ ]' /tmp/scrape.prom
		} >>"$R/series.txt"
		sleep 0.3
	done
}

# fio_n NAME DEV: a known number of 4 KiB random reads (the counting checks compare with it).
fio_n() {
	fio --name="$1" --filename="$2" --rw=randread --bs=4k --direct=1 --ioengine=libaio \
		--iodepth=4 --number_ios="$FIO_IOS" --size=256m --output-format=json \
		--output="$R/fio-$1.json" || fail "fio $1"
}
# fio_t NAME DEV SECONDS: time-based load during a fault (judged only for finishing).
fio_t() {
	fio --name="$1" --filename="$2" --rw=randrw --bs=4k --direct=1 --ioengine=libaio \
		--iodepth=8 --runtime="$3" --time_based --size=256m --output-format=json \
		--output="$R/fio-$1.json" || echo "fio $1 exit $?" >>"$R/fio-errors.txt"
}
# hooks_attached -> "hook mechanism" of every attached hook in a scrape of the running exporter
hooks_attached() {
	timeout 10 wget -q -O - http://$LISTEN/metrics 2>/dev/null |
		sed -n 's/^nvmeof_exporter_bpf_hook_attached{hook="\([^"]*\)",mechanism="\([^"]*\)".*} 1$/\1 \2/p' | sort
}
connect_both() {
	connect rdma 4420 $NQN_R --reconnect-delay=1 --ctrl-loss-tmo=60 || return 1
	RCTRL=$CTRL RDEV=$DEV
	connect tcp 4421 $NQN_T --reconnect-delay=1 --ctrl-loss-tmo=60 || return 1
	TCTRL=$CTRL TDEV=$DEV
}
# The baseline needs the host transports' hooks in place (they attach at start here, the modules
# being loaded; after a release they come back within a 2 s poll of a controller appearing, and
# until then commands merge those stages). Wait for both transports' hooks to be listed
# (attached, or missing where the kernel inlined the function).
transport_hooks_planned() {
	deadline 120
	until [ "$(timeout 10 wget -q -O - http://$LISTEN/metrics 2>/dev/null |
		grep -o '^nvmeof_exporter_bpf_hook_attached{hook="nvme_\(rdma\|tcp\)_' | sort -u | wc -l)" = 2 ]; do
		before_deadline || { fail "host transport hooks not planned 120 s after connecting"; return 1; }
		sleep 1
	done
	mark transport_hooks_planned
}
ctrl_live() { # CTRL SECONDS
	CTRL=$1 wait_state live "$2"
}
rxe_active() { # WHEN
	deadline 20
	until grep -qs ACTIVE /sys/class/infiniband/rxe0/ports/1/state; do
		before_deadline || { fail "rxe0 not ACTIVE $1"; return 1; }
		sleep 0.2
	done
}

# The transport tier: its hooks are the default tier's tracepoints plus the transport drivers'
# functions, and only those pin (fentry) and are released with the host transport modules,
# which the rmmod fault is about. The default tier's hooks are all exercised here too.
EXPORTER_ARGS="${EXPORTER_ARGS:-} --bpf.transport-stages"
load_modules
setup_net || die "network/rxe setup"
setup_target rdma 1 4420 $NQN_R /dev/nullb0 || die "nvmet rdma"
setup_target tcp 2 4421 $NQN_T /dev/nullb1 || die "nvmet tcp"
conf RDMA_NQN $NQN_R
conf TCP_NQN $NQN_T
bpf_list before-start
start_exporter || die "exporter start"
connect_both || die "nvme connect"
transport_hooks_planned
conf RDMA_CONTROLLER "$RCTRL"
conf TCP_CONTROLLER "$TCTRL"
scraper &
SCRAPER=$!

phase baseline
scrape baseline-before-io
fio_n baseline-rdma "$RDEV"
fio_n baseline-tcp "$TDEV"
scrape baseline-after-io

# ---- rxe link down and up during fio ----
# The RDMA controller is disconnected first: with it connected through a flap, on 6.12 its
# reconnects stayed in CM state CONNECT for good (rxe's QP1, the GSI QP, was in state ERR), and
# `nvme disconnect` and `rdma link delete` then hung in the kernel (hung task reports). So fio
# runs on the TCP namespace (its commands pass through the hooks the whole time); after the flap
# rxe0 is re-created, which the exporter sees as the RDMA device vanishing and coming back, nvmet
# port 1 is re-enabled and NVMe/RDMA reconnects.
phase link
nvme disconnect -n $NQN_R >/dev/null || fail "disconnect rdma before the flap"
fio_t link "$TDEV" 8 &
FIO=$!
sleep 2
ip link set veth0 down || fail "veth0 down"
mark link_down
sleep 1
scrape link-down
ip link set veth0 up || fail "veth0 up"
mark link_up
rxe_active "after link up"
rdma res show qp >"$R/rxe-qp-after-flap.txt" 2>&1
scrape link-up
rdma link delete rxe0 || fail "rdma link delete rxe0"
mark rxe_deleted
rdma link add rxe0 type rxe netdev veth0 || fail "rdma link add rxe0"
rxe_active "after re-creating it"
mark rxe_recreated
wait $FIO
ctrl_live "$TCTRL" 30
# nvmet-rdma's listener went with the old device (connects are rejected: -104): re-enable the
# port by linking its subsystem again.
rm "$CFG/ports/1/subsystems/$NQN_R" && ln -s "$CFG/subsystems/$NQN_R" "$CFG/ports/1/subsystems/$NQN_R" ||
	fail "re-enable nvmet port 1"
deadline 30
until connect rdma 4420 $NQN_R --reconnect-delay=1 --ctrl-loss-tmo=60 2>/dev/null; do
	before_deadline || die "nvme connect rdma after the flap"
	sleep 2
done
RCTRL=$CTRL RDEV=$DEV
conf RDMA_CONTROLLER_LINK "$RCTRL"
scrape link-after

# ---- nvmet port 2 removed and re-created during fio ----
phase port
P=$CFG/ports/2
fio_t port "$TDEV" 8 &
FIO=$!
sleep 2
rm "$P/subsystems/$NQN_T" && rmdir "$P" || fail "remove nvmet port 2"
mark port_removed
sleep 2
scrape port-removed
mkdir "$P" && echo tcp >"$P/addr_trtype" && echo ipv4 >"$P/addr_adrfam" && echo $IP >"$P/addr_traddr" &&
	echo 4421 >"$P/addr_trsvcid" && ln -s "$CFG/subsystems/$NQN_T" "$P/subsystems/$NQN_T" || fail "re-create nvmet port 2"
mark port_restored
wait $FIO
ctrl_live "$TCTRL" 60
scrape port-after

# ---- SIGKILL during I/O, no BPF object left behind, restart ----
phase kill
bpf_list running
fio_t kill-rdma "$RDEV" 6 &
F1=$!
fio_t kill-tcp "$TDEV" 6 &
F2=$!
sleep 2
mark kill
kill -KILL "$EXPORTER_PID"
wait "$EXPORTER_PID"
mark exporter_killed # reaped: its fds closed, its BPF links detached
# Links go with the process's fds; progs and maps are freed after an RCU grace period / from a
# workqueue, so poll until the lists equal the one from before the start (at most 10 s).
deadline 10
while :; do
	bpf_list after-kill
	cmp -s "$R/bpf-after-kill.txt" "$R/bpf-before-start.txt" && break
	before_deadline || break
	sleep 0.2
done
mark bpf_objects_released
ls -R /sys/fs/bpf >"$R/bpffs-after-kill.txt" 2>&1
wait $F1 $F2
mv "$R/exporter.log" "$R/exporter-1.log"
phase restart
start_exporter || die "exporter restart"
phase restarted
scrape restarted

# ---- rmmod the host transports with the hooks attached, modprobe, reconnect ----
phase rmmod
hooks_attached >"$R/hooks-before-rmmod.txt"
nvme disconnect -n $NQN_R >/dev/null || fail "disconnect rdma"
nvme disconnect -n $NQN_T >/dev/null || fail "disconnect tcp"
mark disconnected
# With no controller left the exporter releases the transports' hooks (it polls every 2 s), and
# with them the module references fentry holds. rmmod is retried until then, for at most 30 s.
for m in nvme_rdma nvme_tcp; do
	deadline 30
	tries=0
	until /usr/sbin/rmmod $m >"$R/rmmod-$m.txt" 2>&1; do
		tries=$((tries + 1))
		before_deadline || break
		sleep 0.5
	done
	if lsmod | grep -q "^$m "; then rc=1; else rc=0; fi
	echo "rc=$rc failed_tries=$tries" >>"$R/rmmod-$m.txt"
	mark "rmmod_$m"
done
mark rmmod_done
lsmod >"$R/lsmod-after-rmmod.txt"
sleep 5 # the exporter polls the loaded modules every 2 s
scrape modules-gone
phase reload
modprobe nvme_rdma || fail "modprobe nvme_rdma"
modprobe nvme_tcp || fail "modprobe nvme_tcp"
connect_both || die "nvme reconnect"
conf RDMA_CONTROLLER_2 "$RCTRL"
conf TCP_CONTROLLER_2 "$TCTRL"
deadline 90
until hooks_attached | cmp -s - "$R/hooks-before-rmmod.txt"; do
	before_deadline || { fail "hooks not all attached again 90 s after modprobe"; break; }
	sleep 1
done
mark hooks_reattached
hooks_attached >"$R/hooks-after-reload.txt"
scrape reload-before-io
fio_n reload-rdma "$RDEV"
fio_n reload-tcp "$TDEV"
scrape reload-after-io

# ---- SIGTERM with scrapes in flight and a half-sent request ----
phase sigterm
{ printf 'GET /metrics HTTP/1.1\r\nHost: x\r\n'; sleep 20; } | nc 127.0.0.1 10420 >/dev/null 2>&1 &
HALF=$!
# Three clients scrape back to back, so that scrapes are in flight at any moment: a single
# round of scrapes can all be answered before the signal goes out (under TCG a scrape takes
# about as long as a shell's sleep 0.1).
W=
for i in 1 2 3; do
	(while :; do
		timeout 10 wget -q -O /tmp/inflight-$i.prom http://$LISTEN/metrics 2>/dev/null &
		echo $! >/tmp/inflight-$i.pid # busybox timeout execs wget in its own pid
		wait $!
	done) &
	W="$W $!"
done
inflight=0 # scrapes not yet answered when SIGTERM goes out (a zombie has finished)
deadline 10
while :; do
	inflight=0
	for i in 1 2 3; do
		p=$(cat /tmp/inflight-$i.pid 2>/dev/null)
		[ -n "$p" ] && grep -qs '^State:.*[RSD]' /proc/$p/status && inflight=$((inflight + 1))
	done
	[ "$inflight" -ge 1 ] && break
	before_deadline || break
	sleep 0.05
done
mark sigterm
t0=$(now)
kill -TERM "$EXPORTER_PID"
kill $W 2>/dev/null # the loops; their scrapes in flight run to their end
(sleep 10; kill -KILL "$EXPORTER_PID") >/dev/null 2>&1 &
KILLER=$!
wait "$EXPORTER_PID"
rc=$?
t1=$(now)
kill $KILLER $HALF 2>/dev/null
echo "sigterm_at=$t0 exited_at=$t1 exit_code=$rc scrapes_in_flight=$inflight" | tee "$R/sigterm.txt"
mv "$R/exporter.log" "$R/exporter-2.log"
EXPORTER_PID=
phase done
sleep 1
touch /tmp/stop-scraper
wait $SCRAPER
grep -c '^# scrape' "$R/series.txt" | sed 's/^/timed scrapes: /'
finish
