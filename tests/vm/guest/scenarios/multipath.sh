# Scenario: failover between two paths of one namespace (native NVMe multipath). One nvmet
# subsystem is exported on two NVMe/TCP ports (2: 4421, 3: 4422) and connected through both, so
# the host has two controllers (paths) under one multipath head, round-robin. fio runs on the
# head; port 3's ANA group 1 goes inaccessible (nvmet sends an ANA change notice; commands that
# reach the port meanwhile fail with an ANA error and fail over to port 2's path) and comes back
# optimized; then port 3 loses the subsystem link for a few seconds and gets it back; then the
# host resets path 2's controller (its commands in flight fail over). Recorded for
# check_multipath.py: every timed scrape's status (scrapes.txt), the kernel's view of both paths
# every 0.2 s (paths.txt: controller states, sysfs ana_state), and the kernel's
# nvme:nvme_complete_rq records of commands that completed with an error (trace.txt), from
# which the host's failovers are counted independently of the exporter.
. /opt/vm/lib.sh
conf SCENARIO multipath
conf KERNEL "$(uname -r)"
NQN=nqn.2024-01.io.nvmeof-exporter:vm-multipath
T=/sys/kernel/tracing
# Every command takes 20 ms on the target's disk (null_blk timer mode), so each path has commands
# in flight when its port changes state or goes away: those are the ones that fail over.
# shellcheck disable=SC2034 # read by lib.sh load_modules
NULLB_ARGS="nr_devices=2 gb=1 irqmode=2 completion_nsec=20000000"
load_modules
conf MULTIPATH "$(cat /sys/module/nvme_core/parameters/multipath 2>/dev/null)"
# Without module BTF (5.10) the multipath hooks cannot read nvme_core's types: named skips.
no_module_btf nvme_core && conf NO_MODULE_BTF 1
setup_net || die "network/rxe setup"
setup_target tcp 2 4421 $NQN /dev/nullb1 || die "nvmet setup"
# The second path: the same subsystem on a second port.
P3=$CFG/ports/3
mkdir $P3 && echo tcp >$P3/addr_trtype && echo ipv4 >$P3/addr_adrfam && echo $IP >$P3/addr_traddr &&
	echo 4422 >$P3/addr_trsvcid && ln -s $CFG/subsystems/$NQN $P3/subsystems/$NQN || die "nvmet port 3"
ANA=$P3/ana_groups/1/ana_state
[ -e $ANA ] || die "no $ANA"
# The functions the multipath hooks need, as ftrace (and so kprobes) sees them here.
grep -E '^(nvme_failover_req|nvme_update_ana_state|nvme_update_ns_ana_state|nvme_parse_ana_log|__nvme_find_path|nvme_requeue_work)\b' \
	$T/available_filter_functions >"$R/ftrace-functions.txt" 2>/dev/null
start_exporter || die "exporter start"
# The kernel's own record of each command that completed with an error status (per path
# controller, queue and status): the failovers' independent count.
echo 'status != 0' >$T/events/nvme/nvme_complete_rq/filter &&
	echo 1 >$T/events/nvme/nvme_complete_rq/enable || fail "trace nvme_complete_rq"
