"""Checks of the `multipath` VM scenario (guest/scenarios/multipath.sh), mixed into check.py's
Checker. One subsystem on two NVMe/TCP ports, two host controllers (paths, CTRL_A on port 2,
CTRL_B on port 3) under one multipath head, round-robin; fio on the head while port 3's ANA
group goes inaccessible and back to optimized, port 3 loses the subsystem for a few seconds
and gets it back, and the host resets CTRL_B (cancelling its commands in flight). Against the
kernel's own view:
  failovers  nvmeof_path_failovers_total per path equals the commands the kernel's
             nvme:nvme_complete_rq records show completing on that path's I/O queues with a path
             error (status type 3, no DNR: what nvme_decide_disposition fails over: ANA
             errors, and host-aborted 0x371 at the reset; per phase in the output), and the
             failed path's count is above 0;
  ana        CTRL_B's group 1 went to change, inaccessible and optimized once each (between the
             scrape before fio and the final one), as sysfs showed the path (paths.txt), and
             nvmeof_path_ana_change_seconds_total rose by the span sysfs showed change (within
             0.5 s); CTRL_A's group did not change;
  scrapes    every timed scrape during the fault answered; fio had no error; collectors ok.
  outage     after the final scrape, both ports lose the subsystem for OUTAGE_SECONDS under a
             second fio (fio-outage.json): nvmeof_namespace_no_usable_path_total of the head
             rose; nvmeof_namespace_failover_stall_seconds counted at least one stall, and its
             largest (the sum of the window's stalls less a bound on the others, each of them
             at most the upper bound of its bucket) is within 10% of fio's slowest I/O of that
             run; where the kernel has the nvme `diag` counters (diag-outage_*.txt, 7.2), the
             head's requeued I/Os equal its io_requeue_no_usable_path_count rise, each path's
             failovers its multipath_failover_count rise, and the served diag series the files.
Where a kernel lacks a hook's function (inlined: available_filter_functions, ftrace-functions.txt),
the hook must be reported unattached and its check is a named SKIP.
"""
import json
import os
import re

# nvme:nvme_complete_rq's line: "nvme3: disk=nvme0c3n1, qid=2, cmdid=..., status=0x302" (6.1 and
# 6.12 print the disk only for namespace commands).
TRACE_RE = re.compile(r'nvme_complete_rq: nvme(\d+): (?:disk=\S+, )?qid=(\d+),.*status=(0x[0-9a-f]+|\d+)')
NVME_SC_DNR = 0x4000


