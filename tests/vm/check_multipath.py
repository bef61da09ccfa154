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
  ana        CTRL_B's group 1 went inaccessible once and optimized once (between the scrape
             before fio and the final one), as sysfs showed the path (paths.txt); CTRL_A's group
             did not change;
  scrapes    every timed scrape during the fault answered; fio had no error; collectors ok.
Where a kernel lacks a hook's function (inlined: available_filter_functions, ftrace-functions.txt),
the hook must be reported unattached and its check is a named SKIP.
"""
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
        for hook in ('nvme_failover_req', 'nvme_update_ana_state'):
            mech, v = attached.get(hook, (None, None))
            print('     hook %s: %s %s' % (hook, mech, v))
            if hook in funcs:
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
            for state in ('inaccessible', 'optimized'):
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
        self.exporter_alive()
