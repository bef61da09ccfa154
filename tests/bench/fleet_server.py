#!/usr/bin/env python3
"""A simulated fleet of nvmeof_exporter nodes behind one HTTP port, for fleet_bench.sh and
tests/e2e/test_fleet.sh (python3 stdlib only).

Each node is a URL: GET /metrics?node=h00042 answers what that node's exporter would. Prometheus
scrapes N targets "h00042", "t00043", ... and relabels them (the blackbox-exporter pattern):
    __param_node <- __address__;  instance <- __address__;  __address__ <- 127.0.0.1:PORT
so N nodes cost one process and one socket, not N.

Node shapes (README "Histograms and cardinality", tests/unit/cardinality_test.cc), at the
exporter's defaults (the default hook tier, bpf.stage_detail and bpf.command_detail controller: the
end-to-end histogram per controller or subsystem, command counts per namespace or port; 16 classic buckets for
text, native schema-3 histograms for protobuf; block series for local disks only, not for the
NVMe-oF host namespaces' disks, which the NVMe-oF series already time):
  h*  host:   4 controllers x 8 namespaces (NVMe/RDMA and NVMe/TCP), reads and writes, plus a
              local PCIe drive, the one disk with block series
  t*  target: 16 subsystems x 2 ports, each subsystem one namespace on its own local drive
              (nvmeof_target_namespace_info's device_path), whose block series are timed
  b*  both:   the two above on one node
--tier transport replays the transport tier's stages instead (bpf.transport_stages).
Node i is h, h, t, b for i mod 4 = 0, 1, 2, 3 (half hosts, a quarter targets, a quarter both).

Where the numbers come from (REAL, replayed):
- every latency distribution is one of the real VM scrape's (tests/fixtures/vm-stages, Debian
  6.12, rxe and NVMe/TCP; the default tier's tracepoints, or fentry hooks with --tier
  transport): a host controller's stages and its namespaces' end to end latency are the VM
  host's series of the same transport and op; a target subsystem's are the VM target's, and
  its backing drive's block series are the VM target's null_blk backing disk of the same
  transport (the fentry scrape has none: there, the host's stand-in below); counts scale with time, so counters grow (by the VM run's counts per second,
  as if it had run for an hour already, times a per-node rate of 0.7-1.3);
- everything that is not a latency histogram is the golden scrape of the fixture trees
  (tests/e2e/golden.prom: RDMA port and hw counters of one mlx5 device, the PFC, DCB and ECN
  series of its one RoCE netdev, TCP, the NVMe host topology on hosts, the nvmet configfs on
  targets, the exporter's self-metrics), counters growing the same way. A second RoCE port
  (mlx5_2 and its netdev in the golden) would add about 170 series per node;
- the topology that the rules join on is generated per node: nvmeof_controller_info (4 per host,
  each controller connected to one subsystem of a target node, so the per-subsystem fleet rules
  and the network estimate have both sides) and nvmeof_namespace_info (32 per host).
Identity: the node name appears in its hostnqn and its subsystems' NQNs.

Cost: one body per (shape, rate class, format) is rendered every --tick seconds, by a thread
of its own, and shared; a request copies the latest with the node's name put in (bytes.replace of same-length tokens, also safe
inside protobuf's length-prefixed strings). 1,000 nodes at a 15 s interval are ~67 scrapes/s.

Reference (fleet_bench.sh): --node-exporter SCRAPE also serves r00000, r00001, ...: a real
prometheus-node-exporter scrape (default collectors) replayed, counters growing the same way.

Usage: fleet_server.py [--port 0] [--tick 5] [--nodes N] [--node-exporter SCRAPE] [--list N]
  --list N prints the first N node names (one per line) and exits.
Prints the port, then serves until killed. /stats answers renders and requests so far.
"""
import argparse
import http.server
import os
import re
import sys
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import synthetic_nvmeof as syn  # noqa: E402  (read_scrape, native_counts, render)

