# Helpers for the scenarios, sourced inside the VM (busybox sh). Results go to $R (the 9p share):
#   scenario.env    KEY=VALUE of what the scenario configured, for check.py
#   metrics-*.prom  /metrics scrapes;  sysfs-*.txt  rdma hw_counters read around a scrape
#   fio-*.json, exporter.log, timings.txt, dmesg.txt, lsmod.txt
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
# Debian's busybox-static runs its own applets before $PATH: busybox ip cannot make a veth and
# busybox modprobe does not read modules.dep the same way, so call iproute2 and kmod by path.
ip() { /usr/bin/ip "$@"; }
modprobe() { /usr/sbin/modprobe "$@"; }
R=${R:-/tmp/results}
mkdir -p "$R"
FIO_RUNTIME=${FIO_RUNTIME:-3}
IP=10.10.10.1
CFG=/sys/kernel/config/nvmet
EXPORTER=/opt/nvmeof/nvmeof_exporter
LISTEN=127.0.0.1:10420
FAILS=0
EXPORTER_PID=

now() { cut -d' ' -f1 /proc/uptime; }
# UP = whole seconds of uptime. Waits use deadlines on it, not iteration counts: under TCG on a
# busy host one poll can take a large fraction of a second.
uptime_s() { read -r UP _ </proc/uptime; UP=${UP%.*}; }
# before SECONDS: true until SECONDS after the last call of deadline.
deadline() { uptime_s; DEADLINE=$((UP + $1)); }
before_deadline() { uptime_s; [ "$UP" -lt "$DEADLINE" ]; }
mark() { echo "$1 $(now)" >>"$R/timings.txt"; echo "== $1 at $(now)s"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
die() { fail "$*"; finish; }
conf() { echo "$1=$2" >>"$R/scenario.env"; } # what was configured, for the host checks
# True when loaded module MODULE has no BTF of its own (kernels before 5.11, without
# CONFIG_DEBUG_INFO_BTF_MODULES): the hooks that read nvmet's or the transports' types cannot
# load there, so `record`, `top` and the forced fentry/kprobe mechanisms are named skips.
no_module_btf() { [ -e /sys/kernel/btf/vmlinux ] && [ -d "/sys/module/$1" ] && [ ! -e "/sys/kernel/btf/$1" ]; }

load_modules() {
	local m
	for m in veth null_blk rdma_rxe nvmet nvmet_rdma nvmet_tcp nvme_rdma nvme_tcp tcp_diag; do
		case $m in
		null_blk) modprobe null_blk ${NULLB_ARGS:-nr_devices=2 gb=1} ;;
		*) modprobe $m ;;
		esac || fail "modprobe $m"
	done
	mark modules_loaded
}

# rxe0 on veth0 (10.10.10.1/24); NVMe/RDMA and NVMe/TCP both use that address, in this VM only.
# rxe_add NAME NETDEV: a soft-RoCE device on NETDEV, its port 1 ACTIVE within 20 s.
rxe_add() {
	rdma link add "$1" type rxe netdev "$2" || return 1
	deadline 20
	while ! grep -q ACTIVE "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null; do
		before_deadline || { fail "$1 port 1 not ACTIVE"; return 1; }
		sleep 0.1
	done
}

setup_net() {
	ip link add veth0 type veth peer name veth1 || return 1
	ip addr add $IP/24 dev veth0
	ip link set veth0 up && ip link set veth1 up
	rxe_add rxe0 veth0 || return 1
	conf RXE_DEV rxe0
	conf RXE_PORT 1
	conf RXE_NETDEV veth0
	# What the exporter's MTU gauges must match: the netdev MTU, and the active MTU the rxe
	# driver reports through uverbs ("active_mtu:		1024 (3)").
	conf VETH_MTU "$(cat /sys/class/net/veth0/mtu)"
	conf RXE_ACTIVE_MTU "$(ibv_devinfo -d rxe0 2>/dev/null | awk '$1 == "active_mtu:" {print $2; exit}')"
	mark rxe_up
}

