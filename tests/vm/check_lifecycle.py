"""Checks of the `lifecycle` VM scenario (guest/scenarios/lifecycle.sh), mixed into check.py's
Checker. Every count is exact against what the scenario did, as the difference between the
scrapes taken after each of its phases (metrics-<phase>.prom):
  fail    host: one failed connect each for the missing subsystem (invalid_parameters: the
          host does not see which parameter), the refused host (invalid_host) and the port with
          no listener (ECONNREFUSED); target: an admin Connect invalid_subsystem (nqn "other":
          no such subsystem here) and one invalid_host for the closed subsystem;
  rdma    over rxe: the connect to an RDMA port with no listener is one CM rejected (or
          unreachable) and one host connect failure; a connect is 4 established (admin and I/O
          queue, host and target side, rxe0 port 1), 2 connect requests and 2 target Connects;
          its disconnect 2 to 4 disconnected (the target's, and the host's where the DREP comes
          before the host destroys its cm_ids);
  hosts   per controller new -> connecting and connecting -> live once; target: 3 admin and 3 I/O
          Connects succeeded; nvmeof_target_controllers 1 for the first two host NQNs and 1 for
          "other" (limit 2), hostnqn_folded_total 1;
  io      the lifecycle programs ran fewer than 2% of fio's 2000 I/Os (none run per command; the
          keep-alive timers tick meanwhile);
  path    per controller live -> resetting -> connecting -> live once each; 3+3 Connects
          succeeded again (the port was disabled: no Connect refused);
  kato    the target expired 3 keep-alives; per controller one more live -> ... -> live cycle;
          on kernels with nvme_keep_alive_end_io (6.12) 3 host keep-alive failures;
  rmmod   the nvme_fabrics hooks left hook_attached, no target controller is left;
  reload  they are back, and the no-listener connect failure count went from 1 to 2.
Without module BTF (5.10) the scenario skips rdma; the classic tracepoint hooks count instead
(lifecycle_without_module_btf): the same host connect failures (EIO for the two refused
Connects: no NVMe status there) and the target's Connects (nqn "": the records do not name it)
in fail, hosts, path and kato; in io the two tracepoint programs run once per I/O command.
Named skips: state transitions, keep-alive expiries, target controllers and CM events, whose
hooks read the modules' types, and the host's keep-alive failures (no hook: nvme_core's command
tracepoints would cost every host command, bpf/lifecycle_tp.bpf.h).
"""
import json
import os

LC_PROGRAM_PREFIX = 'lc_'


