#!/usr/bin/env python3
"""NVMe-oF stage-latency series in OpenMetrics, for `promtool tsdb create-blocks-from openmetrics`.

Two sources, one output file:
- REAL (--vm-replay FILE): a /metrics scrape the VM suite's `stages` scenario took from the real
  exporter on Debian 6.12 (tests/fixtures/vm-stages/), replayed as counters that grow linearly
  to the scraped values over the last 10 minutes, under --vm-instance, with every 4th bucket
  bound (what the exporter exports with bpf.buckets set to those bounds). Every dashboard and
  rule query must work on these.
- SYNTHETIC (clearly a stand-in, kept for what one VM run cannot show): a host exporter and a
  target exporter over eight days in which the target's storage stage of writes to the ssd-pool
  subsystem got 2.5x slower 20 minutes ago (a degraded drive), which the host sees in its
  "network and target" stage: the latency-regression alerts must find it, and the network
  estimate must come out at the known NETWORK_US. Writes to null-test are 3x slower in their
  storage stage now and at the same time a week ago, not a day ago (WEEKLY: a weekly batch
  job): the regression alerts must stay silent there, because their baseline is the larger of
  the day-ago and the week-ago p99.

Synthetic shape (docs/metrics.md "NVMe-oF stages"): command series per namespace device and controller
(host) and per subsystem NQN and port (target); stage series at --stage-detail (the exporter's
bpf.stage_detail, default controller: host per controller, target per NQN; namespace: as the
command series; node: neither), NVMe/RDMA and NVMe/TCP, reads and writes, log-normal stage
latencies with realistic means; samples a week ago and a day ago (-12 to +6 minutes, a minute
apart: the raw history from which test_dashboards_prometheus.sh backfills the recorded p99s that
the `offset 1w` / `offset 1d` baselines read) and in the last 10 minutes (dense at the end, for
1-minute rate windows).

LIVE (--serve): the same real VM scrape served over HTTP as a live exporter would, for a
Prometheus to scrape (native histograms cannot be backfilled into Prometheus 2.42): counters and
histograms grow by the VM run's counts every second (from an hour's worth), gauges stay; text
(every 4th bucket bound, as the backfill) to a text scrape, and delimited protobuf with native
schema-3 histograms to a scraper that asks for protobuf (Prometheus with
--enable-feature=native-histograms). Prints the port, then serves until killed.

python3 stdlib only. Usage:
  synthetic_nvmeof.py --end EPOCH --out FILE --host-instance H --target-instance T
      [--job nvmeof] [--topology METRICS_TEXT] [--with-bpf] [--stage-detail D]
      [--vm-replay SCRAPE(.gz) --vm-instance I] [--kubernetes]
  synthetic_nvmeof.py --serve --vm-replay SCRAPE(.gz)
--topology: an exporter /metrics text whose nvmeof_namespace_info and nvmeof_controller_info
series are copied to the host instance (the host's controllers and their NQNs: what the
network-estimate rule joins on).
Always, SYNTHETIC too: the connection lifecycle counters (nvmeof_rdma_cm_events_total,
nvmeof_controller_state_transitions_total, ..., nvmeof_target_controllers) of the host and target
instances, which only the eBPF lifecycle hooks on a kernel with NVMe-oF modules produce: a
reconnecting controller, a refused Connect and a keep-alive expiry, for the "Connections" panels
and the connection alerts.
Always, SYNTHETIC too: the host's multipath events (emit_multipath): failovers from nvme0 once a
minute, nvme0n1's I/O requeued without a usable path, and a 6 s stall of its I/O every 2
minutes, for the "Controllers and paths" panels and the failover alerts.
--with-bpf: also emit eBPF self-metrics and block-layer histograms for the host instance (only
used when the exporter under test was built without the bpf collector).
--kubernetes: SYNTHETIC too, the host as a Kubernetes node (emit_kubernetes): its paths
(nvmeof_path_info), two pods' volumes on its namespaces (nvmeof_kubernetes_volume_info, one
through the head, one through a path) and kube-state-metrics' kube_pod_info of those pods, for
pod:nvmeof_command_latency_seconds:p99_5m (nvmeof-kubernetes.rules.yml) and its panel.
"""
import argparse
import gzip
import math
import os
import re
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from testlib import (PROTOBUF_TYPE, TEXT_TYPE, encode_varint, field,  # noqa: E402
                     serve_metrics, wants_protobuf, zigzag)