# setup_target TRTYPE PORTID SVCID NQN BLOCKDEV: one subsystem with namespace 1, exported on one port.
# subsystem NQN DEV: an nvmet subsystem that any host may connect to, DEV its namespace 1.
subsystem() {
	local s=$CFG/subsystems/$1
	mkdir "$s" && echo 1 >"$s/attr_allow_any_host" && mkdir "$s/namespaces/1" &&
		printf %s "$2" >"$s/namespaces/1/device_path" && echo 1 >"$s/namespaces/1/enable"
}

setup_target() {
	local s=$CFG/subsystems/$4 p=$CFG/ports/$2
	subsystem "$4" "$5" && mkdir "$p" && echo "$1" >"$p/addr_trtype" && echo ipv4 >"$p/addr_adrfam" &&
		echo $IP >"$p/addr_traddr" && echo "$3" >"$p/addr_trsvcid" &&
		ln -s "$s" "$p/subsystems/$4" || return 1
	conf TRANSPORT "$1"
	conf PORTID "$2"
	conf TRADDR $IP
	conf TRSVCID "$3"
	conf ADRFAM ipv4
	conf SUBSYSNQN "$4"
	conf NSID 1
	conf DEVICE_PATH "$5"
	mark target_up
}

# connect TRTYPE SVCID NQN [nvme connect options]: sets CTRL (nvmeN) and DEV (its namespace).
connect() {
	local t=$1 svc=$2 nqn=$3 before c st
	shift 3
	before=$(ls /dev/nvme*n* 2>/dev/null | tr '\n' ' ')
	nvme connect -t "$t" -a $IP -s "$svc" -n "$nqn" "$@" || return 1
	CTRL='' DEV=''
	deadline 30
	while before_deadline; do
		for c in /sys/class/nvme/nvme*; do
			[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$nqn" ] && CTRL=${c##*/}
		done
		for c in /dev/nvme*n*; do
			[ -b "$c" ] || continue
			case " $before " in *" $c "*) ;; *) DEV=$c ;; esac
		done
		st=
		[ -n "$CTRL" ] && read -r st 2>/dev/null </sys/class/nvme/$CTRL/state
		[ -n "$DEV" ] && [ "$st" = live ] && break
		sleep 0.1
	done
	[ -n "$CTRL" ] && [ -n "$DEV" ] || { fail "no controller/namespace after connect ($CTRL $DEV)"; return 1; }
	conf CONTROLLER "$CTRL"
	conf NAMESPACE_DEV "$DEV"
	echo "connected $CTRL ($DEV): $(cat /sys/class/nvme/$CTRL/transport) $(cat /sys/class/nvme/$CTRL/address)"
	mark connected
}

# wait_state STATE|!STATE SECONDS: waits until the controller's sysfs state is (or is not) STATE.
wait_state() {
	local want=$1 st
	deadline "$2"
	while :; do
		read -r st 2>/dev/null </sys/class/nvme/$CTRL/state || st=gone
		case $want in
		!*) [ "$st" != "${want#!}" ] && { echo "$CTRL is $st"; return 0; } ;;
		*) [ "$st" = "$want" ] && { echo "$CTRL is $st"; return 0; } ;;
		esac
		before_deadline || break
		sleep 0.1
	done
	fail "$CTRL state is '$st', waited ${2}s for '$want'"
	return 1
}

# EXPORTER_ARGS plus what the VM checks read that the defaults leave off (docs/fleet.md "What
# the defaults serve"): the rdma_netlink collector and the host and target inventory. The
# scenario's own --config.file, if any, is kept with these sections added.
vm_exporter_args() {
	local a cfg="" rest=""
	for a in ${EXPORTER_ARGS:-}; do
		case $a in --config.file=*) cfg=${a#--config.file=} ;; *) rest="$rest $a" ;; esac
	done
	{ [ -z "$cfg" ] || cat "$cfg"; printf 'nvme_host:\n  inventory: true\nnvmet:\n  inventory: true\n'; } >/tmp/vm-exporter.yml
	echo "--collector.rdma_netlink --config.file=/tmp/vm-exporter.yml $rest"
}

