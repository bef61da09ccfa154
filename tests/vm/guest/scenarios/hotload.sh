# Scenario (c): the exporter starts before any NVMe/RDMA module is loaded and before any target or
# controller exists; modules, rxe, the target and the controller come up under it, then I/O.
# TRANSPORT=tcp (from run.sh's environment, via the kernel command line) runs it over NVMe/TCP.
. /opt/vm/lib.sh
conf SCENARIO hotload
conf KERNEL "$(uname -r)"
lsmod >"$R/lsmod-start.txt"
start_exporter || die "exporter start"
scrape no-modules
# `record` starts with only nvmet loaded (and nvme_core, which it pulls in): the transport
# drivers' hooks, host and target, attach while it runs, as their modules load.
# Without nvmet's BTF (5.10) it must exit non-zero at start saying why (a named skip).
modprobe nvmet || fail "modprobe nvmet"
$EXPORTER record --role=both -s 1 -o "$R/late" 2>"$R/record-late.log" &
RECORD_PID=$!
RECORD_LATE=1
if no_module_btf nvmet; then
	conf NO_MODULE_BTF 1
	RECORD_LATE=0
	wait $RECORD_PID
	echo "$?" >"$R/record-late-exit-code"
fi
deadline 240
until [ $RECORD_LATE = 0 ] || grep -q 'recording' "$R/record-late.log" 2>/dev/null; do
	[ -d /proc/$RECORD_PID ] || { cat "$R/record-late.log"; die "record exited at start"; }
	before_deadline || die "record not ready after 240 s"
	sleep 0.5
done
load_modules
setup_net || die "network/rxe setup"
if [ "${TRANSPORT:-rdma}" = tcp ]; then
	set -- tcp 2 4421 nqn.2024-01.io.nvmeof-exporter:vm-hotload /dev/nullb1
else
	set -- rdma 1 4420 nqn.2024-01.io.nvmeof-exporter:vm-hotload /dev/nullb0
fi
setup_target "$@" || die "nvmet setup"
scrape target-only
connect "$1" "$3" "$4" || die "nvme connect"
# The exporter attaches the NVMe-oF hooks of modules loaded after it started from a watcher
# thread (trial loads take tens of seconds under TCG): wait until both roles' frames are in.
deadline 180
until timeout 10 wget -q -O - http://$LISTEN/metrics 2>/dev/null |
	grep -q 'hook="nvmet_req_complete",mechanism="[a-z_]*",required="true"} 1' &&
	timeout 10 wget -q -O - http://$LISTEN/metrics 2>/dev/null |
	grep -q 'hook="nvme_rq_end",mechanism="[a-z_]*",required="true"} 1'; do
	before_deadline || { fail "NVMe-oF hooks not attached 180 s after the modules loaded"; break; }
	sleep 2
done
mark nvmeof_hooks_attached
deadline 180
until [ $RECORD_LATE = 0 ] ||
	{ grep -q "hook=\"nvme_${1}_" "$R/record-late.log" && grep -q "hook=\"nvmet_${1}_" "$R/record-late.log"; }; do
	before_deadline || { fail "record: late hooks not attached after 180 s"; break; }
	sleep 1
done
mark record_hooks_attached
snapshot before-io
run_fio io "$DEV" "$FIO_RUNTIME"
snapshot after-io
if [ $RECORD_LATE = 1 ]; then
	kill -INT $RECORD_PID
	wait $RECORD_PID
	echo "$?" >"$R/record-late-exit-code"
fi
# The other host transport never had a controller here: its stage hooks (where this kernel has
# them; nvme_tcp has none on 6.1) hold it only for the 30 s grace after they attached
# (nvmeof_loader.cc), then rmmod works with the exporter running.
UNUSED=nvme_tcp
[ "$1" = tcp ] && UNUSED=nvme_rdma
tries=0 rc=1
for _ in $(seq 120); do
	if /usr/sbin/rmmod $UNUSED >"$R/rmmod-unused.txt" 2>&1; then rc=0; break; fi
	tries=$((tries + 1))
	sleep 1
done
echo "rc=$rc failed_tries=$tries module=$UNUSED" >>"$R/rmmod-unused.txt"
finish
