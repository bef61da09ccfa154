#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target under OUT/<target>/, from tests/fixtures.

   tests/fuzz/seeds.py OUT      (run from the repository root; tests/fuzz/run.sh calls it)
"""
import glob
import os
import struct
import sys

out = sys.argv[1]


def put(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name.replace('/', '_')), 'wb') as f:
        f.write(data)


def read(path):
    with open(path, 'rb') as f:
        return f.read()


# rdma_netlink_fuzz: every recorded reply alone (mode 0), and each kernel's replies in the order
# the collector asks for them (mode 1), so the fuzzer starts from a complete real scrape.
order = ['get', 'port_get-d0-p1', 'stat_get_status-d0-p1', 'stat_get-d0-p1', 'res_qp_get-d0',
         'res_cm_id_get-d0', 'stat_get_qp-d0', 'res_get']
for kdir in sorted(glob.glob('tests/fixtures/netlink/*/')):
    k = os.path.basename(kdir.rstrip('/'))
    for path in sorted(glob.glob(kdir + '*.bin')):
        put('rdma_netlink_fuzz', 'one-%s-%s' % (k, os.path.basename(path)), b'\0' + read(path))
    seq = b'\1'
    for name in order:
        data = read(os.path.join(kdir, name + '.bin'))
        seq += struct.pack('<H', len(data)) + data
    put('rdma_netlink_fuzz', 'scrape-%s' % k, seq)

# text_fuzz: the procfs and ethtool text fixtures, and sysfs values of every kind.
for path in glob.glob('tests/fixtures/procfs/net/*') + glob.glob('tests/fixtures/ethtool/*/*'):
    if os.path.isfile(path) and not path.endswith('.md'):
        put('text_fuzz', path, read(path))
for i, v in enumerate([b'0\n', b'18446744073709551615\n', b'18446744073709551616', b'-1\n',
                       b'N/A (no PMA)\n', b'0x1f\n', b' 12 \n', b'100 Gb/sec (4X EDR)\n',
                       b'fe80:0000:0000:0000:0000:5eff:fe10:0001\n', b'4: ACTIVE\n']):
    put('text_fuzz', 'value-%d' % i, v)


# sysfs_tree_fuzz: records (kind, path, contents) as sysfs_tree_fuzz.cc reads them; one seed per
# device, each with every symlink of the fixture tree (sysfs is made of them).
def record(kind, rel, data):
    rel = rel.encode()
    return struct.pack('<BB', kind, len(rel)) + rel + struct.pack('<H', len(data)) + data


def tree(prefix, root, keep):
    recs = b''
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            if len(prefix + rel) > 255:
                continue
            if os.path.islink(full):
                recs += record(1, prefix + rel, os.readlink(full).encode())
            elif os.path.isfile(full) and keep(rel):
                recs += record(0, prefix + rel, read(full)[:4096])
    return recs


groups = [os.path.basename(p) for p in glob.glob('tests/fixtures/sysfs/class/infiniband/*')]
groups += ['nvme']
for g in groups:
    put('sysfs_tree_fuzz', 'sysfs-' + g,
        tree('sys/', 'tests/fixtures/sysfs', lambda rel, g=g: ('/%s/' % g) in '/' + rel + '/'))
put('sysfs_tree_fuzz', 'configfs-nvmet', tree('cfg/', 'tests/fixtures/configfs', lambda rel: True))

# ethtool_fuzz: the answers of a driver with a stable count, and of one whose count changes.
put('ethtool_fuzz', 'stable', bytes([1, 1] + [0x41] * 60 + [1, 1, 1, 3, 1, 1, 3] +
                                     list(b'rx_packets'.ljust(32, b'\0')) * 3 +
                                     [1, 1, 3] + [7] * 24))
put('ethtool_fuzz', 'grows', bytes([1, 0, 1, 1, 1, 2, 1, 0, 5, 1, 1, 1, 5, 1, 1, 5] + [0x62] * 200))


# sock_diag_fuzz: a SOCK_DIAG_BY_FAMILY dump reply of two sockets and NLMSG_DONE.
def nlmsg(mtype, payload, seq=1, flags=2):
    msg = struct.pack('<IHHII', 16 + len(payload), mtype, flags, seq, 0) + payload
    return msg + b'\0' * (-len(msg) % 4)


def rta(rtype, payload):
    a = struct.pack('<HH', 4 + len(payload), rtype) + payload
    return a + b'\0' * (-len(a) % 4)


def diag(sport, dport, retrans):
    msg = struct.pack('<BBBB', 2, 1, 0, 0) + struct.pack('>HH', sport, dport) + b'\0' * 32
    msg += struct.pack('<IIIIIIIII', 0, 0, 0, 0, 0, 0, 0, 0, 0)
    info = bytearray(232)
    struct.pack_into('<I', info, 100, retrans)
    return nlmsg(20, msg + rta(2, bytes(info)))


put('sock_diag_fuzz', 'dump', diag(4420, 51000, 3) + diag(51001, 4420, 0) + nlmsg(3, b'\0' * 4))
put('sock_diag_fuzz', 'error', nlmsg(2, struct.pack('<i', -22) + b'\0' * 16))

# dcb_fuzz: an RTM_GETDCB reply to DCB_CMD_IEEE_GET with a PFC attribute, and one without.
pfc = struct.pack('<BBBxH2x', 8, 0x08, 0, 0) + struct.pack('<8Q', 0, 0, 0, 1234, 0, 0, 0, 0) + \
    struct.pack('<8Q', 0, 0, 0, 567, 0, 0, 0, 0)
dcbmsg = struct.pack('<BBH', 0, 21, 0)
put('dcb_fuzz', 'pfc', nlmsg(78, dcbmsg + rta(1, b'eth0\0') + rta(13 | 0x8000, rta(2, pfc)), 0))
put('dcb_fuzz', 'no-pfc', nlmsg(78, dcbmsg + rta(13, b''), 0))
put('dcb_fuzz', 'error', nlmsg(2, struct.pack('<i', -95) + b'\0' * 16, 0))

# config_fuzz: byte 0 even: the exporter's config; odd: the web config.
for path in glob.glob('deploy/**/*.yml', recursive=True) + glob.glob('deploy/**/*.yaml',
                                                                      recursive=True):
    if 'prometheus' not in path:
        put('config_fuzz', path, b'\0' + read(path))
put('config_fuzz', 'collectors', b'\0collectors:\n  rdma: true\n  tcp: false\nrdma:\n  devices:\n'
    b'    include: "mlx5_.*"\n    exclude: "mlx5_9"\nnvme_host:\n  per_namespace: true\n')
put('config_fuzz', 'web', b'\1basic_auth_users:\n  alice: $2y$10$abc\nhttp_server_config:\n'
    b'  headers:\n    X-Frame-Options: deny\ntls_server_config:\n  cert_file: a.crt\n'
    b'  key_file: a.key\n  min_version: TLS12\n')

# http_fuzz: byte 0 bit 0 picks the server with basic auth.
for i, req in enumerate([
        b'GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text;version=1.0.0;'
        b'q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1\r\nAccept-Encoding: gzip\r\n'
        b'X-Prometheus-Scrape-Timeout-Seconds: 9.5\r\n\r\n',
        b'GET / HTTP/1.0\r\n\r\n',
        b'HEAD /-/ready HTTP/1.1\r\nHost: x\r\nAccept-Encoding: deflate;q=1, gzip;q=0\r\n\r\n',
        b'POST /metrics?x=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc',
        b'GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Basic dXNlcjpwYXNz\r\n'
        b'Accept-Encoding: br, GZIP\r\n\r\n']):
    put('http_fuzz', 'req-%d' % i, b'\0' + req)
    put('http_fuzz', 'auth-req-%d' % i, b'\1' + req)

# writers_fuzz: any bytes make a model (FuzzedDataProvider: strings from the front, numbers
# from the back), so seeds are the bytes the writers must escape and fixture text, with a tail
# of numbers that asks for several families and series.
tail = bytes(range(255, 0, -7))
for i, text in enumerate([
        b'say "hi" \\ there\nnext\\n\\"}{,=',
        '\u00e9t\u00e9 \U0001f4a9 \t\r \u2028'.encode() + b'\xff\xfe\xc3',
        read('tests/e2e/golden.prom')[:2048],
        b'\x00' * 64, b'\xff' * 256]):
    put('writers_fuzz', 'seed-%d' % i, text + tail)