start_exporter() {
	# shellcheck disable=SC2086,SC2046 # a list of flags
	$EXPORTER --web.listen-address=$LISTEN --log.level=debug $(vm_exporter_args) >"$R/exporter.log" 2>&1 &
	EXPORTER_PID=$!
	deadline ${EXPORTER_START_TIMEOUT:-120}
	while ! timeout 5 wget -q -O /dev/null http://$LISTEN/metrics 2>/dev/null; do
		exporter_alive || { fail "exporter exited at start"; cat "$R/exporter.log"; return 1; }
		before_deadline || { fail "exporter not serving /metrics after ${EXPORTER_START_TIMEOUT:-120}s"; return 1; }
		sleep 0.5
	done
	echo "$EXPORTER_PID" >"$R/exporter.pid"
	mark exporter_serving
}

# A zombie still answers kill -0, so look at /proc state too.
exporter_alive() {
	[ -n "$EXPORTER_PID" ] && [ -d /proc/$EXPORTER_PID ] && ! grep -q '^State:.*Z' /proc/$EXPORTER_PID/status
}

scrape() { # NAME -> metrics-NAME.prom
	timeout 10 wget -q -O "$R/metrics-$1.prom" http://$LISTEN/metrics || { fail "scrape $1"; return 1; }
}

sysfs_counters() { # NAME -> sysfs-NAME.txt: "device port counter value" for every hw_counter
	local f rest
	for f in /sys/class/infiniband/*/ports/*/hw_counters/*; do
		[ -f "$f" ] || continue
		rest=${f#/sys/class/infiniband/}
		echo "${rest%%/*} $(echo "$rest" | cut -d/ -f3) ${f##*/} $(cat "$f")"
	done >"$R/sysfs-$1.txt"
}

# The kernel's counters read right before and right after the scrape bracket the exporter's values.
snapshot() {
	sysfs_counters "$1-pre"
	scrape "$1"
	sysfs_counters "$1-post"
}

# SIGPIPE ignored: nvme-tcp may send from the submitting task, and on a path whose socket the
# target closed (a port taken away) that send signals the task (scenarios/soak.sh).
run_fio() { # NAME DEV RUNTIME
	(trap '' PIPE && exec fio --name="$1" --filename="$2" --rw=randrw --rwmixread=70 --bs=4k --direct=1 \
		--ioengine=libaio --iodepth=16 --runtime="$3" --time_based \
		--output-format=json --output="$R/fio-$1.json") || fail "fio $1"
	mark "fio_$1_done"
}

# setup_rdma_tcp NAME: both transports side by side in this VM (modules, veth + rxe0): the target
# and host of NVMe/RDMA (port 1, 4420, nqn.2024-01.io.nvmeof-exporter:NAME-rdma on /dev/nullb0)
# and of NVMe/TCP (port 2, 4421, NAME-tcp on /dev/nullb1), both connected; dies on a failure.
# Sets RDMA_CONTROLLER, RDMA_DEV and TCP_DEV (CTRL and DEV: TCP's), and records the controllers,
# the namespaces' devices, the NQNs and the port ids in scenario.env.
setup_rdma_tcp() {
	local nqn="nqn.2024-01.io.nvmeof-exporter:$1"
	load_modules
	setup_net || die "network/rxe setup"
	setup_target rdma 1 4420 "$nqn-rdma" /dev/nullb0 || die "nvmet rdma"
	conf RDMA_NQN "$nqn-rdma"
	conf RDMA_PORTID 1
	setup_target tcp 2 4421 "$nqn-tcp" /dev/nullb1 || die "nvmet tcp"
	conf TCP_NQN "$nqn-tcp"
	conf TCP_PORTID 2
	connect rdma 4420 "$nqn-rdma" || die "nvme connect rdma"
	RDMA_CONTROLLER=$CTRL
	RDMA_DEV=$DEV
	conf RDMA_CONTROLLER "$CTRL"
	conf RDMA_DEV "$DEV"
	connect tcp 4421 "$nqn-tcp" || die "nvme connect tcp"
	TCP_DEV=$DEV
	conf TCP_CONTROLLER "$CTRL"
	conf TCP_DEV "$DEV"
}

# fio_ios JOB DEV RW BS OUT: IOS I/Os of BS (RW: randread, randwrite) at queue depth 1 on DEV,
# fio's JSON in fio-OUT.json.
fio_ios() {
	fio --name="$1" --filename="$2" --rw="$3" --bs="$4" --direct=1 --ioengine=libaio \
		--iodepth=1 --number_ios="$IOS" --size=256m --output-format=json --output="$R/fio-$5.json"
}