DAY = 86400.0
WEEK = 7 * DAY
# A subset of the exporter's bucket bounds (bpf/hist.h: log-linear, 8 per octave): every 4th
# bound, as a user would get with a coarser bpf.buckets setting.
START = [0, 6, 13, 20, 28, 37, 47, 58, 64]


def fine_upper_ns(i):
    if i == 0:
        return 128
    e, g = 7 + (i - 1) // 8, (i - 1) % 8
    return (64 + START[g + 1]) << (e - 6)


BOUNDS = [fine_upper_ns(i) * 1e-9 for i in range(0, 1 + 27 * 8) if i % 4 == 0]
BOUNDS = [b for b in BOUNDS if 5e-7 <= b <= 0.07]

HOST_STAGES = ["block_submit", "driver_submit", "network_and_target", "host_receive",
               "block_complete"]

# Labels the stage series do not carry, per bpf.stage_detail (the command series carry all).
STAGE_DROP = {"namespace": (), "controller": ("nvme_namespace", "nvmet_port"),
              "node": ("nvme_namespace", "nvmet_port", "controller", "nqn")}

# (device, controller, transport, subsystem NQN, target port, {op: iops})
HOST_DEVICES = [
    ("nvme0n1", "nvme0", "rdma", "nqn.2024-06.io.example:ssd-pool", "1",
     {"read": 20000, "write": 8000}),
    ("nvme1n1", "nvme1", "tcp", "nqn.2024-06.io.example:null-test", "2",
     {"read": 6000, "write": 3000}),
]

# Mean stage latencies in microseconds, per transport and op.
TARGET_MEANS = {
    ("rdma", "read"): {"receive": 3, "submit": 2, "storage": 60, "response": 8},
    ("rdma", "write"): {"receive": 3, "data_transfer": 10, "submit": 2, "storage": 70,
                        "response": 4},
    ("tcp", "read"): {"receive": 6, "submit": 3, "storage": 60, "response": 15},
    ("tcp", "write"): {"receive": 6, "data_transfer": 20, "submit": 3, "storage": 70,
                       "response": 6},
}
NETWORK_US = {"rdma": 7.0, "tcp": 45.0}  # the wire and NICs, both ways
HOST_MEANS = {"block_submit": 2, "driver_submit": 3, "host_receive": 4, "block_complete": 2}
REGRESSED = ("nqn.2024-06.io.example:ssd-pool", "write", "storage", 2.5)
# The weekly batch job: this stage is this much slower from 20 minutes ago on, and was so a week
# ago at the same time (week_window), but not a day ago.
WEEKLY = ("nqn.2024-06.io.example:null-test", "write", "storage", 3.0)


def week_window(end):
    return (end - WEEK - 20 * 60, end - WEEK + 40 * 60)


def first_sample(end):
    """Where every synthetic counter starts (0 before): before the week-ago samples."""
    return end - WEEK - 3600


def lognormal_cdf(x, mean, sigma):
    if x <= 0:
        return 0.0
    mu = math.log(mean) - sigma * sigma / 2
    return 0.5 * (1 + math.erf((math.log(x) - mu) / (sigma * math.sqrt(2))))


class Dist:
    """A latency distribution: log-normal with the given mean (seconds)."""

    def __init__(self, mean, sigma=0.35):
        self.mean, self.sigma = mean, sigma
        self.cdf = [lognormal_cdf(b, mean, sigma) for b in BOUNDS]


class Series:
    """One histogram or counter whose distribution changes from `old` to `new` at t_change (and
    is `new` inside the window `week` = (from, to) too, which ends before t_change)."""

    def __init__(self, labels, rate, old, new, t0, t_change, week=None):
        self.labels, self.rate, self.old, self.new = labels, rate, old, new
        self.t0, self.t_change, self.week = t0, t_change, week

    def pieces(self, t):
        """(observations under old, observations under new) from t0 to t."""
        a = max(0.0, min(t, self.t_change) - self.t0) * self.rate
        b = max(0.0, t - self.t_change) * self.rate
        if self.week:
            w = max(0.0, min(t, self.week[1]) - max(self.week[0], self.t0)) * self.rate
            a, b = a - w, b + w
        return a, b

    def count(self, t):
        a, b = self.pieces(t)
        return math.floor(a + b)

    def bucket(self, t, i):
        a, b = self.pieces(t)
        return math.floor(a * self.old.cdf[i] + b * self.new.cdf[i])

    def sum(self, t):
        a, b = self.pieces(t)
        return a * self.old.mean + b * self.new.mean


