# Scenario: connection lifecycle counters (bpf/lifecycle.bpf.c) over NVMe/TCP, every count
# judged exactly by check_lifecycle.py against what this script did. In turn:
#   start     the exporter starts before any nvme/nvmet module (bpf.hostnqn_limit 2,
#             bpf.enable_stats on); the modules load and the lifecycle hooks attach late;
#   fail      three failed `nvme connect`: a subsystem that does not exist, a host not in the
#             allowed hosts of a second subsystem, and a port with no listener;
#   rdma      over rxe: a connect to an RDMA port with no listener is rejected by the CM; a
#             connect and disconnect counts each queue's CM handshake on both sides;
#   hosts     three host NQNs connect to the subsystem (one I/O queue each): two keep their
#             name in nvmeof_target_controllers, the third folds into "other";
#   io        a 2000-I/O fio run: no lifecycle program runs (bpftool run counts, stats on);
#   path      the port loses the subsystem link (nvmet disables it) and gets it back: every
#             controller goes live -> resetting -> connecting -> live once;
#   kato      the address both sides use goes away for longer than the 5 s kato: the
#             target expires each controller's keep-alive, the hosts' keep-alive commands fail
#             (6.12: nvme_keep_alive_end_io; 6.1 inlines it) and they reconnect;
#   rmmod     after `nvme disconnect-all`, nvme_tcp, nvme_rdma and nvme_fabrics unload with the exporter
#             running (kprobes do not pin them), their hooks leave hook_attached, and come back
#             on modprobe: a failed connect after it is counted on top of the earlier ones.
# Without module BTF (5.10) the hooks that read nvme_core's, nvme_fabrics' or nvmet's types cannot
# load; the counting left to the classic tracepoint hooks (the target's Connects) and to
# nvmf_dev_write runs through the same phases, rdma aside (its CM hook reads rdma_cm's types).
. /opt/vm/lib.sh
conf SCENARIO lifecycle
conf KERNEL "$(uname -r)"
NQN=nqn.2024-01.io.nvmeof-exporter:vm-lifecycle
NQN2=nqn.2024-01.io.nvmeof-exporter:vm-lifecycle-closed
NQN_NONE=nqn.2024-01.io.nvmeof-exporter:no-such-subsystem
H=nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-00000000000
conf NQN $NQN
conf NQN2 $NQN2
conf TRADDR $IP
conf HOSTS "${H}1 ${H}2 ${H}3"
conf BAD_HOST "${H}9"

phase_scrape() { scrape "$1"; bpftool -j prog show >"$R/progs-$1.json" 2>/dev/null; mark "$1"; }
# lc_hooks_attached N: waits until N lifecycle hooks show as attached (1) in hook_attached.
lc_attached() {
	timeout 10 wget -q -O - http://$LISTEN/metrics 2>/dev/null |
		grep -cE '^nvmeof_exporter_bpf_hook_attached\{hook="(nvme_change_ctrl_state|nvmf_dev_write|nvmf_connect_admin_queue|nvmet_execute_admin_connect|nvmet_execute_io_connect|nvmet_alloc_ctrl|nvmet_ctrl_free|nvmet_keep_alive_timer)(_return)?".*\} 1$'
}
# Without module BTF: the classic tracepoint hooks and nvmf_dev_write_return (3 in all).
lc_tp_attached() {
	timeout 10 wget -q -O - http://$LISTEN/metrics 2>/dev/null |
		grep -cE '^nvmeof_exporter_bpf_hook_attached\{hook="(nvmet_req_init_connect|nvmet_req_complete_connect|nvmf_dev_write_return)",mechanism="(tracepoint|kprobe)".*\} 1$'
}
wait_lc() { # N SECONDS WHAT
	deadline "$2"
	until [ "$($LC_ATTACHED)" -ge "$1" ]; do
		before_deadline || { fail "fewer than $1 lifecycle hooks attached $3"; return 1; }
		sleep 1
	done
	mark "lc_hooks_$3"
}
# Host i: hostnqn ${H}i, hostid ...i (kernels refuse one hostid under two host NQNs).
hostid() { echo "00000000-0000-0000-0000-00000000000$1"; }
try_connect() { # NAME SVCID NQN HOST [TRANSPORT]: a connect that must fail
	if nvme connect -t "${5:-tcp}" -a $IP -s "$2" -n "$3" --hostnqn="${H}$4" --hostid="$(hostid "$4")" \
		>"$R/connect-$1.txt" 2>&1; then
		fail "connect $1 succeeded"
	fi
}

