#!/usr/bin/env python3
"""Soak: the built exporter, eBPF on, under churn and scrape load for a bounded time.

While it runs:
- loop disks are created (LOOP_CTL_ADD), written and read with O_DIRECT, detached and removed
  (LOOP_CTL_REMOVE), cycling over a pool of loop indexes;
- network namespaces come and go, each with a veth pair whose root-side end (nvsk*) the pfc
  collector reads through ethtool (pfc.netdevs.include), half removed with `ip link del`, half by
  deleting the namespace;
- 4 scrapers scrape 10 times a second in all, cycling text / protobuf (delimited MetricFamily)
  x plain / gzip (the exporter answers Connection: close, so each scrape is a new connection).

Then it checks: every scrape answered 200 and parsed whole; RSS, fds, threads and the entries
of the exporter's eBPF hash maps end within a stated bound of where they settled; no scrape that
started after a loop disk or netdev was gone still had its series, and every disk and netdev
that lived long enough was seen; no warn/error line in the exporter's log; SIGTERM ends it with
status 0 within 5 s. Prints a summary table. Exit 0 pass, 1 fail, 77 skip (not root, no eBPF,
no loop-control, no netns).

  soak.py EXPORTER [SECONDS|0|--forever] [--settle S] [--work DIR]
"""
import argparse
import ctypes
import fcntl
import gzip
import http.client
import mmap
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from testlib import delimited, fields  # noqa: E402

SKIP = 77
LOOP_CTL_ADD, LOOP_CTL_REMOVE = 0x4C80, 0x4C81
LOOP_POOL = 6          # loop indexes cycled (dev_t reuse, as disks that come back get)
NETNS_POOL = 4
SCRAPERS = 4
SCRAPE_RATE = 10.0     # per second, all scrapers together
PROTO_ACCEPT = ("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
                "encoding=delimited")
# Bounds (final window vs settled window, each the max over 10 s of 1 s samples).
RSS_SLACK = 8 << 20    # allocator arenas of the per-scrape threads settle in steps of ~1-4 MiB
FD_SLACK = 4           # sockets of scrapes in flight at the moment of the sample
THREAD_SLACK = 4       # collector runs in flight at the moment of the sample
MAP_SLACK = 0          # the disk/op pool is seen whole while settling: no new keys after
# Warnings expected in the exporter's log, with why (none so far).
EXPECTED_WARNINGS = []

POOL = []              # loop indexes in use, for the cleanup at exit
OWNED = []             # the lock's fd once held: only then does the exit clean up
stop = threading.Event()
lock = threading.Lock()
errors = []            # failures found while running (also checked at the end)


def fail(msg):
    with lock:
        errors.append(msg)


def sh(*cmd, check=True):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), r.stdout.strip()))
    return r


# --- protobuf: the wire format from tests/pylib/testlib.py

def parse_protobuf(body):
    """[(family name, [labels dict per metric])] of a delimited MetricFamily stream."""
    out = []
    for msg in delimited(body):
        name, metrics = "", []
        for num, _, v in fields(msg):
            if num == 1:
                name = v.decode()
            elif num == 4:  # Metric
                labels = {}
                for mnum, _, mv in fields(v):
                    if mnum == 1:  # LabelPair
                        pair = dict((k, x.decode()) for k, _, x in fields(mv))
                        labels[pair.get(1, "")] = pair.get(2, "")
                metrics.append(labels)
        out.append((name, metrics))
    return out


LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_text(body):
    fams = {}
    for line in body.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        float(value)  # every sample line ends in a number
        name, _, labels = head.partition("{")
        fams.setdefault(name, []).append(dict(LABEL.findall(labels)))
    return list(fams.items())


# --- the exporter's resources

def proc_sample(pid):
    status = open("/proc/%d/status" % pid).read()
    rss = int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) * 1024
    return {"rss": rss, "fds": len(os.listdir("/proc/%d/fd" % pid)),
            "threads": len(os.listdir("/proc/%d/task" % pid))}


