# Scenario explain: `nvmeof_exporter explain` names the component behind the tail while it
# happens. One NVMe/TCP subsystem (port 2, 4421) with two namespaces: ns 1 on /dev/nullb0 (fast),
# ns 2 on a device-mapper `delay` target over /dev/nullb1 (a delay of 0 until phase 2). The
# exporter times every command (bpf.sample_every 1: the counts are exact) and keeps its flight
# recorder for 60 s / 64 MiB (a phase and its fetches must fit; the defaults are 30 s / 16 MiB).
# Three phases, each a fio 4 KiB randread for PHASE_SECONDS of two jobs at queue depth QD (1),
# one per CPU, so one per NVMe/TCP I/O queue and TCP connection: a delayed segment has none
# behind it on its connection (TCP would recover it by fast retransmit within milliseconds),
# and a faulted command stalls only its job:
#   1 network  ns 1; netem on the device the target's address is routed through (lo: the
#              address is local to this VM) delays FAULT_PCT% of the target's outgoing packets
#              (TCP source port 4421, through a prio band and a u32 filter) by FAULT_MS ms
#              ("netem delay FAULT_MS reorder (100 - FAULT_PCT)%": the others go at once);
#   2 drive    ns 2; dm-delay delays the reads of FAULT_PCT% of its LBA range (one segment in
#              the middle, the rest linear) by FAULT_MS ms: that share of the random reads;
#   3 none     ns 1, nothing injected.
# A fault of a few percent of the commands, so the p99 tail is the fault's. FAULT_MS stands above
# the tail TCG alone makes: on a loaded 2-core host the fault-free commands' p99 was 20-40 ms,
# but about 1 in 1,000 stalled for 100-500 ms (mostly as network: the vCPU running io_work
# descheduled), and the tail is 1 in 100: a 50 ms fault shared its tail with those stalls.
# Each phase: scrape (metrics-phaseN-pre), 3 s idle, SINCE = unix seconds, fio
# (fio-phaseN.json), 1 s, the raw flight records since SINCE (phaseN_host.jsonl,
# phaseN_target.jsonl), `explain --format json` and text over the window from SINCE
# (phaseN.json, phaseN.txt), scrape (metrics-phaseN-post). check_explain.py checks it.
# After phase 2's fio, before its record fetches (the recorder holds the faulted commands), the
# exemplars (exemplar_capture below).
# TRANSPORT=rdma (scenario explain_rdma, in the suite): the same over NVMe/RDMA (port 1,
# 4420). One rxe device for both ends would hand every packet straight to its own receive path
# (rxe_loopback), and two network namespaces cannot help (nvme-rdma and nvmet-rdma make their
# rdma_cm IDs in init_net), so the ends are two rxe devices on the two ends of the veth pair:
# the host's rxe0 on veth0 (10.10.10.1), the target's rxe1 on veth1 (TARGET_IP), with policy
# routing (rdma_two_ends) that sends each end's packets for the other through the pair instead
# of lo. Phase 1's netem is then on veth1, the target's side of the link, on RoCEv2 (UDP 4791).
. /opt/vm/lib.sh
# Debian's busybox-static runs its own applets first, and its tc knows no netem.
tc() { /usr/sbin/tc "$@"; }
conf SCENARIO explain
conf KERNEL "$(uname -r)"
conf CPU "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
NQN=nqn.2024-01.io.nvmeof-exporter:vm-explain
PHASE_SECONDS=${PHASE_SECONDS:-20}
QD=${QD:-1}
FAULT_MS=${FAULT_MS:-250}
FAULT_PCT=${FAULT_PCT:-2}
for v in PHASE_SECONDS QD FAULT_MS FAULT_PCT; do conf $v "$(eval echo \$$v)"; done

load_modules
setup_net || die "network/rxe setup"