class MultipathChecks:
    def mp_kernel_failovers(self):
        """Per controller instance: I/O commands that completed with a path error and no DNR."""
        path = os.path.join(self.dir, 'trace.txt')
        if not self.check(os.path.exists(path), 'trace.txt (nvme_complete_rq records) present'):
            return None
        counts, errors, phases = {}, {}, {}
        marks = []  # (time, phase) from timings.txt: which phase each failover fell in
        tpath = os.path.join(self.dir, 'timings.txt')
        for line in open(tpath) if os.path.exists(tpath) else []:
            f = line.split()
            if len(f) == 2 and f[0] in ('fault', 'unlink', 'reset'):
                marks.append((float(f[1]), {'fault': 'ana', 'unlink': 'unlink', 'reset': 'reset'}[f[0]]))
        for line in open(path, errors='replace'):
            m = TRACE_RE.search(line)
            if not m:
                continue
            t = re.search(r'\s(\d+\.\d+): nvme_complete_rq', line)
            phase = 'before'
            for at, name in marks:
                if t and float(t.group(1)) >= at:
                    phase = name
            ctrl, qid, status = 'nvme' + m.group(1), int(m.group(2)), int(m.group(3), 0)
            if status:
                errors[(ctrl, hex(status))] = errors.get((ctrl, hex(status)), 0) + 1
            if qid > 0 and (status & 0x700) == 0x300 and not status & NVME_SC_DNR:
                counts[ctrl] = counts.get(ctrl, 0) + 1
                phases[(ctrl, phase)] = phases.get((ctrl, phase), 0) + 1
        print('     kernel error completions (controller, status): %s' % sorted(errors.items()))
        print('     kernel path-error completions by phase: %s' % sorted(phases.items()))
        return counts

    def mp_hooks(self, samples):
        attached = {l.get('hook'): (l.get('mechanism'), v) for n, l, v in samples
                    if n == 'nvmeof_exporter_bpf_hook_attached'}
        path = os.path.join(self.dir, 'ftrace-functions.txt')
        funcs = {l.split()[0] for l in open(path)} if os.path.exists(path) else set()
        print('     kernel functions: %s' % ' '.join(sorted(funcs)))
        ok = {}
        for hook in ('nvme_failover_req', 'nvme_update_ana_state', '__nvme_find_path',
                     'nvme_requeue_work'):
            mech, v = attached.get(hook, (None, None))
            print('     hook %s: %s %s' % (hook, mech, v))
            if self.env.get('NO_MODULE_BTF') == '1':
                self.check(v != 1, 'SKIP %s: nvme_core has no BTF on %s (CO-RE cannot read its types), '
                           'reported unattached' % (hook, self.env.get('KERNEL')), str(attached.get(hook)))
                ok[hook] = False
            elif hook in funcs:
                ok[hook] = self.check(v == 1, 'hook %s attached (%s)' % (hook, mech), str(attached.get(hook)))
            else:
                self.check(v != 1, 'SKIP %s: not in available_filter_functions on %s (inlined), '
                           'reported unattached' % (hook, self.env.get('KERNEL')), str(attached.get(hook)))
                ok[hook] = False
        return ok

    def mp_ana_seen(self):
        """Path B's ANA state runs in paths.txt ('t stA anaA stB anaB')."""
        path = os.path.join(self.dir, 'paths.txt')
        runs = []
        for line in open(path) if os.path.exists(path) else []:
            f = line.split()
            if len(f) == 5 and (not runs or runs[-1] != f[4]):
                runs.append(f[4])
        print('     %s ana_state by sample: %s' % (self.env.get('DISK_B'), ' -> '.join(runs)))
        return runs

    def scenario_multipath(self):
        e = self.env
        a, b = e['CTRL_A'], e['CTRL_B']
        print('     multipath=%s iopolicy=%s paths %s, %s under %s' % (
            e.get('MULTIPATH'), e.get('IOPOLICY'), a, b, e.get('HEAD')))
        before, final = self.metrics('before'), self.metrics('final')
        self.collectors_ok(final, 'final')
        hooks = self.mp_hooks(final)

        # Every timed scrape answered.
        path = os.path.join(self.dir, 'scrapes.txt')
        heads = [re.match(r'^# scrape (\S+) rc=(\d+)', l) for l in open(path)] if os.path.exists(path) else []
        rcs = [int(m.group(2)) for m in heads if m]
        self.check(len(rcs) >= 4, 'at least 4 timed scrapes', str(len(rcs)))
        self.check(rcs and all(rc == 0 for rc in rcs), 'every timed scrape answered (%d)' % len(rcs),
                   'failed: %d' % sum(1 for rc in rcs if rc))

        self.mp_inflight(path)

        # Failovers against the kernel's records.
        kernel = self.mp_kernel_failovers()
        if hooks.get('nvme_failover_req') and kernel is not None:
            for ctrl in (a, b):
                got = self.lc_counts(final, 'nvmeof_path_failovers_total', controller=ctrl)
                want = kernel.get(ctrl, 0)
                self.check(got == want, 'nvmeof_path_failovers_total{controller="%s"} = %d, the kernel\'s '
                           'path-error completions on its I/O queues' % (ctrl, want), 'got %g' % got)
            got_b = self.lc_counts(final, 'nvmeof_path_failovers_total', controller=b)
            self.check(got_b > 0, 'failovers counted on the failed path %s (%g)' % (b, got_b))

        # ANA transitions: B inaccessible then optimized, once each; A unchanged.
        runs = self.mp_ana_seen()
        self.check('inaccessible' in runs and 'optimized' in runs[runs.index('inaccessible'):] if 'inaccessible' in runs
                   else False, 'sysfs: %s went inaccessible and back to optimized' % e.get('DISK_B'), str(runs))
        if hooks.get('nvme_update_ana_state'):
            self.mp_ana_change(before, final, b)
            for state in ('change', 'inaccessible', 'optimized'):
                got = self.lc_delta(before, final, 'nvmeof_path_ana_transitions_total', controller=b,
                                    ana_group=1, state=state)
                self.lc_expect(got, 1, 'nvmeof_path_ana_transitions_total{controller="%s",ana_group="1",'
                               'state="%s"} rose by' % (b, state))
            got = self.lc_delta(before, final, 'nvmeof_path_ana_transitions_total', controller=a)
            self.lc_expect(got, 0, 'nvmeof_path_ana_transitions_total{controller="%s"} rose by' % a)
            print('     ANA series at the end: %s' % sorted(
                (l.get('controller'), l.get('ana_group'), l.get('state'), v) for n, l, v in final
                if n == 'nvmeof_path_ana_transitions_total'))
        self.fio('io')
        self.mp_outage(hooks)
        head = e.get('HEAD', '').replace('/dev/', '')
        served = sorted({l.get('disk') for n, l, v in final if n.startswith('nvmeof_block_')
                         and l.get('disk', '').startswith('nvme')})
        if any(n == 'nvmeof_commands_total' and l.get('role') == 'host' for n, l, v in final):
            self.check(head and not served, 'no block series of the NVMe-oF head %s or its paths '
                       '(left out: the NVMe-oF host series time them)' % head, str(served))
        else:
            print('     SKIP no NVMe-oF host series: block series of %s are served (%s)' % (head, served))
        self.mp_remade()
        self.mp_reuse()
        self.exporter_alive()

    def mp_reuse(self):
        """Subsystems made where a disconnected disk was, and disks where a deleted subsystem was
        (multipath.sh `reuse`): each new subsystem's target series counts what the host sent it,
        and the host series of its disk the same, whether or not an address was shared
        (printed: that is up to the allocator)."""
        def commands(scrape, role, **labels):
            return sum(v for name, l, v in self.metrics(scrape) if name == 'nvmeof_commands_total'
                       and l.get('role') == role and all(l.get(k) == w for k, w in labels.items()))

        collided = 0
        for n in (1, 2, 3):
            path = os.path.join(self.dir, 'reuse-%d.txt' % n)
            if not os.path.exists(path):
                self.check(False, 'reuse-%d.txt present' % n)
                return
            pairs = [l.split() for l in open(path) if l.strip()]
            self.check(len(pairs) == 2, 'reuse %d: two new subsystems' % n, str(pairs))
            names = {}
            try:
                for e in json.load(open(os.path.join(self.dir, 'reuse-%d.json' % n))):
                    f = e.get('formatted', e)
                    k, v = f.get('key'), f.get('value')
                    if isinstance(k, list):
                        k = int.from_bytes(bytes(int(b, 16) for b in k), 'little')
                    if isinstance(v, list):
                        v = bytes(int(b, 16) for b in v).split(b'\0')[0].decode()
                    names[int(k)] = v
            except (ValueError, OSError) as err:
                self.check(False, 'reuse-%d.json: nv_names dumped' % n, str(err))
                return
            # Addresses that held a host disk and a subsystem (either one freed for the other).
            shared = sorted(k for k in names if not k & 1 and (k | 1) in names)
            collided += len(shared)
            print('     reuse %d: %s' % (n, '; '.join('%#x: disk %s and subsystem %s' % (
                k, names[k], names[k | 1].rsplit(':', 1)[-1]) for k in shared) or 'no address shared'))
            rows = []
            for old, new, dev in pairs:
                # Reads: the target also counts each I/O queue's Connect (op "other"), the host does not.
                target = commands('reuse-%d' % n, 'target', nqn=new, op='read')
                host = commands('reuse-%d' % n, 'host', nvme_namespace=dev, op='read')
                before = commands('reuse-%d-old' % n, 'host', nvme_namespace=dev, op='read')
                print('     reuse %d: %s: target %g reads, host %s %g - %g'
                      % (n, new.rsplit(':', 1)[-1], target, dev, host, before))
                if self.env.get('NO_MODULE_BTF') == '1':  # 5.10: the target's hooks are its classic tracepoints
                    self.check(host - before >= 24, 'reuse %d: the host counted the new disk\'s commands (%g)'
                               % (n, host - before))
                    continue
                rows.append((new, target, host - before))
            if len(rows) != 2:
                continue
            if all(t == h for _, t, h in rows):
                for new, target, sent in rows:
                    self.check(sent >= 24 and target == sent, 'reuse %d: the new subsystem counted what the host '
                               'sent it (%g)' % (n, sent), 'target %g' % target)
                continue
            # Known limit: a host disk made at a freed disk's address before a scrape forgot the
            # old one takes the old one's name (nv_names keeps the first), so the host's reads can
            # land on the other new namespace; the targets must still add up to what was sent.
            targets, sent = sum(t for _, t, _ in rows), sum(h for _, _, h in rows)
            self.check(min(t for _, t, _ in rows) >= 24 and targets == sent,
                       'SKIP reuse %d per namespace: the host\'s reads went to the other new namespace (a disk '
                       'made at a freed disk\'s address keeps its name, a known limit); the targets add up to '
                       'what the host sent (%g)' % (n, sent), 'targets %g' % targets)
        print('     reuse: %d addresses held both a host disk and a subsystem' % collided)

    def mp_remade(self):
        """A null_blk disk deleted and made again under the same name and dev_t: the second's
        block series counts the second's requests only, as its /sys/block/DISK/stat does."""
        rounds = []
        for n in (1, 2):
            path = os.path.join(self.dir, 'remade-%d.txt' % n)
            if not os.path.exists(path):
                self.check(False, 'remade-%d.txt present (null_blk configfs device)' % n)
                return
            ident, stat = [l.split() for l in open(path)][:2]
            # read, write, discard and flush I/Os completed (Documentation/block/stat.rst)
            kernel = sum(int(stat[i]) for i in (0, 4, 11, 14) if i < len(stat))
            got = sum(v for name, l, v in self.metrics('remade-%d' % n)
                      if name == 'nvmeof_block_requests_total' and l.get('disk') == ident[0])
            rounds.append((ident, kernel, got))
        (id1, k1, g1), (id2, k2, g2) = rounds
        print('     remade disk: %s dev %s diskseq %s: %g requests (stat %d); again: dev %s diskseq %s: '
              '%g (stat %d)' % (id1[0], id1[1], id1[2], g1, k1, id2[1], id2[2], g2, k2))
        self.check(id1[:2] == id2[:2], 'the disk came back under the same name and dev_t', '%s %s' % (id1, id2))
        self.check(g1 == k1, 'the first disk\'s block requests = its stat\'s (%d)' % k1, 'got %g' % g1)
        if id2[2] == 'none':  # before 5.15 (no diskseq) a dev_t keeps its counts: a known limit
            self.check(g2 == k1 + k2, 'SKIP the disk made anew under the same dev_t on %s: no diskseq '
                       'before 5.15, so its series carries the old disk\'s %d (docs/metrics.md)'
                       % (self.env.get('KERNEL'), k1), 'got %g, stat %d + %d' % (g2, k1, k2))
            return
        self.check(g2 == k2, 'the disk made anew counts its own requests: its stat\'s %d, not the old '
                   'disk\'s %d on top' % (k2, k1), 'got %g' % g2)

    def mp_ana_change(self, before, final, ctrl):
        """Time in `change`: the counter's rise against the span paths.txt (sampled every 0.2 s)
        showed path B's sysfs ana_state in change, within 0.5 s."""
        path = os.path.join(self.dir, 'paths.txt')
        samples = []
        for line in open(path) if os.path.exists(path) else []:
            f = line.split()
            if len(f) == 5:
                samples.append((float(f[0]), f[4]))
        first = next((t for t, st in samples if st == 'change'), None)
        after = next((t for t, st in samples if first is not None and t > first and st != 'change'), None)
        got = self.lc_delta(before, final, 'nvmeof_path_ana_change_seconds_total', controller=ctrl,
                            ana_group=1)
        seen = after - first if first is not None and after is not None else None
        print('     time in change: counted %.3f s, sysfs showed %s s' % (got, seen))
        self.check(seen is not None and abs(got - seen) <= 0.5,
                   'nvmeof_path_ana_change_seconds_total{controller="%s",ana_group="1"} rose %.3f s, '
                   'the span sysfs showed change (%s s) within 0.5 s' % (ctrl, got, seen))

    def mp_inflight(self, path):
        """nvmeof_path_inflight_commands in the timed scrapes (scrapes.txt) under fio (queue depth
        16, round-robin): never more than 16 on a path, and both paths busy at once in some
        scrape. Each path's `inflight` file is one read (an instant: both ops); the two paths'
        are two reads, so their sum may pass the queue depth by what completed on the first
        path and was issued on the second in between (18 of 16 seen on 6.12): printed only."""
        per_scrape, cur = [], None
        for line in open(path) if os.path.exists(path) else []:
            if line.startswith('# scrape'):
                cur = {}
                per_scrape.append(cur)
            elif cur is not None and line.startswith('nvmeof_path_inflight_commands{'):
                m = re.search(r'controller="([^"]+)".*\} (\S+)$', line.strip())
                if m:
                    cur[m.group(1)] = cur.get(m.group(1), 0) + float(m.group(2))
        seen = [s for s in per_scrape if s]
        both = [s for s in seen if len(s) == 2 and all(v > 0 for v in s.values())]
        most = max((sum(s.values()) for s in seen), default=0)
        path_most = max((v for s in seen for v in s.values()), default=0)
        print('     in flight per path: %d scrapes with the series, %d with both paths busy, at most %g '
              'on a path, %g over both' % (len(seen), len(both), path_most, most))
        self.check(seen and path_most <= 16, 'nvmeof_path_inflight_commands: at most fio\'s queue depth '
                   '(16) on a path in every scrape (%g)' % path_most)
        self.check(len(both) >= 1, 'nvmeof_path_inflight_commands: both paths had commands in flight in '
                   'a scrape under round-robin (%d of %d)' % (len(both), len(seen)))

    def mp_diag(self, name):
        """The kernel's diag counters: {(device, counter): value}, or None where it has none."""
        path = os.path.join(self.dir, 'diag-%s.txt' % name)
        if not os.path.exists(path) or os.path.getsize(path) == 0:
            return None
        out = {}
        for line in open(path):
            f = line.split()
            if len(f) == 3 and f[2].isdigit():
                out[(f[0], f[1])] = int(f[2])
        return out

    def mp_fio_max_seconds(self, name):
        try:
            text = open(os.path.join(self.dir, 'fio-%s.json' % name)).read()
            job = json.loads(text[text.index('{'):])['jobs'][0]
            return max(job[d]['lat_ns']['max'] for d in ('read', 'write')) / 1e9
        except (OSError, ValueError, KeyError, IndexError):
            return None

    def mp_outage(self, hooks):
        e = self.env
        head = os.path.basename(e.get('HEAD', ''))
        pre, post = self.metrics('outage_before'), self.metrics('outage_after')
        self.fio('outage')
        if not (hooks.get('__nvme_find_path') and hooks.get('nvme_requeue_work')):
            self.check(True, 'SKIP outage: the no-usable-path and stall hooks are not attached on %s'
                       % e.get('KERNEL'))
            return
        nopath = self.lc_delta(pre, post, 'nvmeof_namespace_no_usable_path_total', nvme_namespace=head)
        self.check(nopath > 0, 'outage: nvmeof_namespace_no_usable_path_total{nvme_namespace="%s"} rose '
                   '(%g)' % (head, nopath))
        stall = 'nvmeof_namespace_failover_stall_seconds'
        n = self.lc_delta(pre, post, stall + '_count', nvme_namespace=head)
        total = self.lc_delta(pre, post, stall + '_sum', nvme_namespace=head)
        # The other stalls of the window, each at most its bucket's bound: the largest is at
        # least the sum less those bounds (the largest stall's own bucket excluded).
        buckets = sorted((float(l['le']), v - self.lc_counts(pre, stall + '_bucket', nvme_namespace=head,
                                                              le=l['le']))
                         for nm, l, v in post if nm == stall + '_bucket' and l.get('nvme_namespace') == head
                         and l['le'] != '+Inf')
        per, prev = [], 0
        for le, c in buckets:
            per.append((le, c - prev))
            prev = c
        others_hi = others_lo = 0.0  # the other stalls' sum lies between these
        left, lower = n - 1, 0.0
        for le, c in per:  # the smallest stalls first: all but one of the highest bucket
            take = min(c, left)
            others_hi += take * le
            others_lo += take * lower
            left -= take
            lower = le
        largest_low, largest_high = total - others_hi, total - others_lo
        fio_max = self.mp_fio_max_seconds('outage')
        print('     outage: %g I/Os without a usable path; %g stalls, %.3f s in all (largest %.3f..%.3f s); '
              'fio\'s slowest I/O %s s; stalls by bucket %s' % (
                  nopath, n, total, largest_low, largest_high, fio_max, [(le, c) for le, c in per if c]))
        if self.check(n >= 1, 'outage: at least one stall of %s counted (%g)' % (head, n)) and fio_max:
            self.check(largest_low >= 0.9 * fio_max and largest_high <= 1.1 * fio_max,
                       'outage: the largest stall (%.3f..%.3f s) is within 10%% of fio\'s slowest I/O '
                       '(%.3f s)' % (largest_low, largest_high, fio_max))
        d0, d1 = self.mp_diag('outage_before'), self.mp_diag('outage_after')
        if d0 is None or d1 is None:
            print('     outage: no nvme diag counters on %s' % e.get('KERNEL'))
            return
        rise = lambda dev, c: d1.get((dev, c), 0) - d0.get((dev, c), 0)  # noqa: E731
        kernel = rise(head, 'io_requeue_no_usable_path_count')
        self.check(nopath == kernel, 'outage: I/Os requeued without a usable path %g == the kernel\'s '
                   'diag io_requeue_no_usable_path_count rise of %s (%d)' % (nopath, head, kernel))
        # The diag series as served, against the files read right after the scrape.
        for name, dev, counter, labels in (
                ('nvmeof_namespace_diag_no_usable_path_requeues_total', head,
                 'io_requeue_no_usable_path_count', {'nvme_namespace': head}),
                ('nvmeof_path_diag_failovers_total', e['DISK_B'], 'multipath_failover_count',
                 {'path': e['DISK_B']}),
                ('nvmeof_path_diag_command_retries_total', e['DISK_B'], 'command_retries_count',
                 {'path': e['DISK_B']}),
                ('nvmeof_controller_reconnects_total', e['CTRL_B'], 'reconnect_count',
                 {'controller': e['CTRL_B']})):
            got = [v for n, l, v in post if n == name and all(l.get(k) == x for k, x in labels.items())]
            self.check(len(got) == 1 and got[0] == d1.get((dev, counter)),
                       'outage: %s%s = diag/%s of %s (%s)' % (name, labels, counter, dev,
                                                               d1.get((dev, counter))), str(got))
        for ctrl, disk in ((e['CTRL_A'], e['DISK_A']), (e['CTRL_B'], e['DISK_B'])):
            got = self.lc_delta(pre, post, 'nvmeof_path_failovers_total', controller=ctrl)
            want = rise(disk, 'multipath_failover_count')
            self.check(got == want, 'outage: nvmeof_path_failovers_total{controller="%s"} rose %g, '
                       'the kernel\'s diag multipath_failover_count of %s %d' % (ctrl, got, disk, want))