libc = ctypes.CDLL(None, use_errno=True)
SYS_bpf = 321  # x86_64
BPF_MAP_GET_NEXT_KEY, BPF_MAP_GET_FD_BY_ID = 4, 14
HASH_TYPES = {1: "hash", 5: "percpu_hash", 9: "lru_hash", 10: "lru_percpu_hash"}


def bpf_maps(pid):
    """{map name: (type, key size, id)} of the exporter's eBPF map fds (fdinfo)."""
    maps = {}
    for fd in os.listdir("/proc/%d/fdinfo" % pid):
        try:
            info = open("/proc/%d/fdinfo/%s" % (pid, fd)).read()
        except OSError:
            continue
        m = re.search(r"map_id:\s+(\d+)", info)
        if not m:
            continue
        mtype = int(re.search(r"map_type:\s+(\d+)", info).group(1))
        ksize = int(re.search(r"key_size:\s+(\d+)", info).group(1))
        maps[int(m.group(1))] = (mtype, ksize)
    names = {}
    for line in sh("bpftool", "map", "show").stdout.splitlines():
        m = re.match(r"(\d+): \S+\s+name (\S+)", line)
        if m and int(m.group(1)) in maps:
            names[int(m.group(1))] = m.group(2)
    return {names.get(i, str(i)): (t, k, i) for i, (t, k) in maps.items()}


def map_keys(map_id, key_size):
    """Keys of a hash map, walked with BPF_MAP_GET_NEXT_KEY (no value copies); None if gone."""
    attr = ctypes.create_string_buffer(128)
    ctypes.c_uint32.from_buffer(attr, 0).value = map_id
    fd = libc.syscall(SYS_bpf, BPF_MAP_GET_FD_BY_ID, attr, 128)
    if fd < 0:
        return None
    try:
        key, nxt = ctypes.create_string_buffer(key_size), ctypes.create_string_buffer(key_size)
        keys, first = [], True
        while len(keys) < 1 << 20:
            a = ctypes.create_string_buffer(128)
            ctypes.c_uint32.from_buffer(a, 0).value = fd
            ctypes.c_uint64.from_buffer(a, 8).value = 0 if first else ctypes.addressof(key)
            ctypes.c_uint64.from_buffer(a, 16).value = ctypes.addressof(nxt)
            if libc.syscall(SYS_bpf, BPF_MAP_GET_NEXT_KEY, a, 128) != 0:
                break
            ctypes.memmove(key, nxt, key_size)
            keys.append(nxt.raw)
            first = False
        return keys
    finally:
        os.close(fd)


def map_counts(hash_maps, soak_devs):
    """{label: entries}. block_hists is keyed by (dev, op) of every disk on the machine, and
    other users' disks come and go too: its entries of the soak's own disks are counted apart
    (bounded), the whole map is shown for information."""
    out = {}
    for name, (ksize, mid) in hash_maps.items():
        keys = map_keys(mid, ksize)
        if keys is None:
            continue
        if name == "block_hists":
            out["block_hists (soak disks)"] = sum(
                1 for k in keys if int.from_bytes(k[:4], "little") in soak_devs)
            out["block_hists (all disks)"] = len(keys)
        else:
            out[name] = len(keys)
    return out


# --- churn

class Objects:
    """Lifetimes of loop disks and netdevs: name -> list of [appeared, gone] (monotonic)."""

    def __init__(self):
        self.life = {}

    def up(self, name):
        with lock:
            self.life.setdefault(name, []).append([time.monotonic(), None])

    def down(self, name):
        with lock:
            self.life[name][-1][1] = time.monotonic()

    def present(self, name, t0, t1):
        """Whether name existed at some time within [t0, t1] (None: gone the whole time)."""
        with lock:
            spans = list(self.life.get(name, []))
        return any(a <= t1 and (b is None or b >= t0) for a, b in spans)