# ns 2's backing device: dm-delay over nullb1.
modprobe dm_delay || die "modprobe dm_delay"
SECTORS=$(cat /sys/block/nullb1/size)
dmsetup --noudevsync create slow --table "0 $SECTORS delay /dev/nullb1 0 0" || die "dmsetup create"
SLOW_DEV=
for d in /sys/block/dm-*; do [ "$(cat "$d/dm/name" 2>/dev/null)" = slow ] && SLOW_DEV=/dev/${d##*/}; done
[ -b "$SLOW_DEV" ] || die "no block device for dm 'slow'"
conf SLOW_DEV "$SLOW_DEV"
# The slow segment: FAULT_PCT% of the sectors, 4 KiB aligned, in the middle.
SLOW_LEN=$((SECTORS * FAULT_PCT / 100 / 8 * 8))
SLOW_AT=$((SECTORS / 2 / 8 * 8))
conf SLOW_SECTORS "$SLOW_AT $SLOW_LEN of $SECTORS"
drive_fault() { # on|off: reload the table (suspend, load, resume)
	dmsetup --noudevsync suspend slow || fail "dmsetup suspend"
	if [ "$1" = on ]; then
		printf '0 %d linear /dev/nullb1 0\n%d %d delay /dev/nullb1 %d %d\n%d %d linear /dev/nullb1 %d\n' \
			$SLOW_AT $SLOW_AT $SLOW_LEN $SLOW_AT "$FAULT_MS" $((SLOW_AT + SLOW_LEN)) \
			$((SECTORS - SLOW_AT - SLOW_LEN)) $((SLOW_AT + SLOW_LEN))
	else
		echo "0 $SECTORS delay /dev/nullb1 0 0"
	fi | dmsetup --noudevsync load slow || fail "dmsetup load ($1)"
	dmsetup --noudevsync resume slow || fail "dmsetup resume"
	dmsetup table slow
}

TRANSPORT=${TRANSPORT:-tcp}
HOST_IP=$IP TARGET_IP=10.10.10.2
# rdma_two_ends: the target's end on veth1 with its own address and rxe1; the local table's rule
# moved after rules that route A -> B out of veth0 and B -> A out of veth1 (never for a packet
# that arrives), each end's neighbour set, and a local source accepted on arrival.
rdma_two_ends() {
	local t
	ip addr add $TARGET_IP/32 dev veth1 && rxe_add rxe1 veth1 || return 1
	for t in all veth0 veth1; do
		echo 1 >/proc/sys/net/ipv4/conf/$t/accept_local && echo 0 >/proc/sys/net/ipv4/conf/$t/rp_filter || return 1
	done
	# iif lo: packets sent here (rxe, rdma_cm's address resolution); oif: lookups bound to the
	# end's netdev without being output (rdma_cm's check of a connect request's addresses,
	# validate_net_dev, which else finds no route from B to A through veth1 and rejects it).
	ip rule add pref 10 iif lo from "$HOST_IP" to $TARGET_IP lookup 100 &&
		ip rule add pref 11 iif lo from $TARGET_IP to "$HOST_IP" lookup 101 &&
		ip rule add pref 12 oif veth0 from "$HOST_IP" to $TARGET_IP lookup 100 &&
		ip rule add pref 13 oif veth1 from $TARGET_IP to "$HOST_IP" lookup 101 &&
		ip route add $TARGET_IP/32 dev veth0 src "$HOST_IP" table 100 &&
		ip route add "$HOST_IP"/32 dev veth1 src $TARGET_IP table 101 &&
		ip rule add pref 1000 lookup local && ip rule del pref 0 lookup local &&
		ip neigh replace $TARGET_IP lladdr "$(cat /sys/class/net/veth1/address)" dev veth0 nud permanent &&
		ip neigh replace "$HOST_IP" lladdr "$(cat /sys/class/net/veth0/address)" dev veth1 nud permanent || return 1
	{ ip rule; ip route get $TARGET_IP from "$HOST_IP"; ip route get "$HOST_IP" from $TARGET_IP; } >"$R/rdma-two-ends.txt" 2>&1
	conf TARGET_RXE_DEV rxe1
	conf HOST_TRADDR "$HOST_IP"
}
CONNECT_OPTS=
if [ "$TRANSPORT" = rdma ]; then
	PORT_ID=1 SVC=4420
	rdma_two_ends || die "rxe1 on veth1 and routes between the ends"
	IP=$TARGET_IP # setup_target's and connect's address
	CONNECT_OPTS="--host-traddr=$HOST_IP"
else
	PORT_ID=2 SVC=4421
fi
setup_target "$TRANSPORT" $PORT_ID $SVC $NQN /dev/nullb0 || die "nvmet $TRANSPORT"
s=$CFG/subsystems/$NQN/namespaces/2
mkdir "$s" && printf %s "$SLOW_DEV" >"$s/device_path" && echo 1 >"$s/enable" || die "nvmet namespace 2"

printf 'bpf:\n  sample_every: 1\n  flight_recorder_max_age: 60\n  flight_recorder_max_bytes: 67108864\n' >/tmp/explain-exporter.yml
EXPORTER_START_TIMEOUT=180
# On every address, so that `explain --targets auto` reaches this node's target through the
# address the host's controller connected to (10.10.10.1, port 10420 as the host's URL).
LISTEN=0.0.0.0:10420
EXPORTER_ARGS="--config.file=/tmp/explain-exporter.yml" start_exporter || die "exporter start"

# shellcheck disable=SC2086 # CONNECT_OPTS: none, or one word
connect "$TRANSPORT" $SVC $NQN $CONNECT_OPTS || die "nvme connect"
DEV1='' DEV2=''
deadline 30
while [ -z "$DEV1" ] || [ -z "$DEV2" ]; do
	for d in /sys/block/nvme*n*; do
		[ -e "$d/nsid" ] && [ -b "/dev/${d##*/}" ] || continue
		case $(cat "$d/nsid") in 1) DEV1=/dev/${d##*/} ;; 2) DEV2=/dev/${d##*/} ;; esac
	done
	[ -n "$DEV1" ] && [ -n "$DEV2" ] && break
	before_deadline || die "namespaces 1 and 2 not both present ($DEV1 $DEV2)"
	sleep 0.2
done
conf FAST_DEV "$DEV1"
conf SLOW_NS_DEV "$DEV2"
echo "fast $DEV1 (nullb0), slow $DEV2 ($SLOW_DEV)"

# The target's packets: NVMe/TCP's where the kernel routes the target's address (in this VM a
# local address, so lo, not veth0), from TCP port 4421; NVMe/RDMA's out of veth1, RoCEv2's UDP
# port 4791 (rdma_two_ends).
if [ "$TRANSPORT" = rdma ]; then
	NETDEV=veth1 MATCH="match ip protocol 17 0xff match ip dport 4791 0xffff"
	ip route get "$HOST_IP" from $TARGET_IP >"$R/route.txt"
else
	NETDEV=$(ip route get $IP | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -n 1)
	MATCH="match ip sport 4421 0xffff"
	ip route get $IP >"$R/route.txt"
fi
conf NETDEV "$NETDEV"
conf NET_FAULT_MATCH "$MATCH"
net_fault_on() {
	# shellcheck disable=SC2086 # MATCH: u32's words
	tc qdisc add dev "$NETDEV" root handle 1: prio bands 4 &&
		tc qdisc add dev "$NETDEV" parent 1:4 handle 40: netem delay "${FAULT_MS}ms" reorder "$((100 - FAULT_PCT))%" &&
		tc filter add dev "$NETDEV" parent 1: protocol ip prio 1 u32 $MATCH flowid 1:4 ||
		fail "netem on $NETDEV"
	tc qdisc show dev "$NETDEV" >"$R/tc-phase1-on.txt" 2>&1
	cat "$R/tc-phase1-on.txt"
}
net_fault_off() {
	tc -s qdisc show dev "$NETDEV" >"$R/tc-phase1.txt" 2>&1
	tc filter show dev "$NETDEV" >>"$R/tc-phase1.txt" 2>&1
	tc qdisc del dev "$NETDEV" root || fail "tc qdisc del"
}

URL=http://$LISTEN
# exemplar_capture: the latency histograms' exemplars (docs/metrics.md "Exemplars and created
# timestamps"), right after a fault phase's fio: an OpenMetrics scrape (metrics-exemplars.om,
# response headers in metrics-exemplars-om.headers), a text 0.0.4 scrape right after it
# (metrics-exemplars.prom: none there), a protobuf scrape (metrics-exemplars.pb, headers in
# metrics-exemplars-pb.headers), and for each command an exemplar of either names,
# /api/v1/commands?role=ROLE&ref=REF (exemplar-REF.jsonl). (Busybox wget: the guest has no curl.)
OM_ACCEPT='application/openmetrics-text;version=1.0.0'
PB_ACCEPT='application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited'
exemplar_capture() {
	local ref role
	mark exemplars
	timeout 30 wget -S -q -O "$R/metrics-exemplars.om" --header "Accept: $OM_ACCEPT" "$URL/metrics" \
		2>"$R/metrics-exemplars-om.headers" || fail "OpenMetrics scrape"
	timeout 30 wget -q -O "$R/metrics-exemplars.prom" "$URL/metrics" || fail "text scrape (exemplars)"
	timeout 30 wget -S -q -O "$R/metrics-exemplars.pb" --header "Accept: $PB_ACCEPT" "$URL/metrics" \
		2>"$R/metrics-exemplars-pb.headers" || fail "protobuf scrape"
	# The refs: h-<ns> or t-<ns>, the label's value (in the protobuf, its bytes between a length
	# and the next field's key; busybox grep has no -a).
	for ref in $({ grep -o 'command="[ht]-[0-9]*"' "$R/metrics-exemplars.om" | sed 's/^command="//; s/"$//'
		tr -c 'ht0-9-' '\n' <"$R/metrics-exemplars.pb" | grep -x '[ht]-[0-9]\{9,\}'; } | sort -u); do
		case $ref in h-*) role=host ;; *) role=target ;; esac
		timeout 30 wget -q -O "$R/exemplar-$ref.jsonl" "$URL/api/v1/commands?role=$role&ref=$ref" ||
			fail "GET commands ref=$ref"
	done
	mark exemplars_done
}
# phase N DEV [SECONDS]: one phase, the fault already set by the caller.
phase() {
	local n=$1 dev=$2 secs=${3:-$PHASE_SECONDS} qd=$QD since now rc
	scrape "phase$n-pre"
	sleep 3
	since=$(date +%s) # whole seconds: up to 1 s earlier, in the idle pause
	conf "PHASE${n}_SINCE" "$since"
	conf "PHASE${n}_DEV" "$dev"
	conf "PHASE${n}_QD" "$qd"
	conf "PHASE${n}_SECONDS" "$secs"
	mark "phase${n}_fio"
	fio --name="phase$n" --filename="$dev" --rw=randread --bs=4k --direct=1 --ioengine=libaio \
		--iodepth="$qd" --numjobs=2 --cpus_allowed=0,1 --cpus_allowed_policy=split --group_reporting \
		--runtime="$secs" --time_based --size=1g \
		--output-format=json --output="$R/fio-phase$n.json" || fail "fio phase $n"
	mark "phase${n}_fio_done"
	sleep 1 # the exporter's reader drains its ring every 100 ms
	[ "$n" != 2 ] || exemplar_capture
	timeout 60 wget -q -O "$R/phase${n}_host.jsonl" "$URL/api/v1/commands?role=host&since=$since&limit=100000" ||
		fail "GET commands host phase $n"
	timeout 60 wget -q -O "$R/phase${n}_target.jsonl" "$URL/api/v1/commands?role=target&since=$since&limit=100000" ||
		fail "GET commands target phase $n"
	# The window reaches back 2 s before SINCE (idle) wherever explain's clock stands.
	now=$(date +%s)
	timeout 120 $EXPORTER explain --host=$URL --target=$URL --since=$((now - since + 2))s --format=json \
		>"$R/phase$n.json" 2>"$R/phase$n-json.err"
	rc=$?
	echo $rc >"$R/phase$n-json-exit-code"
	[ $rc = 0 ] || fail "explain --format json phase $n: exit $rc"
	now=$(date +%s)
	timeout 120 $EXPORTER explain --host=$URL --target=$URL --since=$((now - since + 2))s \
		>"$R/phase$n.txt" 2>&1
	echo $? >"$R/phase$n-text-exit-code"
	if [ "$n" = 3 ]; then # the target found from the host's controllers
		now=$(date +%s)
		timeout 120 $EXPORTER explain --host=$URL --targets=auto --since=$((now - since + 2))s \
			--format=json >"$R/phase3-auto.json" 2>"$R/phase3-auto.err"
		echo $? >"$R/phase3-auto-exit-code"
	fi
	mark "phase${n}_explained"
	sed -n '/^tail:/,$p' "$R/phase$n.txt"
	scrape "phase$n-post"
}

mark phase1
net_fault_on
# Over NVMe/RDMA the fault stalls more commands than it delays packets (about 5% for 2%: a
# response's last packet or an ACK, which nothing follows for RC to recover by a NAK), so a
# phase's commands are fewer; twice the time keeps its p99 tail at 20 commands or more.
if [ "$TRANSPORT" = rdma ]; then phase 1 "$DEV1" $((PHASE_SECONDS * 2)); else phase 1 "$DEV1"; fi
net_fault_off

mark phase2
drive_fault on >"$R/dm-table-phase2.txt" 2>&1
cat "$R/dm-table-phase2.txt"
phase 2 "$DEV2"
drive_fault off

mark phase3
phase 3 "$DEV1"
finish