connect tcp 4421 $NQN || die "nvme connect (path 1)"
CTRL_A=$CTRL HEAD=$DEV
# Reconnects every second: the path fault below must end with the path live again.
nvme connect -t tcp -a $IP -s 4422 -n $NQN --reconnect-delay=1 --ctrl-loss-tmo=120 || die "nvme connect (path 2)"
CTRL_B=
deadline 30
while [ -z "$CTRL_B" ]; do
	for c in /sys/class/nvme/nvme*; do
		[ "$(cat "$c/subsysnqn" 2>/dev/null)" = $NQN ] && grep -q 'trsvcid=4422' "$c/address" 2>/dev/null &&
			CTRL_B=${c##*/}
	done
	[ -n "$CTRL_B" ] || { before_deadline || die "no controller for port 3"; sleep 0.2; }
done
CTRL=$CTRL_B
wait_state live 30 || die "path 2 not live"
CTRL=$CTRL_A
# Hidden path disks (nvmeXcYnZ): their ANA state as the host sees it.
path_disk() { for d in /sys/class/nvme/$1/nvme*c*n*; do [ -e "$d/ana_state" ] && echo "${d##*/}"; done | head -1; }
DISK_A=$(path_disk $CTRL_A) DISK_B=$(path_disk $CTRL_B)
[ -n "$DISK_A" ] && [ -n "$DISK_B" ] || die "no path disks ($DISK_A $DISK_B)"
SUBSYS=
for s in /sys/class/nvme-subsystem/*; do [ "$(cat "$s/subsysnqn")" = $NQN ] && SUBSYS=$s; done
# Both paths carry I/O, so the one taken away has commands in flight.
echo round-robin >"$SUBSYS/iopolicy" || fail "iopolicy round-robin"
conf NQN $NQN
conf CTRL_A "$CTRL_A"
conf CTRL_B "$CTRL_B"
conf DISK_A "$DISK_A"
conf DISK_B "$DISK_B"
conf HEAD "$HEAD"
conf IOPOLICY "$(cat "$SUBSYS/iopolicy")"
echo "paths: $CTRL_A ($DISK_A) and $CTRL_B ($DISK_B) under $HEAD"

# The multipath hooks attach from the exporter's watcher thread (nvme_core is loaded already).
deadline 120
until no_module_btf nvme_core || timeout 10 wget -q -O - http://$LISTEN/metrics 2>/dev/null |
	grep -qE '^nvmeof_exporter_bpf_hook_attached\{hook="nvme_failover_req".*\} 1$'; do
	before_deadline || { fail "nvme_failover_req not attached"; break; }
	sleep 1
done
mark hooks
scrape before

paths() {
	while [ ! -e /tmp/stop-paths ]; do
		echo "$(now) $(cat /sys/class/nvme/$CTRL_A/state) $(cat /sys/block/$DISK_A/ana_state)" \
			"$(cat /sys/class/nvme/$CTRL_B/state) $(cat /sys/block/$DISK_B/ana_state)" >>"$R/paths.txt"
		sleep 0.2
	done
}
scraper() {
	while [ ! -e /tmp/stop-scraper ]; do
		t=$(now)
		if timeout 10 wget -q -O /tmp/scrape.prom http://$LISTEN/metrics; then rc=0; else rc=$?; fi
		echo "# scrape $t rc=$rc ana_b=$(cat /sys/block/$DISK_B/ana_state)" >>"$R/scrapes.txt"
		[ $rc = 0 ] && grep -E '^nvmeof_path_' /tmp/scrape.prom >>"$R/scrapes.txt"
		sleep 0.5
	done
}
# seen_scrapes STATE N SECONDS: N timed scrapes begun after this call saw path B's ANA state
# STATE (scrapes take seconds under TCG: the state is held until scrapes saw it).
seen_scrapes() {
	local from
	from=$(wc -l <"$R/scrapes.txt")
	deadline "$3"
	while [ "$(tail -n +$((from + 1)) "$R/scrapes.txt" | grep -c "^# scrape .* ana_b=$1\$")" -lt "$2" ]; do
		before_deadline || { fail "fewer than $2 scrapes saw $DISK_B $1 within $3 s"; return 1; }
		sleep 0.2
	done
}
# wait_ana STATE SECONDS: until the host sees path B's ANA state STATE.
wait_ana() {
	deadline "$2"
	until [ "$(cat /sys/block/$DISK_B/ana_state)" = "$1" ]; do
		before_deadline || { fail "$DISK_B ana_state not $1 after $2 s"; return 1; }
		sleep 0.1
	done
	mark "ana_$1"
}
touch "$R/scrapes.txt"
paths &
PATHS=$!
scraper &
SCRAPER=$!
run_fio io "$HEAD" "${FAULT_RUNTIME:-30}" &
FIO=$!
sleep 3
mark fault
# A transition first: the group in `change` for CHANGE_SECONDS (nvmet announces it; the host's
# ANA transition timer allows twice nvmet's ANATT of 10 s).
echo change >$ANA || fail "set $ANA change"
wait_ana change 30
sleep "${CHANGE_SECONDS:-2}"
echo inaccessible >$ANA || fail "set $ANA inaccessible"
wait_ana inaccessible 30
seen_scrapes inaccessible 2 40
mark restore
echo optimized >$ANA || fail "set $ANA optimized"
wait_ana optimized 30
seen_scrapes optimized 2 40
# The ANA notice reaches the host within milliseconds, so few commands, if any, meet the
# inaccessible port. Port 3 then loses the subsystem (nvmet disables the port; the host's
# controller goes to error recovery, cancels what is still in flight on it and reconnects) and
# gets it back: 0 to 4 commands failed over then in the VM runs. Last, the host
# resets path 2's controller, which cancels the commands in flight on it (host aborted, a path
# error): those fail over, always some with 20 ms commands.
sleep 2
mark unlink
rm $P3/subsystems/$NQN || fail "unlink port 3"
CTRL=$CTRL_B
wait_state '!live' 20 && mark not_live
sleep 3
mark relink
ln -s $CFG/subsystems/$NQN $P3/subsystems/$NQN || fail "relink port 3"
wait_state live 60 && mark live_again
sleep 2
mark reset
echo 1 >/sys/class/nvme/$CTRL_B/reset_controller || fail "reset $CTRL_B"
wait_state live 60 && mark live_after_reset
CTRL=$CTRL_A
wait $FIO
sleep 1
touch /tmp/stop-scraper /tmp/stop-paths
wait $SCRAPER
wait $PATHS
echo 0 >$T/events/nvme/nvme_complete_rq/enable
cat $T/trace >"$R/trace.txt"
grep -c '^# scrape' "$R/scrapes.txt" | sed 's/^/timed scrapes: /'
echo "error completions traced: $(grep -c 'nvme_complete_rq' "$R/trace.txt")"
scrape final

# The kernel's own counters where it has them (the nvme `diag` attribute group, 7.2): "device
# counter value" for the controllers, the path disks and the head.
diag() {
	local d f
	for d in /sys/class/nvme/nvme* /sys/class/nvme/nvme*/nvme*c*n* /sys/block/nvme*n*; do
		[ -d "$d/diag" ] || continue
		for f in "$d"/diag/*; do echo "${d##*/} ${f##*/} $(cat "$f")"; done
	done >"$R/diag-$1.txt"
}
# Both paths lost at once: the head has no usable path, and requeues its I/O (its controllers
# are reconnecting) until one comes back (port 3's, reconnecting every second). The stall spans
# the outage; fio's slowest I/O waited through it.
diag outage_before
scrape outage_before
run_fio outage "$HEAD" "${OUTAGE_RUNTIME:-12}" &
FIO=$!
sleep 2
mark outage
rm $CFG/ports/2/subsystems/$NQN $P3/subsystems/$NQN || fail "unlink both ports"
sleep "${OUTAGE_SECONDS:-4}"
mark outage_relink
ln -s $CFG/subsystems/$NQN $CFG/ports/2/subsystems/$NQN || fail "relink port 2"
ln -s $CFG/subsystems/$NQN $P3/subsystems/$NQN || fail "relink port 3"
CTRL=$CTRL_B
wait_state live 60 && mark outage_live
CTRL=$CTRL_A
wait $FIO
sleep 1
scrape outage_after
diag outage_after

