"""Checks of the `record` VM scenario (per-command records, report's join, top on its own
eBPF programs), mixed into check.py's Checker.

Three `record --role=both` ran at once beside an exporter timing every command (sample_every 1):
`all` (-s 1), `sampled` (-s RECORD_S through RECORD_MECHANISM, kprobes) and `picked` (-s RECORD_S
at the default mechanisms, where the host decides from its request), over four fio jobs (rdma/tcp x 4 KiB randread / 16 KiB
randwrite, IOS I/Os each at queue depth 1); `report` joined each host/target pair. Per pair:
  - record and report exited 0, at most 2% lost (all counted: ring, table, kernel-skipped runs);
  - at least 95% of the host's records matched a target record (for `sampled` and `picked` this
    shows that host and target sampled the same commands);
  - the per-command network time (host wait - target residence) is positive for >= 99% of the
    matched;
  - per fio job: record count x N equals fio's I/Os within 2% (`all`); for `sampled` the count
    is binomial, and where 4 standard deviations exceed 2% they are allowed, and said so (`picked`
    alike);
  - the end line's exact command count equals the sum of fio's I/Os (1%).
`all` only (the same commands as fio and as the exporter):
  - the host's end-to-end mean lies within 75% of fio's clat .. 110% of its lat (no kernel
    accounting is taken here; check_stages.py says why clat's tail allows 75%);
  - the joined network mean equals the exporter's network estimate (host network_and_target
    mean - target residence mean, as the recording rules) within 10%. Asserted under KVM; under
    TCG printed as a `warn` line when outside (see exporter_network's caller).
Then top: the frames wholly inside a time-based randread show the host and target rdma read
groups, with commands/s within 10% of fio's rate over the same window (the disk's completed
reads), and the frames
from fio's start on counted fio's I/Os (1%).
"""
import json
import math
import os

from check_stages import RECORD_CLAT_SHARE  # noqa: E402  (why 75%: check_stages.py)

HOST_NETWORK = ('command_send', 'target_and_response')