# each_transport_rw FUNC: runs FUNC T DEV RW BS for each transport T (rdma, tcp: RDMA_DEV,
# TCP_DEV of setup_rdma_tcp) and each of a 4 KiB randread and a 16 KiB randwrite (over the
# 4 KiB in-capsule size: the NVMe/RDMA target pulls the data, an RDMA READ).
each_transport_rw() {
	"$1" rdma "$RDMA_DEV" randread 4k
	"$1" rdma "$RDMA_DEV" randwrite 16k
	"$1" tcp "$TCP_DEV" randread 4k
	"$1" tcp "$TCP_DEV" randwrite 16k
}

# diskstats NAME -> diskstats-NAME.txt: the NVMe disks' lines of /proc/diskstats (path disks and
# multipath heads).
diskstats() { grep -E ' nvme[0-9]+(c[0-9]+)?n[0-9]+ ' /proc/diskstats >"$R/diskstats-$1.txt"; }

# basic_scenario TRTYPE PORTID SVCID NQN BLOCKDEV: target and host in this VM, exporter running,
# scrapes around a short fio run.
basic_scenario() {
	load_modules
	setup_net || die "network/rxe setup"
	setup_target "$1" "$2" "$3" "$4" "$5" || die "nvmet setup"
	start_exporter || die "exporter start"
	connect "$1" "$3" "$4" || die "nvme connect"
	snapshot before-io
	run_fio io "$DEV" "$FIO_RUNTIME"
	snapshot after-io
	finish
}

finish() {
	mark finish
	if [ -n "$EXPORTER_PID" ]; then
		if exporter_alive; then echo 1 >"$R/exporter-alive"; else echo 0 >"$R/exporter-alive"; fail "exporter died"; fi
	fi
	lsmod >"$R/lsmod.txt" 2>/dev/null
	dmesg >"$R/dmesg.txt"
	nvme disconnect-all >/dev/null 2>&1
	if [ -n "$EXPORTER_PID" ] && exporter_alive; then
		# A clean exit on SIGTERM is recorded, not asserted; KILL after 10 s keeps this bounded.
		kill -TERM "$EXPORTER_PID"
		(sleep 10; kill -KILL "$EXPORTER_PID") >/dev/null 2>&1 &
		local killer=$!
		wait "$EXPORTER_PID"
		echo "$?" >"$R/exporter-exit-code"
		kill "$killer" 2>/dev/null
	fi
	if [ $FAILS -gt 0 ]; then
		echo "---- exporter.log (tail)"; tail -30 "$R/exporter.log" 2>/dev/null
		echo "---- dmesg (nvme/rdma, tail)"; grep -i -E 'nvme|rdma|rxe' "$R/dmesg.txt" | tail -40
	fi
	echo "GUEST FAILS=$FAILS"
	sync
	exit $FAILS
}

# Stops the exporter started by start_exporter (TERM, then KILL after 10 s).
stop_exporter() {
	exporter_alive || { fail "exporter died before stop"; return 1; }
	kill -TERM "$EXPORTER_PID"
	(sleep 10; kill -KILL "$EXPORTER_PID") >/dev/null 2>&1 &
	local killer=$!
	wait "$EXPORTER_PID"
	kill "$killer" 2>/dev/null
}

# ---- rdma netlink (scenario netlink) ----
# `rdma` JSON around a scrape, like snapshot() does for sysfs: the kernel's statistics and resource
# counts read right before and right after bracket the exporter's values, also during I/O.
rdma_json() { # NAME-SUFFIX
	rdma -j statistic show >"$R/rdma-stat-$1.json" 2>&1 || fail "rdma statistic show ($1)"
	rdma -j resource show >"$R/rdma-res-$1.json" 2>&1 || fail "rdma resource show ($1)"
}
netlink_snapshot() { # NAME -> rdma-{stat,res}-NAME-{pre,post}.json, rdma-{qp,cm_id}-NAME.json, metrics-NAME.prom
	rdma_json "$1-pre"
	scrape "$1"
	rdma_json "$1-post"
	rdma -j resource show qp >"$R/rdma-qp-$1.json" 2>&1
	rdma -j resource show cm_id >"$R/rdma-cm_id-$1.json" 2>&1
}