cat >/tmp/lifecycle.yml <<EOF
bpf:
  enable_stats: true
  hostnqn_limit: 2
EOF
EXPORTER_ARGS="--config.file=/tmp/lifecycle.yml" start_exporter || die "exporter start"
phase_scrape before-modules
modprobe null_blk nr_devices=2 gb=1 || fail "modprobe null_blk"
for m in veth nvmet nvmet_tcp nvme_tcp; do modprobe $m || fail "modprobe $m"; done
mark modules_loaded
ip link add veth0 type veth peer name veth1 || die "veth"
ip addr add $IP/24 dev veth0
ip link set veth0 up && ip link set veth1 up
setup_target tcp 2 4421 $NQN /dev/nullb1 || die "nvmet setup"
# The second subsystem admits one host only; on a port of its own (3, 4422), so that port 2
# has one subsystem and is disabled when it loses it (the path fault below).
S2=$CFG/subsystems/$NQN2 P3=$CFG/ports/3
mkdir "$S2" && echo 0 >"$S2/attr_allow_any_host" && mkdir "$CFG/hosts/${H}1" &&
	ln -s "$CFG/hosts/${H}1" "$S2/allowed_hosts/${H}1" && mkdir "$P3" && echo tcp >"$P3/addr_trtype" &&
	echo ipv4 >"$P3/addr_adrfam" && echo $IP >"$P3/addr_traddr" && echo 4422 >"$P3/addr_trsvcid" &&
	ln -s "$S2" "$P3/subsystems/$NQN2" || die "second subsystem"
# Without module BTF (5.10) the hooks that read nvme_core's, nvme_fabrics' or nvmet's types cannot
# load: the exporter must say so (named skips, check_lifecycle.py), and count what the classic
# tracepoints give. The records' layouts are saved (format-*.txt: the unit tests' fixtures).
NO_BTF=0
if no_module_btf nvmet; then
	NO_BTF=1
	conf NO_MODULE_BTF 1
	for e in nvmet/nvmet_req_init nvmet/nvmet_req_complete; do
		cat /sys/kernel/tracing/events/$e/format >"$R/format-${e#*/}.txt" 2>&1
	done
	LC_ATTACHED=lc_tp_attached LC_HOOKS=3
else
	# 8 entry + 6 return hooks of nvme_core, nvme_fabrics and nvmet (keep-alive end_io aside).
	LC_ATTACHED=lc_attached LC_HOOKS=14
fi
wait_lc $LC_HOOKS 120 after-modprobe || die "lifecycle hooks"
phase_scrape start

try_connect no-subsystem 4421 $NQN_NONE 1
try_connect bad-host 4422 $NQN2 9
try_connect no-listener 4499 $NQN 1
phase_scrape fail

# ---- the RDMA-CM handshake over rxe (soft-RoCE on veth0) ----
rdma_phase() {
for m in rdma_rxe nvmet_rdma nvme_rdma; do modprobe $m || fail "modprobe $m"; done
rdma link add rxe0 type rxe netdev veth0 || die "rdma link add rxe0"
deadline 20
until grep -qs ACTIVE /sys/class/infiniband/rxe0/ports/1/state; do
	before_deadline || die "rxe0 not ACTIVE"
	sleep 0.2
done
P1=$CFG/ports/1
mkdir "$P1" && echo rdma >"$P1/addr_trtype" && echo ipv4 >"$P1/addr_adrfam" &&
	echo $IP >"$P1/addr_traddr" && echo 4420 >"$P1/addr_trsvcid" &&
	ln -s "$CFG/subsystems/$NQN" "$P1/subsystems/$NQN" || die "nvmet rdma port"
# Our CM hook. (The stage collector holds no nvme_rdma hook at the default tier: its
# tracepoints are in nvme_core and nvmet.)
deadline 120
until [ "$(timeout 10 wget -q -O - http://$LISTEN/metrics 2>/dev/null |
	grep -cE '^nvmeof_exporter_bpf_hook_attached\{hook="rdma_cm_event_handler".*\} 1$')" = 1 ]; do
	before_deadline || die "rdma_cm_event_handler not attached"
	sleep 1
done
phase_scrape rdma-start
try_connect rdma-no-listener 4498 $NQN 1 rdma
phase_scrape rdma-fail
before=$(echo /sys/class/nvme/nvme*)
printf 'nqn=%s,transport=rdma,traddr=%s,trsvcid=4420,hostnqn=%s,hostid=%s,nr_io_queues=1' \
	$NQN $IP "${H}1" "$(hostid 1)" >/dev/nvme-fabrics || die "rdma connect"
CTRL=
for c in /sys/class/nvme/nvme*; do
	case " $before " in *" $c "*) ;; *) CTRL=${c##*/} ;; esac
done
[ -n "$CTRL" ] && wait_state live 30 || die "rdma controller"
conf RDMA_CTRL "$CTRL"
phase_scrape rdma-connected
# Over a few of the stage collector's 2 s polls (see above).
sleep 5
echo 1 >/sys/class/nvme/$CTRL/delete_controller
wait_state gone 30
rm "$P1/subsystems/$NQN" # port 1 disabled: the rest is NVMe/TCP
sleep 2
phase_scrape rdma
}
[ $NO_BTF = 1 ] || rdma_phase