class RecordChecks:
    """Mixin for check.Checker (needs self.metrics, self.check, self.env, self.dir, and
    StagesChecks' hist_delta)."""

    def read_json(self, name):
        path = os.path.join(self.dir, name)
        if not self.check(os.path.exists(path) and os.path.getsize(path) > 0, '%s present' % name):
            return None
        try:
            return json.load(open(path))
        except ValueError as e:
            self.check(False, '%s parses' % name, str(e))
            return None

    def tcg(self):
        return 'TCG' in self.env['CPU']

    def read_text(self, name):
        path = os.path.join(self.dir, name)
        return open(path).read().strip() if os.path.exists(path) else '<missing>'

    def exporter_network(self, transport, op, before, after):
        """The exporter's network estimate: host wait mean - target residence mean (seconds)."""
        host = dict(role='host', transport=transport, op=op)
        target = dict(role='target', transport=transport, op=op)
        stages = self.hist_delta(before, after, 'nvmeof_stage_latency_seconds', host, 'stage')
        e2e = self.hist_delta(before, after, 'nvmeof_command_latency_seconds', host).get(None)
        tstages = self.hist_delta(before, after, 'nvmeof_stage_latency_seconds', target, 'stage')
        te2e = self.hist_delta(before, after, 'nvmeof_command_latency_seconds', target).get(None)
        if not e2e or not te2e:
            return None
        wait = sum(s for st, (_, s) in stages.items()
                   if 'network_and_target' in st or st in HOST_NETWORK) / e2e[0]
        residence = sum(s for st, (_, s) in tstages.items() if 'response' not in st) / te2e[0]
        return wait - residence

    def scenario_record(self):
        e = self.env
        if e.get('NO_MODULE_BTF') == '1':
            self.record_without_module_btf()
            return
        every = int(e['RECORD_S']) if e['RECORD_S'].isdigit() else 0
        self.record_pair('all', 1)
        if self.check(every > 1, 'RECORD_S > 1', e['RECORD_S']):
            self.record_pair('sampled', every)
            self.record_pair('picked', every)
        self.record_top()
        self.exporter_alive()

    def record_without_module_btf(self):
        """Without nvmet's BTF (5.10; guest/scenarios/record.sh) `record` must exit non-zero
        at start saying the target hook did not attach, and `top` must either say it cannot load
        or show its frame with the same warning: named skips of the scenario's other checks."""
        kernel = self.env.get('KERNEL', '')
        said = self.read_text('record-all.log')
        rc = self.read_text('record-all-exit-code')
        self.check(rc.isdigit() and rc != '0' and 'nvmet_req_init did not attach' in said,
                   'SKIP record on %s: exits non-zero (%s) saying the target hook nvmet_req_init '
                   'did not attach (no module BTF before 5.11)' % (kernel, rc), said[-400:])
        top = self.read_text('top.log')
        top_rc = self.read_text('top-exit-code')
        self.check((top_rc == '0' and 'nvmet_req_init did not attach' in top) or
                   (top_rc.isdigit() and top_rc != '0' and 'cannot load' in top),
                   'SKIP top on %s: its target rows, said on stderr (exit %s)' % (kernel, top_rc),
                   top[-400:])

    def record_pair(self, name, every):
        """One `record --role=both -s EVERY` and its report (report-NAME.json)."""
        self.check(self.read_text('record-%s-exit-code' % name) == '0', '%s: record exited 0' % name,
                   self.read_text('record-%s.log' % name))
        self.check(self.read_text('report-%s-exit-code' % name) == '0', '%s: report exited 0' % name,
                   self.read_text('report-%s.err' % name))
        rep = self.read_json('report-%s.json' % name)
        if not rep:
            return
        files = rep.get('files', [])
        self.check(len(files) == 2 and all(f.get('sample_every') == every for f in files),
                   '%s: report read a host and a target file, both 1 in %d' % (name, every), str(files))
        for f in files:
            print('info %s %s file: mechanism %s, lost %s' % (name, f.get('role'), f.get('mechanism'), f.get('lost')))
            forced = self.env.get('RECORD_MECHANISM', '') if name == 'sampled' else ''
            if name == 'picked':
                self.check(f.get('mechanism') in ('tp_btf', 'fentry'),
                           '%s: %s file recorded through BTF-typed hooks (tp_btf, fentry)'
                           % (name, f.get('role')), str(f.get('mechanism')))
            if forced:
                self.check(f.get('mechanism') == forced, '%s: %s file recorded through %s' % (name, f.get('role'), forced),
                           str(f.get('mechanism')))
            # lost counts the ring's and table's drops and the runs the kernel skipped (a program
            # does not nest on one CPU: record.cc); those are the kernel's, rare, and counted.
            lost = f.get('lost', -1)
            recs = rep.get('join', {}).get('host_records', 0)
            self.check(0 <= lost <= max(1, recs // 50),
                       '%s: %s file lost at most 2%% of its records, counted (%s)' % (name, f.get('role'), lost),
                       str(lost))
        j = rep.get('join', {})
        matched, hosts = j.get('matched', 0), j.get('host_records', 0)
        self.check(hosts > 0 and matched >= 0.95 * hosts,
                   '%s: join: %d matched of %d host records (%.1f%%) >= 95%%'
                   % (name, matched, hosts, 100.0 * matched / hosts if hosts else 0), json.dumps(j))
        neg = j.get('negative_network', matched)
        self.check(matched > 0 and neg <= 0.01 * matched,
                   '%s: network time positive for %d of %d matched (%.2f%% negative) >= 99%%'
                   % (name, matched - neg, matched, 100.0 * neg / matched if matched else 100))
        total_ios = 0
        for transport in ('rdma', 'tcp'):
            for rw in ('randread', 'randwrite'):
                self.record_job(rep, name, transport, rw, every)
                path = os.path.join(self.dir, 'fio-%s-%s.json' % (transport, rw))
                if os.path.exists(path):
                    job = json.load(open(path))['jobs'][0]['read' if rw == 'randread' else 'write']
                    total_ios += job['total_ios']
        hostnqns = {}
        for role in ('host', 'target'):
            end = None
            path = os.path.join(self.dir, '%s.%s.jsonl' % (name, role))
            if os.path.exists(path):
                lines = open(path).read().splitlines()
                end = json.loads(lines[-1]) if lines else None
            commands = end.get('commands', 0) if end and end.get('end') else 0
            nqns = set(json.loads(l).get('hostnqn', '') for l in lines[1:-1]) if end else set()
            hostnqns[role] = nqns
            self.check(nqns and '' not in nqns,
                       '%s: %s records carry the host NQN: %s' % (name, role, sorted(nqns)))
            self.within(commands, total_ios, 0.01,
                        '%s: %s end line: %d commands during the recording == fio\'s %d I/Os'
                        % (name, role, commands, total_ios))
        self.check(hostnqns.get('host') == hostnqns.get('target'),
                   '%s: host and target records name the same host NQNs' % name, str(hostnqns))

    def record_job(self, rep, pair, transport, rw, every):
        """One fio job's groups in a report; the network is compared with the exporter's
        estimate for the recording of every command only (the same commands as the exporter's)."""
        name = '%s-%s' % (transport, rw)
        op = 'read' if rw == 'randread' else 'write'
        size = '4KiB' if op == 'read' else '16KiB'
        path = os.path.join(self.dir, 'fio-%s.json' % name)
        if not self.check(os.path.exists(path), '%s fio output present' % name):
            return
        job = json.load(open(path))['jobs'][0][op]
        ios, clat, lat = job['total_ios'], job['clat_ns']['mean'] / 1e9, job['lat_ns']['mean'] / 1e9

        def group(groups, role):
            found = [g for g in groups if g['role'] == role and g['transport'] == transport
                     and g['op'] == op and g['size'] == size]
            return found[0] if len(found) == 1 else None

        # Counts: exact with every command recorded; else binomial (ios trials, p = 1/every):
        # n x every has a standard deviation of sqrt(ios (every - 1)). The bound is 4 of them: a
        # CI run draws 8 such counts (4 jobs, 2 kernels); at 3 sigma one run in 50 failed by chance.
        sigma = math.sqrt(ios * (every - 1)) if every > 1 else 0.0
        tol = max(0.02 * ios, 4 * sigma)
        for role, groups in (('host', rep.get('groups', [])), ('target', rep.get('target_groups', []))):
            g = group(groups, role)
            if not self.check(g is not None, '%s: %s %s group %s %s %s in the report'
                              % (pair, name, role, transport, op, size)):
                continue
            n = g['n']
            err = n * every - ios
            self.check(abs(err) <= tol,
                       '%s: %s %s records %d x %d = %d vs fio\'s %d I/Os: %+.2f%% (allowed +-%.2f%%%s)'
                       % (pair, name, role, n, every, n * every, ios, 100.0 * err / ios, 100.0 * tol / ios,
                          ', 4 binomial sigma: 2% is below the sampling noise' if tol > 0.02 * ios else ''))
            if role == 'host' and every == 1:  # the same population as fio's
                mean = g['end_to_end']['mean_seconds']
                self.check(RECORD_CLAT_SHARE * clat <= mean <= 1.1 * lat,
                           '%s: %s host end-to-end mean %.1f us within 75%% of fio clat %.1f us .. 110%% of lat %.1f us'
                           % (pair, name, mean * 1e6, clat * 1e6, lat * 1e6))
        joined = group(rep.get('joined', []), 'host')
        if not self.check(joined is not None, '%s: %s joined group present' % (pair, name)):
            return
        net = [c for c in joined['components'] if c['name'] == 'network']
        if not self.check(len(net) == 1, '%s: %s joined group has a network component' % (pair, name)):
            return
        net = net[0]
        print('info %s %s joined: n=%d network mean %.1f us p50 %.1f us p99 %.1f us; %s' % (
            pair, name, net['n'], net['mean_seconds'] * 1e6, net['p50_seconds'] * 1e6, net['p99_seconds'] * 1e6,
            ', '.join('%s=%.1fus' % (c['name'], c['mean_seconds'] * 1e6) for c in joined['components'])))
        if every != 1:
            return
        # The recordings and top ran beside the exporter: its exact counts are still fio's.
        before, after = self.metrics(name + '-before'), self.metrics(name + '-after')
        for role in ('host', 'target'):
            cmds = self.counter_delta(before, after, 'nvmeof_commands_total',
                                      dict(role=role, transport=transport, op=op))
            self.within(cmds, ios, 0.01, '%s exporter %s nvmeof_commands_total rose by fio\'s %d I/Os'
                        % (name, role, ios))
        est = self.exporter_network(transport, op, before, after)
        if self.check(est is not None and est > 0, '%s exporter network estimate present and > 0' % name,
                      str(est)):
            ok = abs(net['mean_seconds'] - est) <= 0.10 * est
            what = ('%s joined network mean %.1f us == exporter estimate %.1f us (10%%): %+.1f%%'
                    % (name, net['mean_seconds'] * 1e6, est * 1e6, 100 * (net['mean_seconds'] / est - 1)))
            if self.tcg() and not ok:
                # Both time the same commands on the same hooks, the exporter's program first. Where
                # a hook is the exporter's last for the command (6.1 NVMe/TCP target:
                # nvmet_req_complete, no response hook) it adds the spans to its histograms there,
                # which under TCG takes hundreds of us, and the record's stamp lands that much
                # later (measured: +470 us on done, -180 us on setup; network -17..-23%). Native
                # or under KVM that is a few us. Measured, printed, not asserted under TCG.
                print('warn %s (TCG: not asserted)' % what)
            else:
                self.check(ok, what)

    def record_top(self):
        times = {}
        path = os.path.join(self.dir, 'top-times.txt')
        if os.path.exists(path):
            for line in open(path):
                k, _, v = line.partition(' ')
                times[k] = float(v)
        frames = []
        path = os.path.join(self.dir, 'top.jsonl')
        if os.path.exists(path):
            for line in open(path):
                try:
                    frames.append(json.loads(line))
                except ValueError:
                    pass
        if not self.check('fio_start' in times and 'fio_end' in times and frames,
                          'top frames and fio times present', str(times)):
            return
        self.check(self.read_text('top-exit-code') == '0', 'top exited 0 on SIGINT', self.read_text('top.log'))
        # fio's I/Os counted by the kernel: the namespace's completed reads, sampled every 0.2 s
        # on the frames' clock and interpolated. Under TCG the rate swings by a factor of 5
        # within seconds, so only the same window compares; and fio starts issuing up to
        # seconds after the shell started it, so its window is where the count moves.
        stat = []
        path = os.path.join(self.dir, 'top-stat.txt')
        if os.path.exists(path):
            for line in open(path):
                parts = line.split()
                if len(parts) >= 2:
                    try:
                        stat.append((float(parts[0]), int(parts[1])))
                    except ValueError:
                        pass
        moving = [i for i in range(1, len(stat)) if stat[i][1] > stat[i - 1][1]]
        if not self.check(moving, 'block stats moved during fio', path):
            return
        lo, hi = stat[moving[0] - 1][0], stat[moving[-1]][0]
        inside = [f for f in frames if f.get('at_monotonic_seconds') is not None and
                  f['at_monotonic_seconds'] - f['interval_seconds'] >= lo and f['at_monotonic_seconds'] <= hi]
        if not self.check(inside, 'a top frame lies inside fio\'s I/O (%.1f..%.1f s)' % (lo, hi),
                          'frames %s' % [(f.get('at_monotonic_seconds'), f['interval_seconds']) for f in frames]):
            return

        def reads_at(t):
            for (t0, r0), (t1, r1) in zip(stat, stat[1:]):
                if t0 <= t <= t1:
                    return r0 + (r1 - r0) * ((t - t0) / (t1 - t0) if t1 > t0 else 0)
            return None

        start = min(f['at_monotonic_seconds'] - f['interval_seconds'] for f in inside)
        end = max(f['at_monotonic_seconds'] for f in inside)
        r0, r1 = reads_at(start), reads_at(end)
        fio_rate = (r1 - r0) / (end - start)
        job = json.load(open(os.path.join(self.dir, 'fio-top.json')))['jobs'][0]['read']
        print('info top window %.1f..%.1f s: %.0f reads completed, %.1f/s; fio\'s IOPS over its whole run %.1f'
              % (start, end, r1 - r0, fio_rate, job['iops']))

        def group(frame, role):
            g = [x for x in frame['groups'] if x['role'] == role and x['transport'] == 'rdma'
                 and x['op'] == 'read' and x['size'] == '4KiB']
            return g[0] if len(g) == 1 else None

        for role in ('host', 'target'):
            groups = [group(f, role) for f in inside]
            if not self.check(all(groups), 'top frames inside fio have the %s rdma read 4KiB group' % role,
                              str([f['groups'] for f in inside])):
                continue
            for g in groups:
                print('info top %s rdma read %s: %.1f cmd/s, n=%d, mean %.1f us, p99 %.1f us; %s' % (
                    role, g['device'], g['commands_per_second'], g['sampled'], g['mean_seconds'] * 1e6,
                    g['p99_seconds'] * 1e6,
                    ', '.join('%s=%.1fus' % (s['stage'], s['mean_seconds'] * 1e6) for s in g['stages'])))
            rate = sum(g['commands_per_second'] * f['interval_seconds'] for g, f in zip(groups, inside)) / \
                sum(f['interval_seconds'] for f in inside)
            self.within(rate, fio_rate, 0.10,
                        'top %s rdma read: %.1f commands/s over %d frame(s) inside fio == fio\'s %.1f I/Os/s '
                        'in that window (10%%)' % (role, rate, len(inside), fio_rate))
            # Every command is counted: the frames from fio's start on saw fio's I/Os (top ran
            # from the recordings on; the last rdma read before this fio was jobs earlier).
            total = sum(g['commands_per_second'] * f['interval_seconds']
                        for f in frames if f.get('at_monotonic_seconds', 0) >= times['fio_start']
                        for g in [group(f, role)] if g)
            self.within(total, job['total_ios'], 0.01, 'top %s: all frames counted %.0f commands == fio\'s %d I/Os'
                        % (role, total, job['total_ios']))