def fmt_labels(labels):
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def timestamps(end):
    ts = []
    for back in (WEEK, DAY):
        t = end - back - 12 * 60
        while t <= end - back + 6 * 60:
            ts.append(t)
            t += 60
    t = end - 10 * 60
    while t < end - 120:
        ts.append(t)
        t += 30
    t = end - 120
    while t <= end + 1e-6:
        ts.append(t)
        t += 5
    return ts


def target_labels(args, instance):
    """The labels Prometheus attaches to every series of one scrape target."""
    labels = {"instance": instance, "job": args.job}
    if args.operator_labels:
        labels.update(namespace="monitoring", service="nvmeof-exporter", endpoint="metrics",
                      pod="nvmeof-exporter-" + instance.split(":")[0])
    return labels


def build(args):
    t0 = first_sample(args.end)
    t_change = args.end - 20 * 60  # the drive degraded 20 minutes ago
    hosts = target_labels(args, args.host_instance)
    targets = target_labels(args, args.target_instance)
    stage, command, commands = [], [], []
    drop = STAGE_DROP[args.stage_detail]

    def stage_labels(labels):
        return {k: v for k, v in labels.items() if k not in drop}
    for dev, ctrl, transport, nqn, port, ops in HOST_DEVICES:
        for op, iops in ops.items():
            tmeans = TARGET_MEANS[(transport, op)]
            new_tmeans = dict(tmeans)
            for nqn_, op_, stage_, factor in (REGRESSED, WEEKLY):
                if (nqn_, op_) == (nqn, op):
                    new_tmeans[stage_] *= factor
            week = week_window(args.end) if WEEKLY[:2] == (nqn, op) else None
            # Target side.
            tl = dict(targets, role="target", transport=transport, op=op, nqn=nqn,
                      nvmet_port=port)
            for st in tmeans:
                stage.append(Series(stage_labels(dict(tl, stage=st)), iops, Dist(tmeans[st] * 1e-6),
                                    Dist(new_tmeans[st] * 1e-6), t0, t_change, week))
            tsum, new_tsum = sum(tmeans.values()), sum(new_tmeans.values())
            command.append(Series(tl, iops, Dist(tsum * 1e-6, 0.3), Dist(new_tsum * 1e-6, 0.3),
                                  t0, t_change, week))
            commands.append(Series(tl, iops, None, None, t0, t_change))
            # Host side: "network and target" = the network plus the target's residence.
            hl = dict(hosts, role="host", transport=transport, op=op, controller=ctrl,
                      nvme_namespace=dev)
            nt, new_nt = NETWORK_US[transport] + tsum, NETWORK_US[transport] + new_tsum
            hmeans = dict(HOST_MEANS, network_and_target=nt)
            new_hmeans = dict(HOST_MEANS, network_and_target=new_nt)
            for st in HOST_STAGES:
                stage.append(Series(stage_labels(dict(hl, stage=st)), iops, Dist(hmeans[st] * 1e-6),
                                    Dist(new_hmeans[st] * 1e-6), t0, t_change, week))
            command.append(Series(hl, iops, Dist(sum(hmeans.values()) * 1e-6, 0.3),
                                  Dist(sum(new_hmeans.values()) * 1e-6, 0.3), t0, t_change, week))
            commands.append(Series(hl, iops, None, None, t0, t_change))
    # A local PCIe drive on the host: the dashboards show it apart from the fabric.
    for op, iops in (("read", 9000), ("write", 4000)):
        pl = dict(hosts, role="host", transport="pcie", op=op, controller="nvme9",
                  nvme_namespace="nvme9n1")
        command.append(Series(pl, iops, Dist(80e-6, 0.3), Dist(80e-6, 0.3), t0, t_change))
        commands.append(Series(pl, iops, None, None, t0, t_change))
    return stage, command, commands


def histogram_family(out, name, series, ts, bounds=BOUNDS):
    out.append(f"# TYPE {name} histogram")
    les = [repr(b) for b in bounds] + ["+Inf"]
    for s in series:
        for i, le in enumerate(les):
            lab = fmt_labels(dict(s.labels, le=le))
            for t in ts:
                v = s.bucket(t, i) if i < len(bounds) else s.count(t)
                out.append(f"{name}_bucket{lab} {v} {t:.3f}")
        lab = fmt_labels(s.labels)
        for t in ts:
            out.append(f"{name}_count{lab} {s.count(t)} {t:.3f}")
        for t in ts:
            out.append(f"{name}_sum{lab} {s.sum(t):.6f} {t:.3f}")