# A disk made anew under the same name and dev_t (a null_blk device deleted and made again
# through configfs): its block series counts its own requests, not the old disk's (the block
# programs key a disk by its diskseq, 5.15+; before, by its dev_t: a known limit).
# remade-N.txt: "name dev diskseq" and the disk's stat line; metrics-remade-N.prom after N reads.
NB=/sys/kernel/config/nullb/remade
remade() { # ROUND READS
	mkdir $NB && echo 0 >$NB/irqmode && echo 64 >$NB/size && echo 1 >$NB/power ||
		{ fail "null_blk configfs device ($1)"; return 1; }
	local disk
	disk=nullb$(cat $NB/index)
	[ -e /sys/block/remade ] && disk=remade # named after its configfs item since 5.19
	dd if=/dev/$disk of=/dev/null bs=4k count="$2" iflag=direct 2>/dev/null || fail "dd $disk"
	sleep 1
	{ echo "$disk $(cat /sys/block/$disk/dev) $(cat /sys/block/$disk/diskseq 2>/dev/null || echo none)"
		cat /sys/block/$disk/stat; } >"$R/remade-$1.txt"
	scrape remade-$1
	echo 0 >$NB/power && rmdir $NB || fail "null_blk configfs delete ($1)"
}
if [ -d /sys/kernel/config/nullb ]; then
	remade 1 "${REMADE_READS_1:-300}" && remade 2 "${REMADE_READS_2:-20}"