def loop_churn(pool, work, objs, counts):
    ctl = os.open("/dev/loop-control", os.O_RDWR)
    buf = mmap.mmap(-1, 64 << 10)  # page-aligned, as O_DIRECT wants
    buf.write(os.urandom(64 << 10))
    k = 0
    while not stop.is_set():
        idx = pool[k % len(pool)]
        k += 1
        name, dev = "loop%d" % idx, "/dev/loop%d" % idx
        backing = os.path.join(work, "disk%d.img" % idx)
        try:
            objs.up(name)  # before the disk can be in /sys/block
            fcntl.ioctl(ctl, LOOP_CTL_ADD, idx)
            for _ in range(100):  # devtmpfs makes the node
                if os.path.exists(dev):
                    break
                time.sleep(0.01)
            sh("losetup", dev, backing)
            major, minor = open("/sys/block/%s/dev" % name).read().split(":")
            if (int(major), int(minor)) != (7, idx):
                raise RuntimeError("%s is %s:%s, not 7:%d (loop max_part set?)" % (
                    name, major, minor.strip(), idx))
            fd = os.open(dev, os.O_RDWR | os.O_DIRECT)
            deadline = time.monotonic() + 1.5  # I/O for a while: live in a few scrapes
            off = 0
            while time.monotonic() < deadline and not stop.is_set():
                os.pwritev(fd, [buf], off)
                os.preadv(fd, [buf], off)
                off = (off + len(buf)) % (4 << 20)
                counts["loop_ios"] += 2
                # Paced: unpaced, this loop took a third of a CPU in system time (18 M I/Os in
                # 300 s), taken from the VM suite beside it; the exporter's series need a few.
                time.sleep(0.005)
            os.close(fd)
            sh("losetup", "-d", dev)
            for attempt in range(200):  # detach completes asynchronously: EBUSY meanwhile
                try:
                    fcntl.ioctl(ctl, LOOP_CTL_REMOVE, idx)
                    break
                except OSError:
                    time.sleep(0.01)
            else:
                raise RuntimeError("LOOP_CTL_REMOVE %s stayed busy" % name)
            while os.path.exists("/sys/block/" + name):
                time.sleep(0.005)
            objs.down(name)
            counts["loops"] += 1
        except Exception as e:  # noqa: BLE001 - one failure must not stop the soak silently
            fail("loop churn %s: %s" % (name, e))
            stop.wait(1)
    os.close(ctl)