def counter_family(out, name, series, ts):
    out.append(f"# TYPE {name} counter")
    for s in series:
        lab = fmt_labels(s.labels)
        for t in ts:
            out.append(f"{name}_total{lab} {s.count(t)} {t:.3f}")


def gauge_family(out, name, rows, ts):
    out.append(f"# TYPE {name} gauge")
    for labels, value in rows:
        lab = fmt_labels(labels)
        for t in ts:
            out.append(f"{name}{lab} {value} {t:.3f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--end", type=float)
    ap.add_argument("--out")
    ap.add_argument("--host-instance")
    ap.add_argument("--target-instance")
    ap.add_argument("--job", default="nvmeof")
    ap.add_argument("--topology")
    ap.add_argument("--with-bpf", action="store_true")
    ap.add_argument("--stage-detail", choices=sorted(STAGE_DROP), default="controller",
                    help="labels of the synthetic stage series, as bpf.stage_detail")
    ap.add_argument("--vm-replay")
    ap.add_argument("--vm-instance", default="vm-stages:10420")
    ap.add_argument("--operator-labels", action="store_true",
                    help="add the target labels the Prometheus Operator adds (namespace, pod, "
                         "service, endpoint), as test_dashboards_prometheus.sh's scrape does")
    ap.add_argument("--kubernetes", action="store_true",
                    help="the host as a Kubernetes node: paths, pod volumes, kube_pod_info")
    args = ap.parse_args()
    if args.serve:
        return serve(args.vm_replay)
    for a in ("end", "out", "host_instance", "target_instance"):
        if getattr(args, a) is None:
            ap.error("--" + a.replace("_", "-") + " is required")
    ts = timestamps(args.end)
    stage, command, commands = build(args)
    out = []
    histogram_family(out, "nvmeof_stage_latency_seconds", stage, ts)
    histogram_family(out, "nvmeof_command_latency_seconds", command, ts)
    counter_family(out, "nvmeof_commands", commands, ts)
    inst = [target_labels(args, args.host_instance), target_labels(args, args.target_instance)]
    gauge_family(out, "nvmeof_exporter_build_info",
                 [(dict(i, version="synthetic", revision="vm-scenario-stand-in"), 1)
                  for i in inst], ts)
    gauge_family(out, "nvmeof_exporter_bpf_sample_every", [(i, 1) for i in inst], ts)
    if args.topology:
        rows = {"nvmeof_namespace_info": [], "nvmeof_controller_info": []}
        for line in open(args.topology):
            m = re.match(r"(nvmeof_namespace_info|nvmeof_controller_info)\{(.*)\} (\S+)$",
                         line.strip())
            if m:
                labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
                rows[m.group(1)].append((dict(labels, **inst[0]), m.group(3)))
        for family, r in rows.items():
            gauge_family(out, family, r, ts)
    disks = backing_disks(out, inst[1], args.end, ts)
    emit_lifecycle(out, inst[0], inst[1], args.end, ts)
    emit_multipath(out, inst[0], args.end, ts)
    if args.kubernetes:
        emit_kubernetes(out, inst[0], ts)
    if args.with_bpf:
        emit_bpf(out, inst[0], args, ts, disks)
    else:
        histogram_family(out, "nvmeof_block_stage_latency_seconds", disks[0], ts)
        counter_family(out, "nvmeof_block_requests", disks[1], ts)
    if args.vm_replay:
        replay(out, args, ts)
    out.append("# EOF")
    with open(args.out, "w") as f:
        f.write("\n".join(out) + "\n")


class Ramp:
    """A counter that grows at `rate` per second from `t0` (0 before)."""

    def __init__(self, labels, rate, t0):
        self.labels, self.rate, self.t0 = labels, rate, t0

    def count(self, t):
        return round(max(0.0, t - self.t0) * self.rate, 6)


