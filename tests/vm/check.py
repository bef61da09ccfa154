#!/usr/bin/env python3
"""Host-side checks of a VM scenario's results (python3 stdlib only).

Usage: check.py --scenario NAME RESULTS_DIR

RESULTS_DIR is what the guest wrote through 9p: scenario.env (what it configured), metrics-*.prom
(the exporter's /metrics), sysfs-*.txt (the kernel's rdma hw_counters read right before and after a
scrape), fio-*.json, series.txt (pathfault's and faults' timed scrapes). Every check compares the
exporter's output with what the scenario configured or what the kernel reported; every saved text
scrape also passes `promtool check metrics`. Prints one line per check and exits 1 if any failed.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree (run.sh runs this from there)
from check_explain import ExplainChecks  # noqa: E402
from check_faults import FaultsChecks  # noqa: E402
from check_kubelet import KubeletChecks  # noqa: E402
from check_lifecycle import LifecycleChecks  # noqa: E402
from check_multipath import MultipathChecks  # noqa: E402
from check_native import NativeChecks  # noqa: E402
from check_record import RecordChecks  # noqa: E402
from check_stages import StagesChecks, kernel_short, no_module_btf  # noqa: E402

CONTROLLER_STATES = ["new", "live", "resetting", "connecting", "deleting", "deleting_noio", "dead"]
# rxe hw_counters that NVMe/RDMA I/O must move (sent/received packets, SENDs of command capsules).
IO_COUNTERS = ["sent_pkts", "rcvd_pkts", "rdma_sends", "rdma_recvs"]
COLLECTORS = ["rdma", "nvme_host", "nvmet", "rdma_netlink"]
# hw_counters files that are settings, not counters, and that the exporter leaves out.
NOT_COUNTERS = {"lifespan"}

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$')
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


def parse_labels(text):
    labels, pos = {}, 0
    while pos < len(text):
        m = _LABEL.match(text, pos)
        if not m:
            raise ValueError('bad labels: %r' % text)
        labels[m.group(1)] = re.sub(r'\\(.)', lambda e: {'n': '\n'}.get(e.group(1), e.group(1)),
                                    m.group(2))
        pos = m.end()
    return labels


def parse_metrics(text):
    """Prometheus text format -> list of (name, labels, value)."""
    samples = []
    for line in text.splitlines():
        if not line.strip() or line.startswith('#'):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise ValueError('bad sample line: %r' % line)
        samples.append((m.group(1), parse_labels(m.group(2) or ''), float(m.group(3))))
    return samples


class Env(dict):
    """scenario.env; a key the guest never wrote reads as a value no label has, so checks fail."""

    def __missing__(self, key):
        return '<%s unset>' % key


class Checker(StagesChecks, FaultsChecks, NativeChecks, RecordChecks, LifecycleChecks,
              MultipathChecks, KubeletChecks, ExplainChecks):
    def __init__(self, directory):
        self.dir = directory
        self.failures = 0
        self.env = Env()
        path = os.path.join(directory, 'scenario.env')
        if os.path.exists(path):
            for line in open(path):
                key, _, value = line.rstrip('\n').partition('=')
                self.env[key] = value

    parse = staticmethod(parse_metrics)  # for the mixins

    def check(self, ok, what, detail=''):
        print('%s %s%s' % ('ok  ' if ok else 'FAIL', what, (': ' + detail) if detail and not ok else ''))
        if not ok:
            self.failures += 1
        return ok

    def metrics(self, name):
        path = os.path.join(self.dir, 'metrics-%s.prom' % name)
        if not self.check(os.path.exists(path) and os.path.getsize(path) > 0,
                          'scrape %s present' % name, path):
            return []
        try:
            return parse_metrics(open(path).read())
        except ValueError as e:
            self.check(False, 'scrape %s parses' % name, str(e))
            return []

    @staticmethod
    def find(samples, name, **labels):
        """Samples of NAME whose labels include LABELS (other labels are not constrained)."""
        return [s for s in samples if s[0] == name and all(s[1].get(k) == v for k, v in labels.items())]

    def expect_one(self, samples, where, name, value=1.0, **labels):
        """Exactly one series of NAME with LABELS (among others), with VALUE unless VALUE is None."""
        found = self.find(samples, name, **labels)
        desc = '%s %s{%s}' % (where, name, ','.join('%s="%s"' % kv for kv in labels.items()))
        if len(found) != 1:
            self.check(False, desc, 'found %d; %s series: %s' % (
                len(found), name, [s[1] for s in self.find(samples, name)][:5]))
            return None
        if value is None:
            self.check(True, desc)
        else:
            self.check(found[0][2] == value, desc + ' == %g' % value, 'value %g' % found[0][2])
        return found[0]

    def expect_none(self, samples, where, *names):
        for name in names:
            self.check(not self.find(samples, name), '%s has no %s' % (where, name),
                       str([s[1] for s in self.find(samples, name)][:3]))

    def collectors_ok(self, samples, where):
        for c in COLLECTORS:
            self.expect_one(samples, where, 'nvmeof_exporter_collector_success', 1.0, collector=c)
        # Any other enabled collector (pfc, tcp, bpf...) must not fail on a real kernel either.
        failed = [s[1].get('collector') for s in self.find(samples, 'nvmeof_exporter_collector_success')
                  if s[2] != 1]
        self.check(not failed, '%s no collector failed' % where, 'failed: %s' % failed)

    def sysfs(self, name):
        values = {}
        path = os.path.join(self.dir, 'sysfs-%s.txt' % name)
        if os.path.exists(path):
            for line in open(path):
                dev, port, counter, value = line.split()
                values[(dev, port, counter)] = int(value)
        return values

    # ---- the parts of the exporter's output checked against the scenario ----
    def rdma_port(self, samples, where):
        e = self.env
        self.expect_one(samples, where, 'nvmeof_rdma_port_info', 1.0, rdma_device=e['RXE_DEV'], rdma_port=e['RXE_PORT'],
                        netdev=e['RXE_NETDEV'], link_layer='Ethernet')
        states = self.find(samples, 'nvmeof_rdma_port_state', rdma_device=e['RXE_DEV'], rdma_port=e['RXE_PORT'])
        current = [s[1].get('state', '') for s in states if s[2] == 1]
        self.check(len(current) == 1 and 'active' in current[0].lower(),
                   '%s nvmeof_rdma_port_state of %s/%s is ACTIVE' % (where, e['RXE_DEV'], e['RXE_PORT']),
                   'states set: %s' % current)
        self.rdma_mtu(samples, where)

    def rdma_mtu(self, samples, where):
        """The netdev MTU as the guest read it, and the RoCE path MTU derived from it (the
        kernel's iboe_get_mtu), equal to what ibv_devinfo reports as rxe0's active_mtu."""
        e = self.env
        mtu, active = e['VETH_MTU'], e['RXE_ACTIVE_MTU']
        if not self.check(mtu.isdigit() and active.isdigit(), '%s guest read the MTUs' % where,
                          'VETH_MTU=%s RXE_ACTIVE_MTU=%s' % (mtu, active)):
            return
        want = next((m for m in (4096, 2048, 1024, 512, 256) if int(mtu) >= m + 96), 0)
        self.expect_one(samples, where, 'nvmeof_rdma_netdev_mtu_bytes', float(mtu),
                        netdev=e['RXE_NETDEV'])
        self.expect_one(samples, where, 'nvmeof_rdma_roce_path_mtu_bytes', float(want),
                        rdma_device=e['RXE_DEV'], rdma_port=e['RXE_PORT'], netdev=e['RXE_NETDEV'])
        self.check(int(active) == want, '%s ibv_devinfo active_mtu %s equals the RoCE path MTU %d'
                   % (where, active, want))

    def rdma_counters_bracketed(self, samples, name):
        """Each exported hw_counter lies between the kernel's values read before and after."""
        pre, post = self.sysfs(name + '-pre'), self.sysfs(name + '-post')
        if not self.check(bool(pre) and bool(post), 'sysfs hw_counters around scrape %s' % name):
            return
        bad, seen = [], 0
        for (dev, port, counter), before in pre.items():
            if counter in NOT_COUNTERS:
                continue
            found = self.find(samples, 'nvmeof_rdma_hw_counters_total', rdma_device=dev, rdma_port=port, counter=counter)
            if not found:
                bad.append('%s/%s %s missing' % (dev, port, counter))
                continue
            seen += 1
            value = found[0][2]
            if not before <= value <= post.get((dev, port, counter), before):
                bad.append('%s/%s %s=%g not in [%d, %d]' % (dev, port, counter, value, before,
                                                             post.get((dev, port, counter), -1)))
        self.check(not bad, 'scrape %s: all %d nvmeof_rdma_hw_counters_total match the kernel' % (name, seen),
                   '; '.join(bad[:6]))

    def rdma_counters_increased(self, before, after):
        e = self.env
        for counter in IO_COUNTERS:
            lab = dict(rdma_device=e['RXE_DEV'], rdma_port=e['RXE_PORT'], counter=counter)
            b, a = self.find(before, 'nvmeof_rdma_hw_counters_total', **lab), self.find(after, 'nvmeof_rdma_hw_counters_total', **lab)
            if self.check(b and a, 'nvmeof_rdma_hw_counters_total{counter="%s"} in both scrapes' % counter):
                self.check(a[0][2] > b[0][2], 'nvmeof_rdma_hw_counters_total{counter="%s"} increased during I/O' % counter,
                           '%g -> %g' % (b[0][2], a[0][2]))

    def controller(self, samples, where, state='live'):
        e = self.env
        self.expect_one(samples, where, 'nvmeof_controller_info', 1.0, controller=e['CONTROLLER'],
                        transport=e['TRANSPORT'], traddr=e['TRADDR'], trsvcid=e['TRSVCID'],
                        nqn=e['SUBSYSNQN'])
        series = {s[1].get('state'): s[2] for s in self.find(samples, 'nvmeof_controller_state',
                                                            controller=e['CONTROLLER'])}
        self.check(set(CONTROLLER_STATES) <= set(series), '%s nvmeof_controller_state has every state' % where,
                   'states: %s' % sorted(series))
        self.check(series.get(state) == 1 and sum(series.values()) == 1,
                   '%s nvmeof_controller_state{controller="%s"} is %s (one-hot)' % (where, e['CONTROLLER'], state),
                   str(series))

    def target(self, samples, where):
        e = self.env
        self.expect_one(samples, where, 'nvmeof_target_subsystem_info', 1.0, nqn=e['SUBSYSNQN'])
        self.expect_one(samples, where, 'nvmeof_target_namespace_info', 1.0, nqn=e['SUBSYSNQN'],
                        nsid=e['NSID'], device_path=e['DEVICE_PATH'])
        self.expect_one(samples, where, 'nvmeof_target_port_info', 1.0, nvmet_port=e['PORTID'], trtype=e['TRANSPORT'],
                        traddr=e['TRADDR'], trsvcid=e['TRSVCID'], adrfam=e['ADRFAM'])
        self.expect_one(samples, where, 'nvmeof_target_port_subsystem', 1.0, nvmet_port=e['PORTID'],
                        nqn=e['SUBSYSNQN'])

    def fio(self, name):
        path = os.path.join(self.dir, 'fio-%s.json' % name)
        try:
            text = open(path).read()
            job = json.loads(text[text.index('{'):])['jobs'][0]  # fio may print notes before the JSON
        except (OSError, ValueError, KeyError, IndexError) as e:
            self.check(False, 'fio %s result' % name, str(e))
            return
        done = job['read']['io_bytes'] + job['write']['io_bytes']
        self.check(job['error'] == 0 and done > 0, 'fio %s: no error, %d bytes, %.0f IOPS' % (
            name, done, job['read']['iops'] + job['write']['iops']), 'error %s' % job['error'])

    def promtool_all(self):
        """`promtool check metrics` on every text scrape the scenario saved (issue 13: lint-clean
        on real kernels too). No problem is tolerated: none occurs today, so any is news."""
        files = sorted(glob.glob(os.path.join(self.dir, 'metrics-*.prom')))
        if not files:
            return
        if not self.check(shutil.which('promtool') is not None,
                          'promtool present (Debian package prometheus)', 'apt-get install prometheus'):
            return
        bad = []
        for path in files:
            with open(path, 'rb') as f:
                r = subprocess.run(['promtool', 'check', 'metrics'], stdin=f, capture_output=True)
            if r.returncode != 0 or r.stdout.strip() or r.stderr.strip():
                bad.append('%s: %s' % (os.path.basename(path),
                                       (r.stdout + r.stderr).decode(errors='replace').strip()[:300]))
        self.check(not bad, 'promtool check metrics clean on all %d saved scrapes' % len(files),
                   ' | '.join(bad[:4]))

    def exporter_alive(self):
        path = os.path.join(self.dir, 'exporter-alive')
        self.check(os.path.exists(path) and open(path).read().strip() == '1', 'exporter alive at the end')

    # ---- scenarios ----
    def io_scenario(self, rdma_io):
        before, after = self.metrics('before-io'), self.metrics('after-io')
        for where, samples in (('before-io', before), ('after-io', after)):
            self.collectors_ok(samples, where)
            self.rdma_port(samples, where)
            self.rdma_counters_bracketed(samples, where)
            self.controller(samples, where)
            self.target(samples, where)
        if rdma_io:
            self.rdma_counters_increased(before, after)
        self.fio('io')
        self.exporter_alive()

    def scenario_rdma(self):
        self.io_scenario(rdma_io=True)

    def scenario_tcp(self):
        # TCP traffic does not pass through rxe; rxe only has to be visible.
        self.io_scenario(rdma_io=False)

    def scenario_icount(self):
        """The icount bench's runs (tests/bench/icount_report.py reads the numbers): every run
        of the scenario's modes left a positive mean latency."""
        rows = []
        path = os.path.join(self.dir, 'icount.txt')
        if os.path.exists(path):
            rows = [l.split() for l in open(path) if l.strip()]
        want = (len(self.env.get('MODES', '').split()) * int(self.env.get('RUNS_PER_MODE') or 0) +
                int(self.env.get('STATS_RUNS') or 0))
        bad = [' '.join(r) for r in rows if len(r) != 5 or float(r[4]) <= 0]
        self.check(rows and not bad and len(rows) == want,
                   'icount.txt: %d runs with a positive mean latency (want %d)' % (len(rows), want),
                   '; '.join(bad[:3]))

    def scenario_soak(self):
        """The guest's side of the soak (tests/soak/vm_soak.sh; Prometheus's side is
        tests/soak/vm_report.py): every round came up, ran fio without an error, churned and
        flapped, and unloaded every module it loaded; the exporter lived to the end."""
        path = os.path.join(self.dir, 'rounds.tsv')
        rows = [l.split() for l in open(path)][1:] if os.path.exists(path) else []
        want = int(self.env.get('SOAK_SECONDS', 0)) // int(self.env.get('ROUND_SECONDS', 1))
        self.check(len(rows) >= want, '%d rounds (want >= %d)' % (len(rows), want))
        mods = 'nvme_tcp,nvme_rdma,nvme_fabrics,nvmet_tcp,nvmet_rdma,rdma_rxe,null_blk'
        for r in rows:
            self.check(len(r) == 9 and r[4] == '0' and r[8] == '0' and r[7] == mods and
                       int(r[5]) > 0 and int(r[6]) > 0 and int(r[3]) > 0,
                       'round %s: up, fio without error, %s flaps, %s connects of B, unloaded %s'
                       % (r[0], r[5] if len(r) > 5 else '?', r[6] if len(r) > 6 else '?',
                          r[7] if len(r) > 7 else '?'), ' '.join(r))
        self.exporter_alive()

    def scenario_hotload(self):
        empty = self.metrics('no-modules')
        self.collectors_ok(empty, 'no-modules')
        self.expect_none(empty, 'no-modules', 'nvmeof_rdma_port_info', 'nvmeof_rdma_hw_counters_total', 'nvmeof_controller_info',
                         'nvmeof_target_subsystem_info', 'nvmeof_target_port_info')
        target_only = self.metrics('target-only')
        self.collectors_ok(target_only, 'target-only')
        self.rdma_port(target_only, 'target-only')
        self.target(target_only, 'target-only')
        self.expect_none(target_only, 'target-only', 'nvmeof_controller_info')
        self.io_scenario(rdma_io=self.env.get('TRANSPORT') == 'rdma')
        # NVMe-oF stage hooks: none before the modules, attached once they loaded, and both
        # roles' commands counted and timed through the I/O.
        self.expect_none(empty, 'no-modules', 'nvmeof_commands_total')
        hooks = [s for s in self.find(empty, 'nvmeof_exporter_bpf_hook_attached')
                 if s[1]['hook'].startswith(('nvme_', 'nvmet_'))]
        self.check(not hooks, 'no-modules: no NVMe-oF hook listed before its module loads', str(hooks[:3]))
        after = self.metrics('after-io')
        for hook in ('nvme_setup_cmd', 'nvme_complete_rq', 'nvme_rq_end', 'nvmet_req_init', 'nvmet_req_complete'):
            self.expect_one(after, 'after-io', 'nvmeof_exporter_bpf_hook_attached', 1.0, hook=hook)
        fio = json.load(open(os.path.join(self.dir, 'fio-io.json')))['jobs'][0]
        ios = fio['read']['total_ios'] + fio['write']['total_ios']
        before = self.metrics('before-io')
        for role in ('host', 'target'):
            n = sum(v for name, l, v in after if name == 'nvmeof_commands_total' and l['role'] == role) - \
                sum(v for name, l, v in before if name == 'nvmeof_commands_total' and l['role'] == role)
            self.check(abs(n - ios) <= 0.01 * ios, 'hot-loaded %s hooks counted fio\'s %d I/Os' % (role, ios),
                       'counted %d' % n)
            timed = [s for s in self.find(after, 'nvmeof_command_latency_seconds_count', role=role) if s[2] > 0]
            self.check(bool(timed), 'hot-loaded %s commands are timed' % role)
        pids = open(os.path.join(self.dir, 'exporter.pid')).read().split() if os.path.exists(
            os.path.join(self.dir, 'exporter.pid')) else []
        self.check(len(pids) == 1, 'one exporter process served the whole run', str(pids))
        self.record_late(ios)
        # The host transport with no controller: unloadable with the exporter running, and if its
        # stage hooks attached, released first (the grace of nvmeof_loader.cc).
        out = open(os.path.join(self.dir, 'rmmod-unused.txt')).read() if os.path.exists(
            os.path.join(self.dir, 'rmmod-unused.txt')) else ''
        m = re.search(r'module=(\w+)', out)
        self.check('rc=0 ' in out and m, 'rmmod of the transport without a controller, exporter running',
                   out.strip().replace('\n', ' | '))
        log = open(os.path.join(self.dir, 'exporter.log')).read() if os.path.exists(
            os.path.join(self.dir, 'exporter.log')) else ''
        if m and re.search(r'msg="eBPF hook" hook="%s_' % m.group(1), log):
            self.check('hooks released" module="%s"' % m.group(1) in log,
                       '%s hooks attached with no controller were released (grace)' % m.group(1))

    def record_late(self, ios):
        """`record -s 1` started with only nvmet (and nvme_core) loaded: the transport drivers'
        hooks attached while it ran, so both files hold fio's commands, with their host NQN."""
        log = os.path.join(self.dir, 'record-late.log')
        if self.env.get('NO_MODULE_BTF') == '1':  # 5.10: record cannot attach nvmet's hooks
            said = open(log, errors='replace').read() if os.path.exists(log) else ''
            code = os.path.join(self.dir, 'record-late-exit-code')
            rc = open(code).read().strip() if os.path.exists(code) else 'none'
            self.check(rc.isdigit() and rc != '0' and 'nvmet_req_init did not attach' in said,
                       'SKIP late record on %s: exits non-zero (%s) saying the target hook '
                       'nvmet_req_init did not attach (no module BTF before 5.11)'
                       % (self.env.get('KERNEL'), rc), said[-400:])
            return
        late = re.findall(r'hook attached" hook="([a-z_]+)"', open(log).read()) if os.path.exists(log) else []
        self.check(any(h.startswith('nvme_') for h in late) and any(h.startswith('nvmet_') for h in late),
                   'late record: host and target transport hooks attached while it ran', str(late))
        code = os.path.join(self.dir, 'record-late-exit-code')
        self.check(os.path.exists(code) and open(code).read().strip() == '0', 'late record exited 0')
        for role in ('host', 'target'):
            path = os.path.join(self.dir, 'late.%s.jsonl' % role)
            lines = open(path).read().splitlines() if os.path.exists(path) else []
            recs = [json.loads(l) for l in lines[1:-1]]
            end = json.loads(lines[-1]) if lines else {}
            io = [r for r in recs if r.get('op') in ('read', 'write')]
            # The kernel skips a program's run that would nest on one CPU (a host completion in
            # softirq over the target's backing completion in a kworker, both block_rq_complete):
            # 1-11 of ~2,200-5,300 host commands with three VMs on the 2-core host (none alone).
            # `record` counts every skipped run as lost (recursion_misses: a skipped stamp loses
            # a point, not the record, so lost >= records missing); ring and table drops too.
            # So: lost counted, at most 2%, and fio's commands all in the file or in `lost`.
            lost = end.get('lost', -1)
            self.check(end.get('end') and 0 <= lost <= max(1, ios // 50),
                       'late record: %s file ended, lost at most 2%% (%s)' % (role, lost), str(end))
            # fio's commands and a few probing reads around it.
            self.check(ios <= len(io) + max(lost, 0) and len(io) <= ios * 1.01 + 64,
                       'late record: %s file holds fio\'s %d commands, or counts them lost (%d + %d)'
                       % (role, ios, len(io), lost))
            nqns = set(r.get('hostnqn', '') for r in io)
            self.check(len(nqns) == 1 and '' not in nqns, 'late record: %s records carry the host NQN' % role,
                       str(sorted(nqns)))

    def scenario_pathfault(self):
        """series.txt: '# scrape T rc=N sysfs=STATE' then that scrape's controller_state lines."""
        path = os.path.join(self.dir, 'series.txt')
        if not self.check(os.path.exists(path), 'series.txt present'):
            return
        scrapes, cur = [], None
        for line in open(path):
            header = re.match(r'^# scrape (\S+) rc=(\d+) sysfs=(.*)$', line)
            if header:
                cur = {'t': float(header.group(1)), 'rc': int(header.group(2)), 'sysfs': header.group(3),
                       'state': None}
                scrapes.append(cur)
            elif cur is not None and line.strip():
                for name, labels, value in parse_metrics(line):
                    if name == 'nvmeof_controller_state' and labels.get('controller') == self.env['CONTROLLER'] \
                            and value == 1:
                        cur['state'] = labels.get('state')
        failed = [s for s in scrapes if s['rc'] != 0]
        self.check(len(scrapes) >= 5, 'at least 5 timed scrapes', str(len(scrapes)))
        self.check(not failed, 'every timed scrape answered (%d)' % len(scrapes),
                   '%d failed, first at t=%s' % (len(failed), failed[0]['t'] if failed else ''))
        states = [s['state'] for s in scrapes]
        # Collapse repeats: the path must go live -> something else -> live.
        runs = [st for i, st in enumerate(states) if i == 0 or st != states[i - 1]]
        print('     controller state by scrape: %s' % ' -> '.join(str(r) for r in runs))
        print('     kernel (sysfs) state by scrape: %s' % ' -> '.join(
            str(s['sysfs']) for i, s in enumerate(scrapes) if i == 0 or s['sysfs'] != scrapes[i - 1]['sysfs']))
        first_down = next((i for i, st in enumerate(states) if st != 'live' and i > 0 and 'live' in states[:i]),
                          None)
        self.check(first_down is not None, 'state series leaves live after the fault', str(runs))
        if first_down is not None:
            self.check(states[first_down] in CONTROLLER_STATES,
                       'non-live state is a known state (%s)' % states[first_down])
            self.check('live' in states[first_down:], 'state series returns to live', str(runs))
        final = self.metrics('final')
        self.collectors_ok(final, 'final')
        self.controller(final, 'final')
        self.target(final, 'final')
        self.fio('io')
        self.exporter_alive()

    # ---- scenario netlink: the rdma_netlink collector against iproute2's rdma ----
    def rdma_json(self, name):
        path = os.path.join(self.dir, 'rdma-%s.json' % name)
        try:
            return json.loads(open(path).read())
        except (OSError, ValueError) as e:
            self.check(False, 'rdma JSON %s' % name, str(e))
            return []

    def netlink_bracketed(self, samples, where, kind, metric, key_label):
        """Each value `rdma -j {statistic,resource} show` printed for rxe0 right before and after
        the scrape brackets the exporter's value; the exporter has no series the kernel lacks."""
        e = self.env
        pre, post = self.rdma_json('%s-%s-pre' % (kind, where)), self.rdma_json('%s-%s-post' % (kind, where))
        skip = {'ifname', 'ifindex', 'port'}
        pick = [o for o in pre if o.get('ifname') == e['RXE_DEV'] and str(o.get('port', e['RXE_PORT'])) == e['RXE_PORT']]
        pick_post = [o for o in post if o.get('ifname') == e['RXE_DEV'] and str(o.get('port', e['RXE_PORT'])) == e['RXE_PORT']]
        if not self.check(len(pick) == 1 and len(pick_post) == 1, '%s rdma %s JSON has %s' % (where, kind, e['RXE_DEV'])):
            return {}
        labels = dict(rdma_device=e['RXE_DEV'])
        if kind == 'stat':
            labels['rdma_port'] = e['RXE_PORT']
        exported = {s[1][key_label]: s[2] for s in self.find(samples, metric, **labels)}
        bad, compared = [], {}
        for name, before in pick[0].items():
            if name in skip or not isinstance(before, int):
                continue
            after = pick_post[0].get(name, before)
            value = exported.get(name)
            compared[name] = (before, value, after)
            if value is None:
                bad.append('%s missing' % name)
            elif not min(before, after) <= value <= max(before, after):
                bad.append('%s=%g not in [%d, %d]' % (name, value, before, after))
        extra = sorted(set(exported) - set(compared))
        self.check(compared and not bad and not extra,
                   '%s: all %d %s{rdma_device="%s"} match `rdma %s show` (bracketed)' % (
                       where, len(compared), metric, e['RXE_DEV'], 'statistic' if kind == 'stat' else 'resource'),
                   '; '.join(bad[:6]) + (' extra: %s' % extra if extra else ''))
        return compared

    def netlink_qps(self, samples, where):
        """Per-QP mode: the QP table equals `rdma resource show qp`, owners and addresses come from
        `rdma resource show cm_id`, and each NVMe-oF queue shows up once on each side."""
        e = self.env
        qps, cm_ids = self.rdma_json('qp-%s' % where), self.rdma_json('cm_id-%s' % where)
        by_qpn = {c['lqpn']: c for c in cm_ids if 'lqpn' in c}
        want = {}
        for q in qps:
            if q.get('ifname') != e['RXE_DEV']:
                continue
            cm = by_qpn.get(q['lqpn'], {})
            want[str(q['lqpn'])] = (q['type'].lower(), q['state'].lower(), cm.get('comm', q.get('comm', '')),
                                    cm.get('src-addr', ''), cm.get('dst-addr', ''))
        got = {s[1]['qpn']: (s[1]['type'], s[1]['state'], s[1]['owner'], s[1]['src'], s[1]['dst'])
               for s in self.find(samples, 'nvmeof_rdma_netlink_qp_info', rdma_device=e['RXE_DEV'])}
        self.check(want and got == want, '%s: nvmeof_rdma_netlink_qp_info equals `rdma resource show qp/cm_id` (%d QPs)' % (
            where, len(want)), 'exporter %s vs rdma %s' % (sorted(got.items())[:4], sorted(want.items())[:4]))
        target = '%s:%s' % (e['TRADDR'], e['TRSVCID'])
        host = [q for q, v in got.items() if v[2] == 'nvme_rdma' and v[4] == target]
        tgt = [q for q, v in got.items() if v[2] == 'nvmet_rdma' and v[3] == target]
        self.check(str(len(host)) == e['QUEUE_COUNT'] and str(len(tgt)) == e['QUEUE_COUNT'],
                   '%s: %s NVMe-oF queues (sysfs queue_count) = nvme_rdma QPs to %s = nvmet_rdma QPs on it' % (
                       where, e['QUEUE_COUNT'], target), 'host %d, target %d' % (len(host), len(tgt)))

    def netlink_clean(self, samples, where):
        e = self.env
        self.expect_one(samples, where, 'nvmeof_exporter_collector_success', 1.0, collector='rdma_netlink')
        self.expect_one(samples, where, 'nvmeof_exporter_collector_skipped_series', 0.0, collector='rdma_netlink')
        self.expect_none(samples, where, 'nvmeof_exporter_rdma_netlink_request_failures')
        self.expect_one(samples, where, 'nvmeof_exporter_rdma_netlink_budget_exhausted', 0.0)
        self.expect_one(samples, where, 'nvmeof_exporter_rdma_netlink_qp_series_dropped', 0.0)
        self.expect_one(samples, where, 'nvmeof_rdma_netlink_device_info', 1.0, rdma_device=e['RXE_DEV'], protocol='roce')
        self.expect_one(samples, where, 'nvmeof_rdma_netlink_port_info', 1.0, rdma_device=e['RXE_DEV'], rdma_port=e['RXE_PORT'],
                        netdev=e['RXE_NETDEV'])
        # rxe has no optional counters and binds no kernel QP to a counter: none may appear.
        self.expect_none(samples, where, 'nvmeof_rdma_netlink_optional_stat_enabled', 'nvmeof_rdma_netlink_qp_stat_total')

    def scenario_netlink(self):
        stats = {}
        for where in ('idle', 'during-io', 'after-io'):
            samples = self.metrics(where)
            self.collectors_ok(samples, where)
            self.netlink_clean(samples, where)
            stats[where] = self.netlink_bracketed(samples, where, 'stat', 'nvmeof_rdma_netlink_port_stat_total', 'counter')
            res = self.netlink_bracketed(samples, where, 'res', 'nvmeof_rdma_resources', 'type')
            for name in ('sent_pkts', 'rdma_sends'):
                if name in stats[where]:
                    print('     %s %s: rdma statistic %d <= exporter %g <= %d' % ((where, name) + stats[where][name]))
            for name in ('qp', 'cq', 'mr', 'pd', 'cm_id'):
                if name in res:
                    print('     %s %s: rdma resource %d, exporter %g, %d' % ((where, name) + res[name]))
            self.netlink_qps(samples, where)
        for name in IO_COUNTERS:
            b, a = stats.get('idle', {}).get(name), stats.get('after-io', {}).get(name)
            if self.check(b and a and b[1] is not None and a[1] is not None, 'port stat %s in idle and after-io' % name):
                self.check(a[1] > b[1], 'nvmeof_rdma_netlink_port_stat_total{counter="%s"} increased during I/O' % name,
                           '%g -> %g' % (b[1], a[1]))
        final = self.metrics('final')  # after a QP bind attempt, which rxe refuses
        self.netlink_clean(final, 'final')
        self.netlink_bracketed(final, 'final', 'stat', 'nvmeof_rdma_netlink_port_stat_total', 'counter')
        self.netlink_bracketed(final, 'final', 'res', 'nvmeof_rdma_resources', 'type')
        self.netlink_qps(final, 'final')
        self.fio('io')
        self.exporter_alive()

    def scenario_smoke(self):
        """smoke.sh (CI on 5.10 and 7.2): per transport, around a randread of IOS I/Os, every
        collector succeeds, rxe0, both controllers and the target's subsystem and port are as
        configured, hw_counters match the kernel's, rdma netlink reports rxe0. eBPF: where it is
        available, host and target nvmeof_commands_total and the backing disk's
        nvmeof_block_requests_total rose by fio's I/O count and the host end to end counted
        them all (sample_every 1); where it is not, the exporter and `probe` say why: that is
        printed as a named skip, and it fails only when nothing names the reason. Before 5.11 (no
        module BTF) the target's hooks are the classic tracepoints (counted the same way) and
        `record` must fail saying which hook did not attach (a named skip)."""
        e = self.env
        ios = int(e.get('IOS') or 0)
        kernel = kernel_short(e.get('KERNEL', ''))
        no_btf = no_module_btf(e.get('KERNEL', ''))
        probe = os.path.join(self.dir, 'probe.txt')
        probe_text = open(probe, errors='replace').read() if os.path.exists(probe) else ''
        probe_reason = ' '.join(l.split(None, 5)[-1] for l in probe_text.splitlines()
                                if l.startswith('nvmet_req_init '))[:200]
        target_hooks = {}
        for scrape in ('rdma-after', 'tcp-after'):
            for _, l, v in self.find(self.metrics(scrape), 'nvmeof_exporter_bpf_hook_attached'):
                if l.get('hook') in ('nvmet_req_init', 'nvmet_req_complete'):
                    target_hooks[l['hook']] = (v, l.get('mechanism'))
        target_attached = len(target_hooks) == 2 and all(
            v == 1 and m != 'none' for v, m in target_hooks.values())
        target_hooks_missing_why = (
            len(target_hooks) == 2 and all(v != 1 or m == 'none' for v, m in target_hooks.values())
            and 'no BTF for module nvmet' in probe_reason)

        def delta(before, after, name, **labels):
            return sum(sign * v for scrape, sign in ((after, 1), (before, -1))
                       for n, l, v in scrape
                       if n == name and all(l.get(k) == val for k, val in labels.items()))

        last = []
        for t in ('rdma', 'tcp'):
            T = t.upper()
            before, after = self.metrics(t + '-before'), self.metrics(t + '-after')
            for where, samples in ((t + '-before', before), (t + '-after', after)):
                self.collectors_ok(samples, where)
                self.rdma_port(samples, where)
                self.rdma_counters_bracketed(samples, where)
                self.expect_one(samples, where, 'nvmeof_controller_info', 1.0,
                                controller=e[T + '_CONTROLLER'], transport=t, nqn=e[T + '_NQN'])
                self.expect_one(samples, where, 'nvmeof_controller_state', 1.0,
                                controller=e[T + '_CONTROLLER'], state='live')
                self.expect_one(samples, where, 'nvmeof_target_subsystem_info', 1.0, nqn=e[T + '_NQN'])
                self.expect_one(samples, where, 'nvmeof_target_port_subsystem', 1.0, nqn=e[T + '_NQN'])
                self.check(bool(self.find(samples, 'nvmeof_rdma_netlink_device_info', protocol='roce')),
                           '%s nvmeof_rdma_netlink_device_info{protocol="roce"}' % where)
            self.fio(t)
            avail = {s[1].get('reason'): s[2] for s in self.find(after, 'nvmeof_exporter_bpf_available')}
            last = after
            if avail.get('ok') != 1:
                why = [r for r in avail if r != 'ok']
                self.check(bool(why),
                           'SKIP %s eBPF counts: eBPF unavailable, reason %s' % (t, why), str(avail))
                continue
            for role in ('host', 'target'):
                if role == 'target' and no_btf and not target_attached:
                    # Before 5.11 (no module BTF) the target's hooks attach through the classic
                    # tracepoints (format files) or not at all: then the exporter must say so.
                    self.check(target_hooks_missing_why,
                               'SKIP %s target nvmeof_commands_total on %s: nvmet_req_init and '
                               'nvmet_req_complete missing, and the exporter and probe say why '
                               '(no module BTF before 5.11)' % (t, kernel),
                               'hook_attached %s; probe: %s' % (target_hooks, probe_reason))
                    continue
                got = delta(before, after, 'nvmeof_commands_total', role=role, transport=t, op='read')
                self.check(got == ios, '%s %s nvmeof_commands_total{op="read"} rose by fio\'s %d I/Os' % (t, role, ios),
                           'rose by %g' % got)
            got = delta(before, after, 'nvmeof_command_latency_seconds_count', role='host', transport=t,
                        op='read')
            # A new series' histograms are allocated at its first commands, where the kernel's BPF
            # allocator may run dry for a moment: such commands are counted as lost, not timed.
            lost = sum(delta(before, after, 'nvmeof_exporter_bpf_lost_events_total', reason=r)
                       for r in ('nvmeof_map_full', 'nvmeof_inflight_full'))
            self.check(got <= ios and got + lost >= ios,
                       '%s host end to end counted fio\'s %d I/Os (sample_every 1; lost events accounted)'
                       % (t, ios), 'counted %g, lost %g' % (got, lost))
            disk = {'rdma': 'nullb0', 'tcp': 'nullb1'}[t]  # the target's backing disk (smoke.sh)
            got = delta(before, after, 'nvmeof_block_requests_total', disk=disk, op='read')
            self.check(got == ios,
                       '%s nvmeof_block_requests_total{disk="%s",op="read"} rose by fio\'s %d I/Os' % (t, disk, ios),
                       'rose by %g' % got)
        # What the exporter says of each hook: attached (and how), or missing and why (probe).
        hooks = {s[1].get('hook'): s[1].get('mechanism') for s in
                 self.find(last, 'nvmeof_exporter_bpf_hook_attached') if s[2] == 1}
        missing = sorted({s[1].get('hook') for s in self.find(last, 'nvmeof_exporter_bpf_hook_attached')
                          if s[2] != 1 or s[1].get('mechanism') == 'none'})
        print('info hooks attached: %s' % ' '.join('%s=%s' % kv for kv in sorted(hooks.items())))
        print('info hooks missing: %s' % ' '.join(missing))
        self.check('probe exit' in probe_text, 'probe.txt present')
        # record: recorded the fio reads on both roles and exited 0, or exited non-zero saying why.
        rc_path = os.path.join(self.dir, 'record-exit-code')
        rc = open(rc_path).read().strip() if os.path.exists(rc_path) else 'none'
        recs = {role: sum(1 for _ in open(p)) for role in ('host', 'target')
                for p in [os.path.join(self.dir, 'rec.%s.jsonl' % role)] if os.path.exists(p)}
        log = os.path.join(self.dir, 'record-debug.txt')
        tail = [l for l in open(log, errors='replace') if not re.match(r'(libbpf|\d+: )', l)][-2:] if os.path.exists(log) else []
        if rc == '0':
            self.check(all(recs.get(r, 0) >= ios for r in ('host', 'target')),
                       'record -s 1: at least fio\'s %d records per role' % ios, str(recs))
        elif no_btf:
            # `record` needs the target's hooks: on 5.10 it must fail, saying which did not attach.
            said = ' '.join(tail)
            self.check(rc not in ('none', '0') and 'did not attach' in said and 'nvmet_req_init' in said,
                       'SKIP record -s 1 on %s: exits non-zero (%s) saying the target hook '
                       'nvmet_req_init did not attach (no module BTF before 5.11)' % (kernel, rc),
                       said[:400])
        else:
            self.check(False, 'record -s 1 exited 0', 'exit %s, records %s: %s' % (rc, recs, ' '.join(tail)[:400]))
        self.exporter_alive()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--scenario', required=True)
    ap.add_argument('dir')
    args = ap.parse_args()
    c = Checker(args.dir)
    fn = getattr(c, 'scenario_' + args.scenario.replace('-', '_'), None)
    if fn is None:
        print('no checks for scenario %s' % args.scenario)
        return 2
    if not c.check(bool(c.env), 'scenario.env present'):
        return 1
    fn()
    if args.scenario == 'stages':  # its protobuf twins of the text scrapes (check_native.py)
        c.native_stages()
    c.promtool_all()
    print('%s: %d check(s) failed' % (args.scenario, c.failures) if c.failures else '%s: all checks passed' % args.scenario)
    return 1 if c.failures else 0


if __name__ == '__main__':
    sys.exit(main())