class LifecycleChecks:
    def lc_counts(self, samples, name, **labels):
        return sum(v for n, lab, v in samples
                   if n == name and all(lab.get(k) == str(x) for k, x in labels.items()))

    def lc_delta(self, a, b, name, **labels):
        return self.lc_counts(b, name, **labels) - self.lc_counts(a, name, **labels)

    def lc_expect(self, got, want, what):
        self.check(got == want, '%s = %g' % (what, want), 'got %g' % got)

    def lc_runs(self, phase):
        path = os.path.join(self.dir, 'progs-%s.json' % phase)
        try:
            progs = json.load(open(path))
        except (OSError, ValueError) as e:
            self.check(False, 'bpftool prog show at %s' % phase, str(e))
            return None
        return {p['name']: p.get('run_cnt', 0) for p in progs if p.get('name', '').startswith(LC_PROGRAM_PREFIX)}

    # The classic tracepoint hooks of kernels without module BTF, and their programs.
    LC_TP_HOOKS = {'nvmet_req_init_connect': 'lc_tinit_tp', 'nvmet_req_complete_connect': 'lc_tdone_tp'}

    def lifecycle_without_module_btf(self):
        """5.10 (guest/scenarios/lifecycle.sh): the hooks that read the modules' types cannot
        load and are reported unattached, the exporter's log saying there is no module BTF
        (named skips); the classic tracepoint hooks count the target's Connects, exactly."""
        e = self.env
        ip = e['TRADDR']
        ctrls = [e['CTRL1'], e['CTRL2'], e['CTRL3']]
        m = {p: self.metrics(p) for p in ('start', 'fail', 'hosts', 'io', 'path', 'kato', 'rmmod', 'reload')}
        for p in ('start', 'fail', 'hosts', 'io', 'path', 'kato'):
            self.collectors_ok(m[p], p)
        attached = {l['hook']: (l.get('mechanism'), v) for n, l, v in m['start']
                    if n == 'nvmeof_exporter_bpf_hook_attached'}
        for h in self.LC_TP_HOOKS:
            self.check(attached.get(h) == ('tracepoint', 1), 'start: %s attached through its tracepoint' % h,
                       str(attached.get(h)))
        counting = ('nvme_change_ctrl_state_return', 'nvmet_execute_admin_connect_return',
                    'nvmet_execute_io_connect_return', 'nvmet_alloc_ctrl_return', 'nvmet_ctrl_free',
                    'nvmet_keep_alive_timer')
        log = os.path.join(self.dir, 'exporter.log')
        said = open(log, errors='replace').read() if os.path.exists(log) else ''
        unattached = [h for h in counting if attached.get(h, ('', 1))[1] == 0]
        self.check(unattached == list(counting) and 'no BTF for module nvmet' in said and
                   'no BTF for module nvme_core' in said,
                   'SKIP controller state transitions, target keep-alive expiries, target controllers, '
                   'the host Connect\'s NVMe status and (rdma phase not run) CM events on %s: their hooks '
                   'read the modules\' types; reported unattached, the log saying no module BTF'
                   % e.get('KERNEL'),
                   str({h: attached.get(h) for h in counting}))
        cf, tc = 'nvmeof_controller_connect_failures_total', 'nvmeof_target_connects_total'
        d = lambda a, b, n, **l: self.lc_delta(m[a], m[b], n, **l)  # noqa: E731
        # fail: the host sees the Connect refusals as the write's -EIO (its NVMe status comes from
        # nvmf_connect_admin_queue's return, which cannot load here)
        self.lc_expect(d('start', 'fail', cf, transport='tcp', traddr=ip, trsvcid=4421, error='EIO'), 1,
                       'fail: host connect failure EIO (no such subsystem)')
        self.lc_expect(d('start', 'fail', cf, transport='tcp', traddr=ip, trsvcid=4422, error='EIO'), 1,
                       'fail: host connect failure EIO (host not allowed)')
        self.lc_expect(d('start', 'fail', cf, transport='tcp', traddr=ip, trsvcid=4499, error='ECONNREFUSED'),
                       1, 'fail: host connect failure ECONNREFUSED (no listener)')
        self.lc_expect(d('start', 'fail', cf), 3, 'fail: 3 host connect failures in all')
        self.lc_expect(d('start', 'fail', tc, nqn='', queue='admin', result='invalid_subsystem'), 1,
                       'fail: target Connect invalid_subsystem (nqn "": not in the records)')
        self.lc_expect(d('start', 'fail', tc, nqn='', queue='admin', result='invalid_host'), 1,
                       'fail: target Connect invalid_host')
        self.lc_expect(d('start', 'fail', tc), 2, 'fail: 2 target Connects in all')
        # hosts, path, kato: 3 admin + 3 I/O Connects each
        for a, b in (('fail', 'hosts'), ('io', 'path'), ('path', 'kato')):
            self.lc_expect(d(a, b, tc, nqn='', queue='admin', result='success'), 3, '%s: admin Connects' % b)
            self.lc_expect(d(a, b, tc, nqn='', queue='io', result='success'), 3, '%s: I/O Connects' % b)
            self.lc_expect(d(a, b, tc), 6, '%s: 6 target Connects in all' % b)
        self.lc_expect(d('io', 'path', tc, result='invalid_subsystem'), 0, 'path: no Connect refused')
        # io: the tracepoint programs run per I/O command (each of fio's 2000 reads passes each
        # tracepoint once, besides the admin commands); the others not at all
        before, after = self.lc_runs('hosts'), self.lc_runs('io')
        if before is not None and after is not None:
            ran = {n: c - before.get(n, 0) for n, c in after.items() if c != before.get(n, 0)}
            tp = set(self.LC_TP_HOOKS.values())
            for prog in sorted(tp):
                self.check(2000 <= ran.get(prog, 0) <= 2100,
                           'io: %s ran once per I/O command: 2000 to 2100 times' % prog, str(ran.get(prog, 0)))
            other = {n: c for n, c in ran.items() if n not in tp}
            self.check(sum(other.values()) < 40, 'io: the other lifecycle programs ran %d times (< 2%%): %s'
                       % (sum(other.values()), ', '.join('%s %d' % kv for kv in sorted(other.items())) or 'none'))
        # kato: the host's keep-alive failures are not counted here (no hook: nvme_core's command
        # tracepoints would cost every host command); the series stays absent, not zero
        ka = 'nvmeof_controller_keep_alive_failures_total'
        self.check(all(not self.find(m[p], ka) for p in ('hosts', 'io', 'path', 'kato')),
                   'SKIP host keep-alive failures on %s: not hooked (nvme_core\'s command tracepoints '
                   'would cost every host command); %s absent, not 0' % (e.get('KERNEL'), ka))
        # rmmod and reload
        fabrics = 'nvmf_dev_write'
        self.lc_expect(self.lc_counts(m['rmmod'], 'nvmeof_exporter_bpf_hook_attached', hook=fabrics), 0,
                       'rmmod: %s hook released' % fabrics)
        self.lc_expect(self.lc_counts(m['reload'], 'nvmeof_exporter_bpf_hook_attached', hook=fabrics), 1,
                       'reload: %s hook attached again' % fabrics)
        self.lc_expect(self.lc_counts(m['reload'], cf, transport='tcp', traddr=ip, trsvcid=4499,
                                      error='ECONNREFUSED'), 2, 'reload: no-listener failures 1 -> 2')
        self.check(e.get('RMMOD') == 'ok', 'rmmod nvme_tcp nvme_fabrics with the exporter running')
        self.exporter_alive()

    def scenario_lifecycle(self):
        e = self.env
        if e.get('NO_MODULE_BTF') == '1':
            self.lifecycle_without_module_btf()
            return
        nqn, ip = e['NQN'], e['TRADDR']
        hosts = e['HOSTS'].split()
        ctrls = [e['CTRL1'], e['CTRL2'], e['CTRL3']]
        m = {p: self.metrics(p) for p in ('before-modules', 'start', 'fail', 'rdma-start', 'rdma-fail',
                                           'rdma-connected', 'rdma', 'hosts', 'io', 'path', 'kato', 'rmmod',
                                           'reload')}
        for p, s in m.items():
            self.collectors_ok(s, p) if p not in ('before-modules', 'rmmod', 'reload') else None
        planned = {l['hook'] for p in ('start', 'kato', 'reload') for n, l, v in m[p]
                   if n == 'nvmeof_exporter_bpf_hook_attached'}
        self.check(not planned & set(self.LC_TP_HOOKS),
                   'start..reload: the classic tracepoint hooks are not planned (module BTF)',
                   str(sorted(planned & set(self.LC_TP_HOOKS))))
        cf, tc = 'nvmeof_controller_connect_failures_total', 'nvmeof_target_connects_total'
        st = 'nvmeof_controller_state_transitions_total'
        # fail
        d = lambda a, b, n, **l: self.lc_delta(m[a], m[b], n, **l)  # noqa: E731
        self.lc_expect(d('start', 'fail', cf, transport='tcp', traddr=ip, trsvcid=4421,
                         error='invalid_parameters'), 1, 'fail: host connect failure invalid_parameters')
        self.lc_expect(d('start', 'fail', cf, transport='tcp', traddr=ip, trsvcid=4422, error='invalid_host'),
                       1, 'fail: host connect failure invalid_host')
        self.lc_expect(d('start', 'fail', cf, transport='tcp', traddr=ip, trsvcid=4499, error='ECONNREFUSED'),
                       1, 'fail: host connect failure ECONNREFUSED (no listener)')
        self.lc_expect(d('start', 'fail', cf), 3, 'fail: 3 host connect failures in all')
        self.lc_expect(d('start', 'fail', tc, nqn='other', queue='admin', result='invalid_subsystem'), 1,
                       'fail: target Connect invalid_subsystem (nqn other)')
        self.lc_expect(d('start', 'fail', tc, nqn=e['NQN2'], queue='admin', result='invalid_host'), 1,
                       'fail: target Connect invalid_host')
        self.lc_expect(d('start', 'fail', tc), 2, 'fail: 2 target Connects in all')
        # rdma: the CM handshake over rxe
        cm = 'nvmeof_rdma_cm_events_total'
        self.lc_expect(d('rdma-start', 'rdma-fail', cm, event='rejected') +
                       d('rdma-start', 'rdma-fail', cm, event='unreachable'), 1,
                       'rdma-fail: the CM rejected (or found unreachable) the connect to no listener')
        print('     rdma-fail CM events: %s' % ', '.join(
            '%s/%s %g' % (lab['event'], lab['status'], v - self.lc_counts(m['rdma-start'], cm, **lab))
            for n, lab, v in m['rdma-fail'] if n == cm and v != self.lc_counts(m['rdma-start'], cm, **lab)))
        self.lc_expect(d('rdma-start', 'rdma-fail', cf, transport='rdma', traddr=ip, trsvcid=4498), 1,
                       'rdma-fail: host connect failure')
        self.lc_expect(d('rdma-fail', 'rdma-connected', cm, event='established', status='ok', rdma_device='rxe0',
                         rdma_port=1), 4, 'rdma-connected: established on rxe0 port 1 (2 queues x host and target)')
        self.lc_expect(d('rdma-fail', 'rdma-connected', cm, event='connect_request', status='ok'), 2,
                       'rdma-connected: connect requests at the target')
        self.lc_expect(d('rdma-fail', 'rdma-connected', tc, nqn=nqn, result='success'), 2,
                       'rdma-connected: target Connects (admin + io)')
        # The target side of each queue gets DISCONNECTED (the host's DREQ); the host, which
        # disconnects, destroys its cm_ids right after and sees its own only when the DREP came
        # first (not under TCG here: 2 on 6.12).
        gone = d('rdma-connected', 'rdma', cm, event='disconnected')
        self.check(2 <= gone <= 4, 'rdma: disconnected, 2 (target side) to 4 (and host side)', str(gone))
        # hosts
        for c in ctrls:
            self.lc_expect(d('rdma', 'hosts', st, controller=c, **{'from': 'new', 'to': 'connecting'}), 1,
                           'hosts: %s new -> connecting' % c)
            self.lc_expect(d('rdma', 'hosts', st, controller=c, **{'from': 'connecting', 'to': 'live'}), 1,
                           'hosts: %s connecting -> live' % c)
        self.lc_expect(d('rdma', 'hosts', tc, nqn=nqn, queue='admin', result='success'), 3, 'hosts: admin Connects')
        self.lc_expect(d('rdma', 'hosts', tc, nqn=nqn, queue='io', result='success'), 3, 'hosts: I/O Connects')
        gauge = 'nvmeof_target_controllers'
        for h in hosts[:2]:
            self.lc_expect(self.lc_counts(m['hosts'], gauge, nqn=nqn, hostnqn=h), 1, 'hosts: controllers of %s' % h)
        self.lc_expect(self.lc_counts(m['hosts'], gauge, nqn=nqn, hostnqn='other'), 1,
                       'hosts: controllers of the third host NQN fold into other')
        self.lc_expect(self.lc_counts(m['hosts'], gauge), 3, 'hosts: 3 target controllers in all')
        self.lc_expect(self.lc_counts(m['hosts'], 'nvmeof_exporter_bpf_hostnqn_folded_total'), 1,
                       'hosts: hostnqn_folded_total')
        # io
        before, after = self.lc_runs('hosts'), self.lc_runs('io')
        if before is not None and after is not None:
            ran = {n: c - before.get(n, 0) for n, c in after.items() if c != before.get(n, 0)}
            self.check(sum(ran.values()) < 40, 'io: lifecycle programs ran %d times during 2000 I/Os (< 2%%): %s'
                       % (sum(ran.values()), ', '.join('%s %d' % kv for kv in sorted(ran.items())) or 'none'))
        # path and kato: one full cycle per controller each
        for a, b in (('io', 'path'), ('path', 'kato')):
            for c in ctrls:
                for f, t in (('live', 'resetting'), ('resetting', 'connecting'), ('connecting', 'live')):
                    self.lc_expect(d(a, b, st, controller=c, **{'from': f, 'to': t}), 1,
                                   '%s: %s %s -> %s' % (b, c, f, t))
                self.lc_expect(d(a, b, st, controller=c), 3, '%s: %s 3 transitions in all' % (b, c))
            self.lc_expect(d(a, b, tc, nqn=nqn, queue='admin', result='success'), 3, '%s: admin Connects' % b)
            self.lc_expect(d(a, b, tc, nqn=nqn, queue='io', result='success'), 3, '%s: I/O Connects' % b)
        # The reconnects during the fault found no listener (port disabled): they fail before a
        # Connect command, which is where reconnect failures are counted, and reach no target.
        self.lc_expect(d('io', 'path', tc, result='invalid_subsystem'), 0, 'path: no Connect refused')
        self.lc_expect(d('path', 'kato', 'nvmeof_target_keep_alive_expiries_total', nqn=nqn), 3,
                       'kato: target keep-alive expiries')
        ka_hooked = self.lc_counts(m['kato'], 'nvmeof_exporter_bpf_hook_attached', hook='nvme_keep_alive_end_io')
        if ka_hooked:
            for c in ctrls:
                self.lc_expect(d('path', 'kato', 'nvmeof_controller_keep_alive_failures_total', controller=c), 1,
                               'kato: %s keep-alive failure' % c)
        else:
            print('skip kato: host keep-alive failures (no nvme_keep_alive_end_io on %s)' % e['KERNEL'])
        # rmmod and reload
        fabrics = 'nvmf_dev_write'
        self.lc_expect(self.lc_counts(m['rmmod'], 'nvmeof_exporter_bpf_hook_attached', hook=fabrics), 0,
                       'rmmod: %s hook released' % fabrics)
        self.lc_expect(self.lc_counts(m['rmmod'], gauge), 0, 'rmmod: no target controller left')
        self.lc_expect(self.lc_counts(m['reload'], 'nvmeof_exporter_bpf_hook_attached', hook=fabrics), 1,
                       'reload: %s hook attached again' % fabrics)
        self.lc_expect(self.lc_counts(m['reload'], cf, transport='tcp', traddr=ip, trsvcid=4499,
                                      error='ECONNREFUSED'), 2, 'reload: no-listener failures 1 -> 2')
        self.check(e.get('RMMOD') == 'ok', 'rmmod nvme_tcp nvme_rdma nvme_fabrics with the exporter running')
        self.exporter_alive()