fi

# A subsystem made where a disconnected host disk was: a gendisk and an nvmet_subsys are both
# kmalloc-1k objects, so the new subsystem often takes the disk's address while the exporter
# still holds the disk's series (no scrape sees the disk gone before). Its target series counts
# its own commands (nvmeof_name_key): what the host sent its namespace, the host's count after
# (reuse-N) less before the disconnect (reuse-N-old: a new disk may have the old one's name).
# Three tries of two subsystems; reuse-N.json: nv_names' keys (bpftool) before the scrape.
subsystem_on_port2() { # NQN DEV
	subsystem "$1" "$2" && ln -s "$CFG/subsystems/$1" "$CFG/ports/2/subsystems/$1"
}
subsystem_gone() { rm "$CFG/ports/2/subsystems/$1" && rmdir "$CFG/subsystems/$1/namespaces/1" "$CFG/subsystems/$1"; }
disk_of() { # NQN: its namespace's block device, once there
	local c d
	deadline 20
	while before_deadline; do
		for c in /sys/class/nvme-subsystem/nvme-subsys*; do
			[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$1" ] || continue
			for d in "$c"/nvme*n*; do [ -b "/dev/${d##*/}" ] && { echo "${d##*/}"; return 0; }; done
		done
		sleep 0.1
	done
	return 1
}
reuse() { # N
	local old=$NQN-old$1 dev cpu new s
	subsystem_on_port2 "$old" /dev/nullb0 && nvme connect -t tcp -a "$IP" -s 4421 -n "$old" >/dev/null &&
		dev=$(disk_of "$old") || { fail "reuse $1: $old"; return 1; }
	dd if="/dev/$dev" of=/dev/null bs=4k count=8 iflag=direct 2>/dev/null
	sleep 1
	scrape "reuse-$1-old"
	# Its head and path gendisks go back to a CPU's free list: a new subsystem is made on each.
	nvme disconnect -n "$old" >/dev/null || { fail "reuse $1: disconnect"; return 1; }
	for cpu in 0 1; do taskset -c $cpu mkdir "$CFG/subsystems/$NQN-new$1-$cpu" || fail "reuse $1: mkdir"; done
	subsystem_gone "$old"
	: >"$R/reuse-$1.txt"
	for cpu in 0 1; do
		new=$NQN-new$1-$cpu s=$CFG/subsystems/$NQN-new$1-$cpu
		echo 1 >"$s/attr_allow_any_host" && mkdir "$s/namespaces/1" && printf %s /dev/nullb0 >"$s/namespaces/1/device_path" &&
			echo 1 >"$s/namespaces/1/enable" && ln -s "$s" "$CFG/ports/2/subsystems/$new" &&
			nvme connect -t tcp -a "$IP" -s 4421 -n "$new" >/dev/null && dev=$(disk_of "$new") ||
			{ fail "reuse $1: $new"; return 1; }
		dd if="/dev/$dev" of=/dev/null bs=4k count=24 iflag=direct 2>/dev/null
		echo "$old $new $dev" >>"$R/reuse-$1.txt"
	done
	sleep 1
	bpftool -j map dump name nv_names >"$R/reuse-$1.json" 2>&1
	scrape "reuse-$1"
	for cpu in 0 1; do
		nvme disconnect -n "$NQN-new$1-$cpu" >/dev/null && subsystem_gone "$NQN-new$1-$cpu" || fail "reuse $1: cleanup"
	done
}
for n in 1 2 3; do reuse $n || break; done
finish