FIXTURES = os.environ.get("FIXTURES", os.path.join(HERE, "..", "fixtures"))
VM_SCRAPES = {"default": os.path.join(FIXTURES, "vm-stages", "metrics-6.12-default.prom.gz"),
              "transport": os.path.join(FIXTURES, "vm-stages", "metrics-6.12-fentry.prom.gz")}
GOLDEN = os.path.join(HERE, "..", "e2e", "golden.prom")

SELF, PEER = "@@@@@@", "%%%%%%"  # same length as a node name: h00042
RATES = [0.7, 0.9, 1.1, 1.3]     # rate classes (nodes i // 4 mod 4)
DEFAULT_BOUNDS = [2.0 ** e for e in range(-17, -1)]  # BucketLayout::Default(): 16 bounds
HOST_FAMILIES = re.compile(r"nvmeof_(subsystem_info|namespace_|controller_|path_)")
TARGET_FAMILIES = re.compile(r"nvmeof_target_")
NETDEV = "ens1f0np0"  # mlx5_0's netdev in the golden scrape


def node_name(i):
    return "hhtb"[i % 4] + "%05d" % i


def peer_of(i, n):
    """The target-capable node (t or b) whose subsystems host i connects to."""
    groups = max(1, n // 4)
    j = 4 * ((i // 4 + 1) % groups) + 2 + (i % 2)
    return node_name(j if j < n else 2 if n > 2 else 0)


def text_le(h):
    """Cumulative counts at the exporter's 16 default bounds, from the fine buckets (each bound
    snapped to the nearest fine bound at or below it, as bpf.buckets does)."""
    fine = sorted(b for b in h["le"] if b != float("inf"))
    out = []
    for b in DEFAULT_BOUNDS:
        below = [x for x in fine if x <= b * 1.001]
        out.append((repr(b), h["le"][below[-1]] if below else 0.0))
    out.append(("+Inf", h["le"].get(float("inf"), h.get("count", 0.0))))
    return out


def load(tier):
    vm = syn.read_scrape(VM_SCRAPES[tier])
    for (_, kind), series in vm.items():
        for s in series.values() if kind == "histogram" else ():
            s["native"] = syn.native_counts(s)
            s["text_le"] = text_le(s)
    golden = syn.read_scrape(GOLDEN)
    return vm, golden


def stages_of(vm, stage_fam, role, transport, op):
    """(stage, series) of the VM scrape's stage histograms of one role, transport and op."""
    for (fam, _), series in vm.items():
        if fam != stage_fam:
            continue
        for labels, s in series.items():
            d = dict(labels)
            if d.get("role") == role and d["transport"] == transport and d["op"] == op:
                yield d["stage"], s


def pick(vm, family, **want):
    """The VM series of `family` whose labels include `want` (first one)."""
    for (fam, _), series in vm.items():
        if fam != family:
            continue
        for labels, s in series.items():
            d = dict(labels)
            if all(d.get(k) == v for k, v in want.items()):
                return d, s
    return None, None


def shape(vm, golden, kind, rclass):
    """{(family, kind): {labels: series}} of one node shape, with SELF/PEER tokens."""
    fams = {}

    def add(family, k, labels, s):
        fams.setdefault((family, k), {})[tuple(labels)] = s
    host, target = kind in ("h", "b"), kind in ("t", "b")
    stage_fam, cmd_fam = "nvmeof_stage_latency_seconds", "nvmeof_command_latency_seconds"

    def op_series(role, tr, op, where):
        """Adds the VM's stage histograms of (role, tr, op) under the `where` labels (controller
        or subsystem); returns its command histogram and command count."""
        for stage, s in stages_of(vm, stage_fam, role, tr, op):
            add(stage_fam, "histogram",
                [("role", role), ("transport", tr), ("op", op)] + where + [("stage", stage)], s)
        _, cmd = pick(vm, cmd_fam, role=role, transport=tr, op=op)
        _, cnt = pick(vm, "nvmeof_commands_total", role=role, transport=tr, op=op)
        return cmd, cnt
    if host:
        for c in range(4):
            tr = "rdma" if c % 2 == 0 else "tcp"
            ctrl = "nvme%d" % c
            nqn = "nqn.2024-01.io.example:%s-ss%02d" % (PEER, 4 * rclass + c)
            add("nvmeof_controller_info", "gauge", [
                ("controller", ctrl), ("transport", tr), ("traddr", "10.10.%d.1" % c),
                ("trsvcid", "4420"), ("host_traddr", ""), ("host_iface", ""), ("src_addr", ""),
                ("nqn", nqn), ("hostnqn", "nqn.2014-08.org.nvmexpress:uuid:%s" % SELF),
                ("cntlid", str(c + 1)), ("nvme_subsystem", "nvme-subsys%d" % c)], {"value": 1})
            for op in ("read", "write"):
                cmd, cnt = op_series("host", tr, op, [("controller", ctrl)])
                lab = [("role", "host"), ("transport", tr), ("op", op), ("controller", ctrl)]
                add(cmd_fam, "histogram", lab, cmd)  # bpf.command_detail controller (default)
                for n in range(1, 9):
                    add("nvmeof_commands_total", "counter",
                        lab + [("nvme_namespace", "%sn%d" % (ctrl, n))], cnt)
            for n in range(1, 9):
                add("nvmeof_namespace_info", "gauge", [
                    ("nvme_subsystem", "nvme-subsys%d" % c), ("nvme_namespace", "%sn%d" % (ctrl, n)),
                    ("nsid", str(n)), ("nqn", nqn)], {"value": 1})
        # A local PCIe drive (the boot disk): its NVMe command series and block series.
        # SYNTHETIC stand-in, as synthetic_nvmeof.py --serve's: the VM host's NVMe/RDMA
        # distributions.
        for op in ("read", "write"):
            _, cmd = pick(vm, cmd_fam, role="host", transport="rdma", op=op)
            _, cnt = pick(vm, "nvmeof_commands_total", role="host", transport="rdma", op=op)
            lab = [("role", "host"), ("transport", "pcie"), ("op", op), ("controller", "nvme9")]
            add(cmd_fam, "histogram", lab, cmd)
            add("nvmeof_commands_total", "counter", lab + [("nvme_namespace", "nvme9n1")], cnt)
        block(fams, vm, "nvme9n1", "rdma")
    if target:
        for ss in range(16):
            tr = "rdma" if ss % 2 == 0 else "tcp"
            nqn = "nqn.2024-01.io.example:%s-ss%02d" % (SELF, ss)
            for op in ("read", "write"):
                cmd, cnt = op_series("target", tr, op, [("nqn", nqn)])
                lab = [("role", "target"), ("transport", tr), ("op", op), ("nqn", nqn)]
                add(cmd_fam, "histogram", lab, cmd)
                for port in ("1", "2"):
                    add("nvmeof_commands_total", "counter", lab + [("nvmet_port", port)], cnt)
            # Its namespace, on a local drive of its own: the drive's time joins through
            # device_path (instance:nvmeof_target_namespace_disk:info).
            drive = "nvme%dn1" % (10 + ss)
            add("nvmeof_target_namespace_info", "gauge", [
                ("nqn", nqn), ("nsid", "1"), ("device_path", "/dev/" + drive),
                ("device_uuid", "00000000-0000-4000-8000-%012d" % ss), ("ana_grpid", "1")],
                {"value": 1})
            backing(fams, vm, drive, tr)
    # The rest of the node: the golden scrape (one RDMA device, mlx5_0, and its netdev), by
    # role. The golden covers six RDMA devices of five drivers; a node keeps mlx5_0's series and
    # those of its netdev only (the PFC, DCB, ECN and MTU series are per netdev, without an
    # rdma_device label).
    for (family, k), series in golden.items():
        if family in ("nvmeof_controller_info", "nvmeof_namespace_info",
                      "nvmeof_target_namespace_info", "nvmeof_exporter_bpf_available", "nvmeof_exporter_build_info"):
            continue
        if HOST_FAMILIES.match(family) and not host or TARGET_FAMILIES.match(family) and not target:
            continue
        for labels, s in series.items():
            ld = dict(labels)
            if ld.get("rdma_device", "mlx5_0") != "mlx5_0" or ld.get("netdev", NETDEV) not in ("", NETDEV):
                continue
            add(family, k, labels, s)
    add("nvmeof_exporter_build_info", "gauge", [("version", "1.0.0"), ("revision", "fleet")],
        {"value": 1})
    add("nvmeof_exporter_bpf_available", "gauge", [("reason", "ok")], {"value": 1})
    add("nvmeof_exporter_bpf_sample_every", "gauge", [], {"value": 8})
    return fams


def backing(fams, vm, disk, transport):
    """A target's backing drive: the block series of the VM target's null_blk backing disk of
    the same transport (found through the VM's nvmeof_target_namespace_info), under `disk`;
    the host's stand-in (block below) where the replayed scrape has none."""
    found = False
    for (fam, k), series in vm.items():
        if not fam.startswith("nvmeof_block_"):
            continue
        for labels, s in series.items():
            ld = dict(labels)
            info, _ = pick(vm, "nvmeof_target_namespace_info", device_path="/dev/" + ld["disk"])
            if info is None or ("-" + transport) not in info["nqn"]:
                continue
            fams.setdefault((fam, k), {})[tuple((n, disk if n == "disk" else v)
                                               for n, v in labels)] = s
            found = True
    if not found:
        block(fams, vm, disk, transport)


def block(fams, vm, disk, transport):
    """The bpf collector's block-layer series of one disk: end to end, queue and device stages
    per op, and the exact request count. SYNTHETIC from REAL: a disk's end to end is the VM
    host's command latency of its transport and op (block layer plus NVMe command), its queue
    stage the VM's block_submit stage, its device stage the command."""
    for op in ("read", "write"):
        _, cmd = pick(vm, "nvmeof_command_latency_seconds", role="host", transport=transport, op=op)
        _, sub = pick(vm, "nvmeof_stage_latency_seconds", role="host", transport=transport, op=op,
                      stage="block_submit")
        _, cnt = pick(vm, "nvmeof_commands_total", role="host", transport=transport, op=op)
        lab = (("disk", disk), ("op", op))
        fams.setdefault(("nvmeof_block_latency_seconds", "histogram"), {})[lab] = cmd
        st = fams.setdefault(("nvmeof_block_stage_latency_seconds", "histogram"), {})
        st[lab + (("stage", "queue"),)] = sub
        st[lab + (("stage", "device"),)] = cmd
        fams.setdefault(("nvmeof_block_requests_total", "counter"), {})[lab] = cnt


class Fleet:
    def __init__(self, tick, tier="default"):
        vm, golden = load(tier)
        self.tick, self.t0 = tick, time.time()
        self.shapes = {(k, r): shape(vm, golden, k, r) for k in "htb" for r in range(len(RATES))}
        self.cache, self.lock = {}, threading.Lock()
        self.renders = self.requests = 0
        self.render_seconds = 0.0

    def reference(self, path):
        """A real node_exporter scrape, replayed as node kind r: counters (and summary sums and
        counts) grow as the nodes' do, gauges stay; text only (what the reference serves is
        counters, gauges and summaries, stored alike from text or protobuf)."""
        types, lines = {}, []
        for line in open(path):
            if line.startswith("# TYPE "):
                _, _, fam, typ = line.split()
                types[fam] = typ
            if line.startswith("#") or not line.strip():
                lines.append((line, None, None))
                continue
            head, value = line.rsplit(" ", 1)
            name = re.match(r"[^{ ]+", head).group(0)
            fam = re.sub(r"_(sum|count)$", "", name) if types.get(name) is None else name
            grows = types.get(fam) == "counter" or (types.get(fam) == "summary" and fam != name)
            lines.append((head, float(value), grows))
        self.ref_lines = lines

    def render_reference(self, f):
        out = []
        for head, value, grows in self.ref_lines:
            if value is None:
                out.append(head)
            else:
                out.append("%s %.17g\n" % (head, value * f / 3600 if grows else value))
        return "".join(out).encode()

    def render(self, key, tick):
        kind, rclass, native = key
        t = time.perf_counter()
        # Counters: the VM run's counts per second, from an hour's worth, per rate class.
        f = (3600 + tick * self.tick) * RATES[rclass]
        body = (self.render_reference(f) if kind == "r" else
                syn.render(self.shapes[(kind, rclass)], f, native))
        with self.lock:
            self.cache[key] = (tick, body)
            self.renders += 1
            self.render_seconds += time.perf_counter() - t
        return body

    def refresh(self):
        """Re-renders every body asked for so far, once per tick, off the request path: a scrape
        never waits for a render (on a loaded machine a render can take longer than a scrape
        timeout); if rendering falls behind, counters grow in larger steps, never backwards."""
        while True:
            tick = int((time.time() - self.t0) / self.tick)
            with self.lock:
                stale = [k for k, (t, _) in self.cache.items() if t < tick]
            for key in stale:
                self.render(key, tick)
            time.sleep(max(0.05, self.t0 + (tick + 1) * self.tick - time.time()))

    def body(self, name, n, native):
        """(body, native): native says whether the body is protobuf. A reference node (r*) is
        text whatever was asked, and says so in its content type (a protobuf content type on a
        text body is a failed scrape: "proto: wrong wireType")."""
        i = int(name[1:])
        kind, rclass = name[0], (i // 4) % len(RATES)
        native = native and kind != "r"
        key = (kind, rclass, native)
        with self.lock:
            self.requests += 1
            hit = self.cache.get(key)
        body = hit[1] if hit else self.render(key, int((time.time() - self.t0) / self.tick))
        return body.replace(SELF.encode(), name.encode()).replace(
            PEER.encode(), peer_of(i, n).encode()), native


def wants_protobuf(headers):
    """Whether the scraper's Accept header prefers the delimited MetricFamily protobuf format to
    text (as the exporter decides: exporter/protobuf_exposition.cc PrefersProtobuf): what
    Prometheus asks for with native histograms on (2.x) or PrometheusProto first in its
    scrape_protocols (3.x)."""
    proto_q = text_q = 0.0
    for part in headers.get("Accept", "").split(","):
        fields = [f.strip() for f in part.split(";")]
        params = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
        try:
            q = float(params.get("q", "1"))
        except ValueError:
            q = 0.0
        if (fields[0].lower() == "application/vnd.google.protobuf"
                and params.get("proto") == "io.prometheus.client.MetricFamily"
                and params.get("encoding") == "delimited"):
            proto_q = max(proto_q, q)
        elif fields[0].lower() == "text/plain" or fields[0] == "*/*":
            text_q = max(text_q, q)
    return proto_q > 0 and proto_q >= text_q


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--tick", type=float, default=5.0)
    ap.add_argument("--nodes", type=int, default=1000, help="fleet size (peers are chosen in it)")
    ap.add_argument("--list", type=int)
    ap.add_argument("--tier", choices=sorted(VM_SCRAPES), default="default",
                    help="the hook tier whose stages the nodes serve (default: the default)")
    ap.add_argument("--node-exporter", metavar="SCRAPE",
                    help="also serve nodes r00000.. replaying this node_exporter scrape")
    args = ap.parse_args()
    if args.list is not None:
        print("\n".join(node_name(i) for i in range(args.list)))
        return
    fleet = Fleet(args.tick, args.tier)
    if args.node_exporter:
        fleet.reference(args.node_exporter)
    threading.Thread(target=fleet.refresh, daemon=True).start()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            url = urllib.parse.urlparse(self.path)
            q = urllib.parse.parse_qs(url.query)
            if url.path == "/stats":
                body = ("renders %d\nrender_seconds %.3f\nrequests %d\n" % (
                    fleet.renders, fleet.render_seconds, fleet.requests)).encode()
                ctype = "text/plain"
            else:
                name = q.get("node", [""])[0]
                if url.path != "/metrics" or not re.fullmatch(r"[htbr]\d{5}", name):
                    self.send_error(404)
                    return
                body, native = fleet.body(name, args.nodes, wants_protobuf(self.headers))
                ctype = ("application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily;"
                         " encoding=delimited" if native else "text/plain; version=0.0.4")
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 1024

    srv = Server(("127.0.0.1", args.port), Handler)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