def emit_lifecycle(out, host, target, end, ts):
    """Connection lifecycle counters (see the module docstring): started 10 minutes ago, a
    controller flapping about once a minute, a host NQN refused twice a minute, an RDMA-CM reject
    and a keep-alive failure/expiry now and then."""
    t0 = end - 10 * 60
    ssd, nul = "nqn.2024-06.io.example:ssd-pool", "nqn.2024-06.io.example:null-test"
    cm = [Ramp(dict(host, event=e, status=st, rdma_device="mlx5_0", rdma_port="1"), r, t0)
          for e, st, r in (("established", "ok", 0.02), ("disconnected", "ok", 0.02),
                           ("rejected", "invalid_service_id", 0.01),
                           ("unreachable", "etimedout", 0.005))]
    counter_family(out, "nvmeof_rdma_cm_events", cm, ts)
    trans = [Ramp(dict(host, controller="nvme0", **{"from": f, "to": to}), 1 / 60, t0)
             for f, to in (("live", "resetting"), ("resetting", "connecting"),
                           ("connecting", "live"))]
    counter_family(out, "nvmeof_controller_state_transitions", trans, ts)
    counter_family(out, "nvmeof_controller_connect_failures", [Ramp(
        dict(host, transport="rdma", traddr="10.0.0.9", trsvcid="4420", error="etimedout"),
        0.01, t0)], ts)
    counter_family(out, "nvmeof_controller_keep_alive_failures",
                   [Ramp(dict(host, controller="nvme0"), 1 / 120, t0)], ts)
    counter_family(out, "nvmeof_target_connects", [
        Ramp(dict(target, nqn=ssd, queue="admin", result="success"), 1 / 60, t0),
        Ramp(dict(target, nqn=ssd, queue="io", result="success"), 2 / 60, t0),
        Ramp(dict(target, nqn=ssd, queue="admin", result="invalid_host"), 2 / 60, t0)], ts)
    counter_family(out, "nvmeof_target_keep_alive_expiries",
                   [Ramp(dict(target, nqn=ssd), 1 / 120, t0)], ts)
    gauge_family(out, "nvmeof_target_controllers", [
        (dict(target, nqn=ssd, hostnqn="nqn.2014-08.org.nvmexpress:uuid:host-a"), 1),
        (dict(target, nqn=nul, hostnqn="nqn.2014-08.org.nvmexpress:uuid:host-a"), 1)], ts)


# The host's pods (--kubernetes): (disk, PV, pod uid, mode, namespace, pod). nvme0n1 is a
# namespace head (filesystem volume); nvme1c1n1 a path of nvme1n1 (raw block volume), as the
# kubernetes collector names them (docs/metrics.md "kubernetes").
K8S_VOLUMES = [
    ("nvme0n1", "pvc-0b3c1d7e-4a51-4f0e-9a43-6f1e2d3c4b5a", "4c0e1a2b-3d4e-4f50-8617-28394a5b6c7d",
     "filesystem", "databases", "postgres-0"),
    ("nvme1c1n1", "pvc-9f8e7d6c-5b4a-4392-8170-a1b2c3d4e5f6", "d1e2f3a4-b5c6-4d7e-8f90-0a1b2c3d4e5f",
     "block", "cache", "redis-0"),
]


# nvmeof_namespace_failover_stall_seconds' buckets (bpf/lifecycle_maps.h: 1 ms .. 2^17 ms).
STALL_BOUNDS = [0.001 * (1 << b) for b in range(18)]


def emit_multipath(out, host, end, ts):
    """The host's multipath events (see the module docstring), from 10 minutes ago."""
    t0 = end - 10 * 60
    counter_family(out, "nvmeof_path_failovers", [Ramp(dict(host, controller="nvme0"), 1 / 60, t0)],
                   ts)
    counter_family(out, "nvmeof_namespace_no_usable_path",
                   [Ramp(dict(host, nvme_namespace="nvme0n1"), 16 / 120, t0)], ts)
    histogram_family(out, "nvmeof_namespace_failover_stall_seconds",
                     [Stalls(dict(host, nvme_namespace="nvme0n1"), 1 / 120, t0, 6.0)], ts,
                     STALL_BOUNDS)


class Stalls(Ramp):
    """Stalls of `seconds` each, `rate` per second from `t0`: a histogram series."""

    def __init__(self, labels, rate, t0, seconds):
        super().__init__(labels, rate, t0)
        self.seconds = seconds

    def count(self, t):
        return math.floor(super().count(t))

    def bucket(self, t, i):
        return self.count(t) if STALL_BOUNDS[i] >= self.seconds else 0

    def sum(self, t):
        return self.seconds * self.count(t)


