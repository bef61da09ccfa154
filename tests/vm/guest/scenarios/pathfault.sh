# Scenario (d): a path fault during I/O. The target's port loses the subsystem (the configfs
# port->subsystem link is removed), the host controller leaves live and keeps reconnecting; the
# link is restored and the controller must come back live. The exporter is scraped back to back
# with 0.5 s pauses throughout (series.txt) and must answer every scrape and stay alive.
# TRANSPORT=tcp (from run.sh's environment, via the kernel command line) runs it over NVMe/TCP.
. /opt/vm/lib.sh
conf SCENARIO pathfault
NQN=nqn.2024-01.io.nvmeof-exporter:vm-pathfault
if [ "${TRANSPORT:-rdma}" = tcp ]; then
	set -- tcp 2 4421 $NQN /dev/nullb1
else
	set -- rdma 1 4420 $NQN /dev/nullb0
fi
load_modules
setup_net || die "network/rxe setup"
setup_target "$@" || die "nvmet setup"
LINK=$CFG/ports/$2/subsystems/$NQN
start_exporter || die "exporter start"
# Reconnect every second; give up only after the longest the fault below can last (~40 s) and more.
connect "$1" "$3" "$4" --reconnect-delay=1 --ctrl-loss-tmo=120 || die "nvme connect"

# Timed scrapes: a header line per scrape, then that scrape's controller state series.
scraper() {
	while [ ! -e /tmp/stop-scraper ]; do
		t=$(now)
		if timeout 10 wget -q -O /tmp/scrape.prom http://$LISTEN/metrics; then rc=0; else rc=$?; fi
		{
			# sysfs last: 6.x prints "deleting (no IO)" with spaces
			echo "# scrape $t rc=$rc sysfs=$(cat /sys/class/nvme/$CTRL/state 2>/dev/null)"
			[ $rc = 0 ] && grep -E '^nvmeof_(controller_state|exporter_collector_success)' /tmp/scrape.prom
		} >>"$R/series.txt"
		sleep 0.5
	done
}
scraper &
SCRAPER=$!
FAULT_RUNTIME=${FAULT_RUNTIME:-15}
run_fio io "$DEV" "$FAULT_RUNTIME" &
FIO=$!
# seen_scrapes REGEX N SECONDS: waits until N timed scrapes begun after this call saw the kernel's
# controller state match REGEX. Scrapes take seconds under TCG on a busy host, so the fault is held
# until the exporter has been scraped in it rather than for a fixed time.
seen_scrapes() {
	local from
	from=$(wc -l <"$R/series.txt")
	deadline "$3"
	while [ "$(tail -n +$((from + 1)) "$R/series.txt" | grep -cE "^# scrape .* sysfs=($1)\$")" -lt "$2" ]; do
		before_deadline || { fail "fewer than $2 scrapes saw state $1 within $3 s"; return 1; }
		sleep 0.2
	done
}
sleep 3
mark fault
rm "$LINK" || fail "remove $LINK"
wait_state '!live' 20 && mark not_live
seen_scrapes 'resetting|connecting' 2 40 # two whole scrapes while the path is down
mark restore
ln -s "$CFG/subsystems/$NQN" "$LINK" || fail "restore $LINK"
wait_state live 60 && mark live_again
seen_scrapes live 2 60
wait $FIO
sleep 1
touch /tmp/stop-scraper
wait $SCRAPER
grep -c '^# scrape' "$R/series.txt" | sed 's/^/timed scrapes: /'
snapshot final
finish