def netns_churn(objs, counts):
    k = 0
    while not stop.is_set():
        i = k % NETNS_POOL
        k += 1
        ns, dev = "nvsk-ns%d" % i, "nvsk%d" % i
        try:
            sh("ip", "netns", "add", ns)
            objs.up(dev)  # before it can be in /sys/class/net
            sh("ip", "link", "add", dev, "type", "veth", "peer", "name", "eth0", "netns", ns)
            sh("ip", "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            stop.wait(1.5)
            if k % 2:
                sh("ip", "link", "del", dev)
                sh("ip", "netns", "del", ns)
            else:  # the namespace's cleanup destroys the pair, asynchronously
                sh("ip", "netns", "del", ns)
            deadline = time.monotonic() + 10
            while os.path.exists("/sys/class/net/" + dev):
                if time.monotonic() > deadline:
                    raise RuntimeError("%s still there 10 s after its namespace went" % dev)
                time.sleep(0.005)
            objs.down(dev)
            counts["netns"] += 1
        except Exception as e:  # noqa: BLE001
            fail("netns churn %s: %s" % (ns, e))
            sh("ip", "netns", "del", ns, check=False)
            stop.wait(1)


# --- scrapes

class Scrapes:
    def __init__(self):
        self.rows = []  # (start, end, variant, status, error, disks, netdevs, series, selfm)


def scraper(n, port, out):
    variants = [("text", False), ("text", True), ("protobuf", False), ("protobuf", True)]
    period = SCRAPERS / SCRAPE_RATE
    conn = None
    k = n
    next_at = time.monotonic() + n * period / SCRAPERS
    while not stop.is_set():
        stop.wait(max(0, next_at - time.monotonic()))
        if stop.is_set():
            break
        next_at = max(next_at + period, time.monotonic())
        fmt, gz = variants[k % len(variants)]
        k += 1
        headers = {"X-Prometheus-Scrape-Timeout-Seconds": "10"}
        if fmt == "protobuf":
            headers["Accept"] = PROTO_ACCEPT
        if gz:
            headers["Accept-Encoding"] = "gzip"
        t0 = time.monotonic()
        status, err, disks, netdevs, series, selfm = 0, "", set(), set(), 0, {}
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/metrics", headers=headers)
            r = conn.getresponse()
            body = r.read()
            status = r.status
            if r.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
            if status == 200:
                if gz:
                    if r.getheader("Content-Encoding") != "gzip":
                        raise ValueError("asked for gzip, got %s" % r.getheader("Content-Encoding"))
                    body = gzip.decompress(body)
                ctype = r.getheader("Content-Type", "")
                if (fmt == "protobuf") != ("protobuf" in ctype):
                    raise ValueError("asked for %s, got Content-Type %s" % (fmt, ctype))
                fams = parse_protobuf(body) if fmt == "protobuf" else parse_text(body)
                for name, metrics in fams:
                    series += len(metrics)
                    for labels in metrics:
                        if "disk" in labels:
                            disks.add(labels["disk"])
                        if "netdev" in labels:
                            netdevs.add(labels["netdev"])
                    if name == "nvmeof_exporter_collector_success":
                        for labels in metrics:
                            selfm.setdefault("collectors", []).append(labels.get("collector"))
        except Exception as e:  # noqa: BLE001
            err = "%s: %s" % (type(e).__name__, e)
            if conn is not None:
                conn.close()
            conn = None
        t1 = time.monotonic()
        with lock:
            out.rows.append((t0, t1, "%s%s" % (fmt, "+gzip" if gz else ""), status, err, disks,
                             netdevs, series, selfm))


# --- main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exporter")
    ap.add_argument("seconds", nargs="?", default="300")
    ap.add_argument("--settle", type=float, default=None)
    ap.add_argument("--work", default=None)
    a = ap.parse_args()
    forever = a.seconds in ("0", "--forever")
    duration = float("inf") if forever else float(a.seconds)
    settle = a.settle if a.settle is not None else (60.0 if duration >= 180 else
                                                     max(20.0, duration / 3))
    if duration < settle + 20:
        print("soak: %s s is too short to settle (%.0f s) and compare; 60 s at least" % (
            a.seconds, settle))
        return 2
    if os.geteuid() != 0:
        print("SKIP: not root: loop disks, network namespaces and eBPF need root")
        return SKIP
    # One soak at a time: two would pick each other's loop indexes and namespaces, and the
    # cleanup at exit removes what this run may own.
    lock_fd = os.open("/tmp/nvmeof-soak.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        print("SKIP: another soak holds /tmp/nvmeof-soak.lock")
        return SKIP
    OWNED.append(lock_fd)
    if not os.path.exists("/dev/loop-control"):
        print("SKIP: no /dev/loop-control (loop module)")
        return SKIP
    r = sh("ip", "netns", "add", "nvsk-probe", check=False)
    if r.returncode != 0:
        print("SKIP: cannot create a network namespace: " + r.stdout.strip())
        return SKIP
    sh("ip", "netns", "del", "nvsk-probe", check=False)

    work = a.work or tempfile.mkdtemp(prefix="nvmeof-soak-")
    # A pool of free loop indexes, high enough to stay clear of losetup -f users.
    pool = [i for i in range(200, 400) if not os.path.exists("/sys/block/loop%d" % i)][:LOOP_POOL]
    POOL.extend(pool)
    # Kernel dev_t (major << 20 | minor) of the pool's disks: loop's major is 7 and, with
    # max_part=0, its minor the index (checked against sysfs as each disk appears).
    soak_devs = {7 << 20 | i for i in pool}
    for i in pool:
        with open(os.path.join(work, "disk%d.img" % i), "wb") as f:
            f.truncate(4 << 20)
    config = os.path.join(work, "soak.yml")
    with open(config, "w") as f:
        f.write('pfc:\n  netdevs: {include: "nvsk[0-9]+"}\n')
    log_path = os.path.join(work, "exporter.log")
    log = open(log_path, "w")
    proc = subprocess.Popen([a.exporter, "--web.listen-address=127.0.0.1:0",
                             "--config.file=" + config], stdout=log, stderr=subprocess.STDOUT)
    port = None
    for _ in range(600):
        m = re.search(r'msg="listening".* port="(\d+)"', open(log_path).read())
        if m:
            port = int(m.group(1))
            break
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    if port is None:
        proc.kill()
        print("FAIL: exporter did not start: " + open(log_path).read()[-2000:])
        return 1
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/metrics")
    first = conn.getresponse().read().decode()
    conn.close()
    n_collectors = len(re.findall(r"^nvmeof_exporter_collector_success\{", first, re.M))
    m = re.search(r'nvmeof_exporter_bpf_available\{reason="([^"]*)"\} (\d)', first)
    if not m or m.group(2) != "1":
        proc.terminate()
        proc.wait()
        print("SKIP: eBPF unavailable here: %s" % (m.group(1) if m else "no bpf_available series"))
        return SKIP

    objs, counts, scrapes = Objects(), {"loops": 0, "netns": 0, "loop_ios": 0}, Scrapes()
    samples = []  # (t, rss, fds, threads, {map: entries})
    threads = [threading.Thread(target=loop_churn, args=(pool, work, objs, counts)),
               threading.Thread(target=netns_churn, args=(objs, counts))]
    threads += [threading.Thread(target=scraper, args=(n, port, scrapes)) for n in range(SCRAPERS)]

    def on_signal(*_):
        stop.set()
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    t_start = time.monotonic()
    for t in threads:
        t.start()
    maps = bpf_maps(proc.pid)
    hash_maps = {n: (k, i) for n, (t, k, i) in maps.items() if t in HASH_TYPES}
    last_print = t_start
    print("soak: exporter pid %d port %d, %s, settle %.0f s; hash maps %s; work %s" % (
        proc.pid, port, "forever (Ctrl-C ends)" if forever else "%.0f s" % duration, settle,
        ",".join(sorted(hash_maps)), work), flush=True)
    while not stop.is_set() and time.monotonic() - t_start < duration:
        if proc.poll() is not None:
            fail("exporter exited with %s during the soak" % proc.returncode)
            break
        s = proc_sample(proc.pid)
        s["maps"] = map_counts(hash_maps, soak_devs)
        s["t"] = time.monotonic() - t_start
        samples.append(s)
        if time.monotonic() - last_print >= 30:
            last_print = time.monotonic()
            print("  t=%4.0fs rss=%.1fMiB fds=%d threads=%d maps=%s scrapes=%d loops=%d netns=%d" % (
                s["t"], s["rss"] / 2**20, s["fds"], s["threads"], s["maps"], len(scrapes.rows),
                counts["loops"], counts["netns"]), flush=True)
        stop.wait(1)
    stop.set()
    for t in threads:
        t.join(60)
    elapsed = time.monotonic() - t_start
    # Everything churned is gone now: the next scrape has none of it.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/metrics")
    final_body = conn.getresponse().read().decode()
    conn.close()
    leftovers = sorted(set(re.findall(r'(?:disk|netdev)="((?:loop2\d\d|loop3\d\d|nvsk)\d*)"',
                                      final_body)))
    t_term = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "killed after 5 s"
    term_s = time.monotonic() - t_term
    log.close()
    return report(a, samples, scrapes, objs, counts, settle, elapsed, leftovers, rc, term_s,
                  log_path, pool, n_collectors)


def window(samples, t0, t1, key, pick=max):
    vals = [s[key] for s in samples if t0 <= s["t"] < t1]
    return pick(vals) if vals else None


def report(a, samples, scrapes, objs, counts, settle, elapsed, leftovers, rc, term_s, log_path,
           pool, n_collectors):
    checks = []  # (ok, what, detail)

    def check(ok, what, detail=""):
        checks.append((bool(ok), what, detail))

    for e in errors:
        check(False, "churn ran without errors", e)
    rows = scrapes.rows
    bad = [r for r in rows if r[3] != 200 or r[4]]
    check(rows and not bad, "every scrape answered 200 and parsed whole",
          "%d of %d bad; first: %s" % (len(bad), len(rows), bad[0][2:5] if bad else ""))
    by_variant = {}
    for r in rows:
        by_variant.setdefault(r[2], []).append(r[1] - r[0])
    rate = len(rows) / elapsed if elapsed else 0
    check(len(by_variant) == 4, "text and protobuf, plain and gzip, all scraped",
          ",".join(sorted(by_variant)))

    # Vanished objects: a scrape that started after an object was gone must not show it; and a
    # disk or netdev alive for a whole scrape is in it.
    stale, missed = [], []
    for t0, t1, variant, status, err, disks, netdevs, _, _ in rows:
        if status != 200 or err:
            continue
        seen = {d for d in disks if re.fullmatch(r"loop\d+", d) and int(d[4:]) in pool}
        seen |= {n for n in netdevs if n.startswith("nvsk")}
        for name in seen:
            if not objs.present(name, t0, t1):
                stale.append((name, variant, round(t0, 2)))
    for name, spans in objs.life.items():
        for up, down in spans:
            if down is None:
                continue
            inside = [r for r in rows if r[0] >= up + 0.2 and r[1] <= down - 0.2 and r[3] == 200
                      and not r[4]]
            if inside and not any(name in (r[5] | r[6]) for r in inside):
                missed.append(name)
    lifetimes = sum(1 for s in objs.life.values() for x in s if x[1] is not None)
    # How sharp the stale check was: removals with a scrape starting within 0.3 s after them.
    starts = sorted(r[0] for r in rows if r[3] == 200 and not r[4])
    sharp = sum(1 for s in objs.life.values() for _, down in s if down is not None and
                any(down <= t <= down + 0.3 for t in starts))
    sightings = sum(len(r[5] | r[6]) for r in rows)
    check(not stale, "no scrape started after a disk/netdev was gone still had its series",
          "%d stale, first: %s" % (len(stale), stale[:3]))
    check(not missed, "every disk/netdev alive during a whole scrape was in it",
          "%d missed, first: %s" % (len(missed), missed[:3]))
    check(not leftovers, "after the churn stopped, no series of churned objects", str(leftovers))

    # Resources: settled = the 10 s before `settle`; final = the last 10 s.
    end = samples[-1]["t"] if samples else 0
    table = []
    # RSS never shrinks much, so its maximum; fds and threads also count scrapes in flight at
    # the sample, so their minimum over the window, the level a leak would raise.
    for key, slack, unit, pick in (("rss", RSS_SLACK, "MiB", max), ("fds", FD_SLACK, "", min),
                                   ("threads", THREAD_SLACK, "", min)):
        s = window(samples, settle - 10, settle, key, pick)
        f = window(samples, end - 10, end + 1, key, pick)
        lo = min(x[key] for x in samples)
        hi = max(x[key] for x in samples)
        ok = s is not None and f is not None and f <= s + slack
        div = 2**20 if unit else 1
        table.append(("%s (%s)" % (key, pick.__name__), lo / div, s / div if s else 0,
                      f / div if f else 0, hi / div, "+%g%s" % (slack / div, unit)))
        check(ok, "%s within bound of settled" % key, "settled %s final %s" % (s, f))
    # Threads in flight are bounded too: one per open connection (the web server's thread per
    # connection; it answers Connection: close, so a scraper's last connection thread may still
    # be ending as its next one starts: 2 per scraper) and one per collector at most (a scrape
    # that finds its collector running waits for that run instead of starting another).
    cap = min(x["threads"] for x in samples) + 2 * SCRAPERS + n_collectors
    check(max(x["threads"] for x in samples) <= cap,
          "threads never above the idle level + %d connections + %d collectors (%d)" % (
              2 * SCRAPERS, n_collectors, cap), "max %d" % max(x["threads"] for x in samples))
    for name in sorted(set(k for x in samples for k in x["maps"])):
        vals = [x["maps"][name] for x in samples if x["maps"].get(name) is not None]
        s = max((x["maps"][name] for x in samples if settle - 10 <= x["t"] < settle
                 and x["maps"].get(name) is not None), default=None)
        f = max((x["maps"][name] for x in samples if x["t"] >= end - 10
                 and x["maps"].get(name) is not None), default=None)
        if name == "block_hists (all disks)":  # other users' disks: shown, not bounded
            table.append(("map " + name, min(vals), s or 0, f or 0, max(vals), "-"))
            continue
        table.append(("map " + name, min(vals), s or 0, f or 0, max(vals), "+%d" % MAP_SLACK))
        check(s is not None and f is not None and f <= s + MAP_SLACK,
              "eBPF map %s entries within bound of settled" % name, "settled %s final %s" % (s, f))

    log_lines = open(log_path).read().splitlines()
    noisy = [l for l in log_lines if re.search(r"level=(warn|error)", l)
             and not any(re.search(p, l) for p, _ in EXPECTED_WARNINGS)]
    check(not noisy, "no warn/error line in the exporter's log",
          "%d, first: %s" % (len(noisy), noisy[:2]))
    check(rc == 0 and term_s < 5, "SIGTERM: exit 0 within 5 s", "rc %s after %.2f s" % (rc, term_s))

    print("\nsoak summary: %.0f s (settle %.0f s), machine: %d CPUs, load %s" % (
        elapsed, settle, os.cpu_count(), open("/proc/loadavg").read().split()[0]))
    print("  scrapes %d (%.1f/s), loop disks created+removed %d (%d I/Os), netns+veth %d, "
          "object lifetimes %d" % (len(rows), rate, counts["loops"], counts["loop_ios"],
                                   counts["netns"], lifetimes))
    print("  removals followed by a scrape within 0.3 s: %d; disk/netdev series sets seen: %d" % (
        sharp, sightings))
    print("  %-28s %10s %10s %10s %10s %8s" % ("scrape", "n", "p50 ms", "p99 ms", "max ms", ""))
    for v, d in sorted(by_variant.items()):
        d = sorted(d)
        print("  %-28s %10d %10.1f %10.1f %10.1f" % (v, len(d), 1e3 * statistics.median(d),
                                                      1e3 * d[int(0.99 * (len(d) - 1))], 1e3 * d[-1]))
    print("  %-28s %10s %10s %10s %10s %8s" % ("resource", "min", "settled", "final", "max", "bound"))
    for name, lo, s, f, hi, b in table:
        print("  %-28s %10.1f %10.1f %10.1f %10.1f %8s" % (name, lo, s, f, hi, b))
    print("  (settled: over %.0f-%.0f s; final: over the last 10 s; MiB for rss)" % (
        max(0, settle - 10), settle))
    failed = [c for c in checks if not c[0]]
    for ok, what, detail in checks:
        print("%s %s%s" % ("ok  " if ok else "FAIL", what, "" if ok else ": " + detail))
    print("soak: %s (%d checks, %d failed); log %s" % ("PASS" if not failed else "FAIL",
                                                       len(checks), len(failed), log_path))
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        stop.set()
        for i in range(NETNS_POOL if OWNED else 0):
            subprocess.run(["ip", "netns", "del", "nvsk-ns%d" % i], stderr=subprocess.DEVNULL)
        for i in POOL:  # only after an interrupted churn are any left
            if os.path.exists("/sys/block/loop%d" % i):
                subprocess.run(["losetup", "-d", "/dev/loop%d" % i], stderr=subprocess.DEVNULL)
                try:
                    ctl = os.open("/dev/loop-control", os.O_RDWR)
                    time.sleep(0.1)
                    fcntl.ioctl(ctl, LOOP_CTL_REMOVE, i)
                    os.close(ctl)
                except OSError:
                    pass