def emit_kubernetes(out, host, ts):
    """The host as a Kubernetes node: its paths, its pods' volumes, and kube-state-metrics'
    kube_pod_info (its own job and instance; namespace and pod are the pod's)."""
    gauge_family(out, "nvmeof_path_info", [
        (dict(host, controller=ctrl, nvme_namespace=dev, path="%sc%sn1" % (ctrl, ctrl[4:])), 1)
        for dev, ctrl, *_ in HOST_DEVICES], ts)
    gauge_family(out, "nvmeof_kubernetes_volume_info", [
        (dict(host, disk=disk, persistentvolume=pv, uid=uid, volume_mode=mode,
              csi_driver="nvme.csi.example.com"), 1)
        for disk, pv, uid, mode, _, _ in K8S_VOLUMES], ts)
    ksm = {"job": "kube-state-metrics", "instance": "kube-state-metrics:8080"}
    gauge_family(out, "kube_pod_info", [
        (dict(ksm, namespace=ns, pod=pod, uid=uid, node=host["instance"].split(":")[0]), 1)
        for _, _, uid, _, ns, pod in K8S_VOLUMES], ts)


def replay(out, args, ts):
    """The real VM scrape: counters (and histogram parts) ramp from 0 to the scraped value over
    each window (a restart between them), gauges stay."""
    opener = gzip.open if args.vm_replay.endswith(".gz") else open
    families = {}
    for line in opener(args.vm_replay, "rt"):
        m = re.match(r"([a-zA-Z_:][\w:]*)\{(.*)\} (\S+)$", line.strip())
        if not m:
            continue
        name, labels, value = m.group(1), m.group(2), float(m.group(3))
        le = re.search(r'(?:^|,)le="([^"]+)"', labels)
        # Every 4th bound, as the exporter itself exports with bpf.buckets set to those bounds
        # (cumulative counts at a bound do not depend on the other bounds); 4x less to backfill.
        if le and le.group(1) != "+Inf" and not any(abs(float(le.group(1)) - b) < 1e-12 + b * 1e-6
                                                    for b in BOUNDS):
            continue
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        kind = ("histogram" if base != name and base.endswith("_seconds") else
                "counter" if name.endswith("_total") else "gauge")
        family = base if kind == "histogram" else name[:-6] if kind == "counter" else name
        lab = "{%s,%s}" % (labels, fmt_labels(target_labels(args, args.vm_instance))[1:-1])
        families.setdefault((family, kind), []).append((name, lab, value))
    day_start, day_end = args.end - DAY - 12 * 60, args.end - DAY + 3 * 60
    now_start = args.end - 10 * 60

    def frac(t):
        lo, hi = (day_start, day_end) if t < now_start else (now_start, args.end)
        return max(0.0, min(1.0, (t - lo) / (hi - lo)))

    ts = [t for t in ts if t >= now_start]  # panels look at now; regression rules use synthetic
    for (family, kind), rows in families.items():
        out.append(f"# TYPE {family} {kind}")
        for name, lab, value in rows:
            for t in ts:
                v = value if kind == "gauge" else value * frac(t)
                out.append(f"{name}{lab} {v:.9g} {t:.3f}")


# --- live replay (--serve) ------------------------------------------------------------------

def read_scrape(path):
    """{(family, kind): {labels-without-le: {"le": {bound: cumulative}, "sum", "count", "value"}}}"""
    opener = gzip.open if path.endswith(".gz") else open
    fams = {}
    for line in opener(path, "rt"):
        m = re.match(r"([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$", line.strip())
        if not m:
            continue
        name, value = m.group(1), float(m.group(3))
        labels = re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or "")
        le = dict(labels).get("le")
        labels = tuple((k, v) for k, v in labels if k != "le")
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        if base != name and base.endswith("_seconds"):
            h = fams.setdefault((base, "histogram"), {}).setdefault(labels, {"le": {}})
            if name.endswith("_bucket"):
                h["le"][float("inf") if le == "+Inf" else float(le)] = value
            else:
                h[name.rsplit("_", 1)[1]] = value
        else:
            kind = "counter" if name.endswith("_total") else "gauge"
            fams.setdefault((name, kind), {})[labels] = {"value": value}
    return fams


def pb_str(num, s):
    return field(num, 2, s.encode())


def pb_double(num, v):
    return field(num, 1, struct.pack("<d", v))


def pb_uint(num, v):
    return field(num, 0, encode_varint(v))


def native_counts(h):
    """{schema-3 index: count} from the scrape's fine classic buckets: each fine bucket goes
    to the native bucket of its upper bound."""
    counts, prev = {}, 0
    for le in sorted(b for b in h["le"] if b != float("inf")):
        n = h["le"][le] - prev
        prev = h["le"][le]
        idx = round(8 * math.log2(le))
        counts[idx] = counts.get(idx, 0) + n
    over = h["le"].get(float("inf"), prev) - prev  # above the last bound: one bucket up
    if over:
        idx = max(counts) + 1 if counts else 0
        counts[idx] = counts.get(idx, 0) + over
    return {i: c for i, c in counts.items() if c}


