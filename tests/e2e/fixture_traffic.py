#!/usr/bin/env python3
"""Makes a COPY of the fixture trees look like a busy, congested RoCE port: every second it
advances a few counters of mlx5_0 (sysfs port and hw_counters) and of its netdev ens1f0np0
(ethtool statistics), the way the driver would under load with a pause storm, ECN marking and
packet loss. The rates are high enough that a 5-minute rate() over the few seconds of
scrapes an e2e test has (Prometheus extrapolates over the sampled span only) still crosses the
alert thresholds; the paused fraction cannot (it is at most 1 s per second). The exporter reads the copy for real on every scrape, so rates, dashboards and
alert conditions have moving data. python3 stdlib only.

Usage: fixture_traffic.py FIXTURE_COPY_ROOT   (runs until killed)
"""
import os
import re
import sys
import time

# (path below the root, increment per second)
SYSFS = "sysfs/class/infiniband/mlx5_0/ports/1/"
FILES = [
    (SYSFS + "counters/port_xmit_packets", 60000),
    (SYSFS + "counters/port_rcv_packets", 60000),
    (SYSFS + "counters/port_xmit_data", 60000 * 4096 // 4),  # 4-byte words
    (SYSFS + "counters/port_rcv_data", 60000 * 4096 // 4),
    (SYSFS + "counters/symbol_error", 20),  # a marginal cable: the link errors panel
    (SYSFS + "hw_counters/np_ecn_marked_roce_packets", 6000),  # 10% of received: congested
    (SYSFS + "hw_counters/np_cnp_sent", 3000),
    (SYSFS + "hw_counters/rp_cnp_handled", 500),
    (SYSFS + "hw_counters/packet_seq_err", 600),  # 1% loss: go-back-N retransmits
    (SYSFS + "hw_counters/out_of_sequence", 50),
    (SYSFS + "hw_counters/local_ack_timeout_err", 5),
    (SYSFS + "hw_counters/out_of_buffer", 50),
]
# ethtool -S lines of ens1f0np0 (mlx5: pause durations in microseconds).
ETHTOOL = "ethtool/ens1f0np0/stats"
STATS = {
    "rx_prio3_pause": 500,
    "rx_prio3_pause_duration": 400000,  # paused 40% of the time by the peer
    "rx_prio3_pause_transition": 100,
    "tx_pause_storm_warning_events": 1,
    "tx_pause_storm_error_events": 0.2,  # one storm error every 5 seconds
}


TMP = None


def write_atomic(path, text):
    # The temporary file lives outside the tree: collectors list these directories.
    tmp = os.path.join(TMP, os.path.basename(path))
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def main():
    global TMP
    root = sys.argv[1]
    TMP = os.path.join(root, ".traffic-tmp")
    os.makedirs(TMP, exist_ok=True)
    start = time.time()
    base = {p: int(open(os.path.join(root, p)).read()) for p, _ in FILES}
    stats_path = os.path.join(root, ETHTOOL)
    stats_text = open(stats_path).read()
    stats_base = {k: int(re.search(rf"^\s*{k}: (\d+)$", stats_text, re.M).group(1)) for k in STATS}
    while True:
        elapsed = time.time() - start
        for p, per_s in FILES:
            write_atomic(os.path.join(root, p), f"{base[p] + int(per_s * elapsed)}\n")
        text = stats_text
        for k, per_s in STATS.items():
            text = re.sub(rf"^(\s*{k}): \d+$", rf"\g<1>: {stats_base[k] + int(per_s * elapsed)}",
                          text, flags=re.M)
        write_atomic(stats_path, text)
        time.sleep(0.5)


if __name__ == "__main__":
    main()