# connect_host I: host I connects, written to /dev/nvme-fabrics as nvme-cli would (nvme-cli
# refuses a second controller to one address: "already connected"). Sets CTRL.
connect_host() {
	local before c
	before=$(echo /sys/class/nvme/nvme*)
	printf 'nqn=%s,transport=tcp,traddr=%s,trsvcid=4421,hostnqn=%s,hostid=%s,nr_io_queues=1,reconnect_delay=1,ctrl_loss_tmo=120' \
		$NQN $IP "${H}$1" "$(hostid "$1")" >/dev/nvme-fabrics || return 1
	CTRL=
	for c in /sys/class/nvme/nvme*; do
		case " $before " in *" $c "*) ;; *) CTRL=${c##*/} ;; esac
	done
	[ -n "$CTRL" ] && wait_state live 30
}
for i in 1 2 3; do
	connect_host $i || die "connect host $i"
	eval "CTRL$i=\$CTRL"
	conf "CTRL$i" "$CTRL"
done
# Multipath: one namespace disk for the three controllers.
DEV1=$(ls /dev/nvme*n1 | head -1)
phase_scrape hosts

fio --name=io --filename="$DEV1" --rw=randread --bs=4k --direct=1 --ioengine=libaio \
	--iodepth=4 --number_ios=2000 --size=256m --output-format=json --output="$R/fio-io.json" ||
	fail "fio io"
phase_scrape io

all_live() { # SECONDS
	for CTRL in $CTRL1 $CTRL2 $CTRL3; do wait_state live "$1" || return 1; done
}
# The port loses its only subsystem, so nvmet disables it: the hosts' reconnects find no
# listener and go on (a Connect refused with DNR, as with another subsystem left on the port,
# would make 6.10+ hosts delete the controller instead).
LINK=$CFG/ports/2/subsystems/$NQN
rm "$LINK" || fail "remove $LINK"
for CTRL in $CTRL1 $CTRL2 $CTRL3; do wait_state '!live' 30; done
sleep 4 # a few reconnects fail meanwhile (every second)
ln -s "$CFG/subsystems/$NQN" "$LINK" || fail "restore $LINK"
all_live 60 && mark path_live_again
sleep 2
phase_scrape path

# Both sides use $IP, a local address, whose traffic goes through lo whatever veth0 does: take the
# address away instead, so that neither side can send to the other.
ip addr del $IP/24 dev veth0 || fail "address del"
mark address_gone
sleep 15 # 3 x kato (5 s): the target's timer expires, the hosts' keep-alives time out
ip addr add $IP/24 dev veth0 || fail "address add"
mark address_back
all_live 90 && mark kato_live_again
sleep 2
phase_scrape kato

nvme disconnect-all >/dev/null 2>&1 || fail "disconnect-all"
deadline 30
while ls /sys/class/nvme/ 2>/dev/null | grep -q nvme; do
	before_deadline || { fail "controllers left after disconnect-all"; break; }
	sleep 0.5
done
sleep 3 # the stage collector releases its nvme_tcp hooks within its 2 s poll
if rmmod nvme_tcp $(grep -q '^nvme_rdma ' /proc/modules && echo nvme_rdma) nvme_fabrics 2>"$R/rmmod.txt"; then conf RMMOD ok; else fail "rmmod nvme_tcp nvme_rdma nvme_fabrics: $(cat "$R/rmmod.txt")"; fi
sleep 4
phase_scrape rmmod
modprobe nvme_tcp || fail "modprobe nvme_tcp again"
wait_lc $LC_HOOKS 120 after-reload || true
try_connect reload-no-listener 4499 $NQN 1
phase_scrape reload
finish