def native_histogram(h, f):
    """A client_model Histogram with native schema-3 buckets (h["native"]) scaled by f."""
    # Each bucket floored on its own, so that no bucket ever decreases (Prometheus would take
    # that for a counter reset); the total is then a few counts short of the classic _count,
    # negligible at an hour's worth of counts (f >= 3600).
    scaled = {i: math.floor(c * f) for i, c in h["native"].items()}
    msg = pb_uint(1, sum(scaled.values())) + pb_double(2, h.get("sum", 0.0) * f)
    msg += field(5, 0, encode_varint(zigzag(3)))  # schema 3
    msg += pb_double(6, 2.0 ** -23) + pb_uint(7, 0)  # zero bucket, empty
    spans, deltas, last_idx, last_count = [], [], None, 0
    for i in sorted(scaled):
        if last_idx is None or i != last_idx + 1:
            gap = i - (last_idx + 1) if last_idx is not None else i
            spans.append([gap, 0])
        spans[-1][1] += 1
        deltas.append(scaled[i] - last_count)
        last_idx, last_count = i, scaled[i]
    for off, length in spans:
        msg += field(12, 2, field(1, 0, encode_varint(zigzag(off))) + pb_uint(2, length))
    if deltas:
        msg += field(13, 2, b"".join(encode_varint(zigzag(d)) for d in deltas))
    return msg


def render(fams, f, native):
    """The scrape at growth factor f: delimited protobuf (native) or text (classic)."""
    out = [] if native else ""
    for (family, kind), series in fams.items():
        if native:
            msg = pb_str(1, family) + pb_uint(3, {"counter": 0, "gauge": 1, "histogram": 4}[kind])
        else:
            out += f"# TYPE {family if kind != 'counter' else family[:-6]} {kind}\n"
        for labels, s in series.items():
            lab = ",".join(f'{k}="{v}"' for k, v in labels)
            if native:
                m = b"".join(field(1, 2, pb_str(1, k) + pb_str(2, v)) for k, v in labels)
                if kind == "histogram":
                    m += field(7, 2, native_histogram(s, f))
                elif kind == "counter":
                    m += field(3, 2, pb_double(1, s["value"] * f))
                else:
                    m += field(2, 2, pb_double(1, s["value"]))
                msg += field(4, 2, m)
            elif kind == "histogram":
                for les, v in s["text_le"]:
                    out += f'{family}_bucket{{{lab}{"," if lab else ""}le="{les}"}} {math.floor(v * f)}\n'
                out += f"{family}_sum{{{lab}}} {s.get('sum', 0.0) * f:.9g}\n"
                out += f"{family}_count{{{lab}}} {math.floor(s.get('count', 0) * f)}\n"
            else:
                v = s["value"] * f if kind == "counter" else s["value"]
                out += f"{family}{{{lab}}} {v:.9g}\n"
        if native:
            out.append(encode_varint(len(msg)) + msg)
    return b"".join(out) if native else out.encode()


def serve(path):
    fams = read_scrape(path)
    # Once, not per scrape (a scrape must answer within Prometheus' 1 s timeout here): the
    # native buckets, and every 4th bound for text, as the backfill.
    for (_, kind), series in fams.items():
        for s in series.values() if kind == "histogram" else ():
            s["native"] = native_counts(s)
            s["text_le"] = [("+Inf" if le == float("inf") else repr(le), v)
                            for le, v in sorted(s["le"].items())
                            if le == float("inf") or any(abs(le - b) < 1e-12 + b * 1e-6 for b in BOUNDS)]
    # SYNTHETIC stand-in: the VM has no local PCIe drive, so its host's NVMe/RDMA command
    # series are also served as a local PCIe namespace (nvme9n1), for the dashboards' PCIe row.
    for family in ("nvmeof_command_latency_seconds", "nvmeof_commands_total"):
        for (fam, _), series in fams.items():
            if fam != family:
                continue
            for labels in [l for l in series if ("transport", "rdma") in l and ("role", "host") in l]:
                sub = {"transport": "pcie", "controller": "nvme9", "nvme_namespace": "nvme9n1"}
                series[tuple((k, sub.get(k, v)) for k, v in labels)] = series[labels]
    t0 = time.time()

    def respond(handler):
        # The VM run's counts every second, as if it had run for an hour already: rate()
        # then extrapolates every series of a scrape alike (no counter near its zero point),
        # and each native bucket grows by whole counts between scrapes, so ratios of sums and
        # counts agree between the two servers.
        f = 3600 + (time.time() - t0)
        native = wants_protobuf(handler)
        return render(fams, f, native), PROTOBUF_TYPE if native else TEXT_TYPE

    serve_metrics(respond, threaded=True)


def backing_disks(out, inst, end, ts):
    """The target's backing disks: each subsystem's namespace (nvmeof_target_namespace_info with
    its device_path) on its own disk, whose block `device` stage takes 80% of the target's
    storage stage (the drive; the rest is the target's block layer): what the drive-time rule
    joins through device_path. Emits the info metric; returns the block series (stage
    histograms, request counters) for the caller to emit with the host's, one family each."""
    info, blk_stage, reqs = [], [], []
    t0, t_change = first_sample(end), end - 20 * 60
    for i, (_, _, transport, nqn, _, ops) in enumerate(HOST_DEVICES):
        disk = f"nvme{9 - i}n1"
        info.append((dict(inst, nqn=nqn, nsid="1", device_path=f"/dev/{disk}", device_uuid=f"u{i}",
                          ana_grpid="1"), 1))
        for op, iops in ops.items():
            m = TARGET_MEANS[(transport, op)]["storage"] * 0.8e-6
            new_m = m * math.prod(f for nqn_, op_, _, f in (REGRESSED, WEEKLY)
                                  if (nqn_, op_) == (nqn, op))
            week = week_window(end) if WEEKLY[:2] == (nqn, op) else None
            lab = dict(inst, disk=disk, op=op)
            blk_stage.append(Series(dict(lab, stage="device"), iops, Dist(m), Dist(new_m), t0, t_change,
                                    week))
            reqs.append(Series(lab, iops, None, None, t0, t_change))
    gauge_family(out, "nvmeof_target_namespace_info", info, ts)
    return blk_stage, reqs


def emit_bpf(out, inst, args, ts, disks=((), ())):
    """eBPF self-metrics and block-layer histograms of the host (fallback only), with the
    target's backing disks (`disks`, from backing_disks)."""
    t0 = first_sample(args.end)
    gauge_family(out, "nvmeof_exporter_bpf_available", [(dict(inst, reason="ok"), 1)], ts)
    gauge_family(out, "nvmeof_exporter_bpf_hook_attached",
                 [(dict(inst, hook=h, mechanism="tp_btf", required=r), 1)
                  for h, r in (("block_rq_issue", "false"), ("block_rq_complete", "true"))], ts)
    gauge_family(out, "nvmeof_exporter_bpf_inflight_entries", [(inst, 12)], ts)
    gauge_family(out, "nvmeof_exporter_bpf_inflight_capacity", [(inst, 16384)], ts)
    counter_family(out, "nvmeof_exporter_bpf_lost_events",
                   [Series(dict(inst, reason=r), 0.0, None, None, t0, t0)
                    for r in ("inflight_evicted", "map_full", "recursion")], ts)
    runs = [Series(dict(inst, hook=h, mechanism="tp_btf"), 28000, None, None, t0, t0)
            for h in ("block_rq_issue", "block_rq_complete")]
    counter_family(out, "nvmeof_exporter_bpf_program_runs", runs, ts)
    out.append("# TYPE nvmeof_exporter_bpf_program_run_seconds counter")
    for s in runs:
        lab = fmt_labels(s.labels)
        for t in ts:
            out.append(f"nvmeof_exporter_bpf_program_run_seconds_total{lab} "
                       f"{s.count(t) * 6e-7:.6f} {t:.3f}")
    blk, blk_stage, reqs = [], list(disks[0]), list(disks[1])
    for dev, _, _, _, _, ops in HOST_DEVICES:
        for op, iops in ops.items():
            lab = dict(inst, disk=dev, op=op)
            total = 150e-6 if op == "read" else 170e-6
            blk.append(Series(lab, iops, Dist(total, 0.3), Dist(total, 0.3), t0, t0))
            for st, m in (("queue", 2e-6), ("device", total - 2e-6)):
                blk_stage.append(Series(dict(lab, stage=st), iops, Dist(m), Dist(m), t0, t0))
            reqs.append(Series(lab, iops, None, None, t0, t0))
    histogram_family(out, "nvmeof_block_stage_latency_seconds", blk_stage, ts)
    histogram_family(out, "nvmeof_block_latency_seconds", blk, ts)
    counter_family(out, "nvmeof_block_requests", reqs, ts)


if __name__ == "__main__":
    main()
