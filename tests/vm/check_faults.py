"""Checks of the `faults` VM scenario, mixed into check.py's Checker.

The guest ran the exporter (eBPF on) through a series of faults while a background scraper
recorded every scrape (series.txt: '# scrape START END phase=P rc=N http=CODE', then that scrape's
self-metric, hook, command, port and controller lines). Judged here:
  - every scrape answered 200, except while the exporter was down on purpose (between the SIGKILL
    and the restarted exporter serving; after the SIGTERM), when only a refused connection or the
    documented 503 of an exporter still setting up is allowed; never another status;
  - every 200 marks every collector with nvmeof_exporter_collector_success; outside the link and
    port faults every collector succeeds, inside them a 0 is a documented partial result (printed);
  - link: the scrape taken while veth0 was down saw rxe0's port not ACTIVE; the TCP controller
    stayed live and its commands were counted through the flap; after rxe0 was re-created the
    port is ACTIVE and the reconnected RDMA controller live;
  - port: scrapes saw nvmet port 2 gone and back, and the TCP controller live again;
  - kill: the running exporter owned BPF progs, maps and links (so the check can fail), and after
    the SIGKILL none of them is left (bpftool ids), nothing pinned in bpffs;
  - rmmod: with their controllers disconnected, nvme_rdma and nvme_tcp unloaded while the exporter
    runs (it releases their hooks when no controller is left); no hook of theirs reported
    attached while they were gone; after modprobe and reconnect the same hooks are attached with
    the same mechanisms, host and target count fio's I/Os again (exactly), and fio's reads go
    through the same stages as in the baseline (a listed but dead hook merges stages);
  - sigterm: with scrapes in flight and a half-sent request, exit status 0 within 2 s, or within
    the time the kernel took to reap the SIGKILLed exporter (its BPF links' teardown) if longer.
"""
import glob
import json
import os
import re

from check_stages import kernel_short, no_module_btf

_HEADER = re.compile(r'^# scrape (\S+) (\S+) phase=(\S+) rc=(\d+) http=(\S+)$')
# Phases in which a collector may fail (the fault is the kernel state it reads) but is marked.
# Phases whose scrapes may mark a collector failed: the two faults, and SIGTERM, which releases the
# scrapes in flight without the collectors still running (the process ends within 2 s).
FAULT_PHASES = ('link', 'port', 'sigterm')
# Hooks whose functions live in the unloaded host transports.
HOST_TRANSPORT_HOOK = re.compile(r'^nvme_(rdma|tcp)_')
SIGTERM_LIMIT_S = 2.0


class FaultsChecks:
    """Mixin for check.Checker (needs self.metrics, self.check, self.find, self.env, self.dir)."""

    def faults_file(self, name):
        path = os.path.join(self.dir, name)
        return open(path).read() if os.path.exists(path) else None

    def faults_timings(self):
        marks = {}
        for line in (self.faults_file('timings.txt') or '').splitlines():
            name, _, t = line.partition(' ')
            marks.setdefault(name, []).append(float(t))
        return marks

    def faults_series(self):
        scrapes, cur = [], None
        for line in (self.faults_file('series.txt') or '').splitlines():
            h = _HEADER.match(line)
            if h:
                cur = {'t': float(h.group(1)), 't2': float(h.group(2)), 'phase': h.group(3),
                       'rc': int(h.group(4)), 'http': h.group(5), 'samples': []}
                scrapes.append(cur)
            elif cur is not None and line.strip():
                cur['samples'] += self.parse(line)
        return scrapes

    def faults_scrape_statuses(self, scrapes, marks):
        """200 always, except in the two windows where the exporter is down on purpose."""
        windows = []
        if marks.get('kill') and len(marks.get('exporter_serving', [])) >= 2:
            windows.append((marks['kill'][0], marks['exporter_serving'][1]))
        term = self.faults_file('sigterm.txt') or ''
        m = re.search(r'sigterm_at=(\S+)', term)
        if m:
            windows.append((float(m.group(1)), float('inf')))

        def in_window(s):
            return any(s['t2'] >= a and s['t'] <= b for a, b in windows)

        bad, down, by_phase = [], 0, {}
        for s in scrapes:
            key = '%s:%s' % (s['phase'], s['http'] if s['rc'] == 0 or s['http'] != 'none' else 'refused')
            by_phase[key] = by_phase.get(key, 0) + 1
            if s['rc'] == 0 and s['http'] == '200':
                continue
            if in_window(s) and s['http'] in ('none', '503'):
                down += 1
                continue
            bad.append('t=%.2f phase=%s rc=%d http=%s' % (s['t'], s['phase'], s['rc'], s['http']))
        print('     scrapes by phase and outcome: %s' % ', '.join(
            '%s %d' % kv for kv in sorted(by_phase.items())))
        answered = sorted(s['t2'] - s['t'] for s in scrapes if s['http'] == '200')
        if answered:
            print('     answered scrapes took %.2f s median, %.2f s max (wget gives up at 20 s)' % (
                answered[len(answered) // 2], answered[-1]))
        self.check(len(windows) == 2, 'down windows known (SIGKILL..restart, SIGTERM..end)', str(windows))
        self.check(not bad, 'every scrape answered 200 while the exporter ran (%d scrapes, %d in the '
                   'down windows refused or 503)' % (len(scrapes), down), '; '.join(bad[:5]))
        # kill: fio starts and the SIGKILL follows 2 s later, so one scrape may be all it gets.
        for phase, least in (('baseline', 2), ('link', 2), ('port', 2), ('kill', 1), ('rmmod', 2), ('reload', 2)):
            n = len([s for s in scrapes if s['phase'] == phase and s['http'] == '200'])
            self.check(n >= least, 'phase %s: at least %d scrape(s) answered during it' % (phase, least),
                       'got %d' % n)

    def faults_collectors(self, scrapes):
        names = sorted({s[1]['collector'] for sc in scrapes for s in sc['samples']
                        if s[0] == 'nvmeof_exporter_collector_success'})
        self.check('bpf' in names, 'the bpf collector is enabled (%s)' % ','.join(names), str(names))
        unmarked, failed_steady, partial = [], [], {}
        for sc in scrapes:
            if sc['http'] != '200':
                continue
            got = {s[1]['collector']: s[2] for s in sc['samples']
                   if s[0] == 'nvmeof_exporter_collector_success'}
            if sorted(got) != names:
                unmarked.append('t=%.2f: %s' % (sc['t'], sorted(set(names) - set(got))))
            for c, v in got.items():
                if v == 1:
                    continue
                if sc['phase'] in FAULT_PHASES:
                    partial.setdefault((sc['phase'], c), 0)
                    partial[(sc['phase'], c)] += 1
                else:
                    failed_steady.append('t=%.2f phase=%s %s' % (sc['t'], sc['phase'], c))
        self.check(not unmarked, 'every 200 scrape marks every collector\'s success', '; '.join(unmarked[:5]))
        self.check(not failed_steady, 'no collector failed outside the link and port faults and SIGTERM',
                   '; '.join(failed_steady[:5]))
        for (phase, c), n in sorted(partial.items()):
            print('     partial result (documented): collector %s failed in %d scrape(s) of phase %s'
                  % (c, n, phase))

    def faults_link(self, scrapes):
        e = self.env
        down = self.metrics('link-down')  # taken while veth0 was down
        states = [s[1]['state'] for s in self.find(down, 'nvmeof_rdma_port_state', rdma_device=e['RXE_DEV'],
                                                    rdma_port=e['RXE_PORT']) if s[2] == 1]
        self.check(len(states) == 1 and 'ACTIVE' not in states[0],
                   'link-down: nvmeof_rdma_port_state of rxe0/1 is not ACTIVE (%s)' % states, str(states))
        link = [s for s in scrapes if s['phase'] == 'link' and s['http'] == '200']
        tcp = [self.faults_ctrl_state(s, e['TCP_CONTROLLER']) for s in link]
        self.check(tcp and all(c == 'live' for c in tcp), 'link: %s (TCP) live in all %d scrapes of the flap' % (
            e['TCP_CONTROLLER'], len(link)), str(tcp))
        if link:
            n = self.faults_commands(link[0]['samples'], link[-1]['samples'], 'host', 'tcp')
            self.check(n > 0, 'link: host tcp commands counted through the flap (+%g)' % n)
        qp = self.faults_file('rxe-qp-after-flap.txt') or ''
        gsi = re.search(r'lqpn 1 type GSI state (\S+)', qp)
        print('     rxe0 QP1 (GSI) right after the flap: %s' % (
            gsi.group(1) if gsi else 'not listed'))
        after = self.metrics('link-after')
        self.rdma_port(after, 'link-after')
        self.expect_one(after, 'link-after', 'nvmeof_controller_state', 1.0, controller=e['RDMA_CONTROLLER_LINK'],
                        state='live')
        self.expect_one(after, 'link-after', 'nvmeof_controller_state', 1.0, controller=e['TCP_CONTROLLER'],
                        state='live')

    @staticmethod
    def faults_ctrl_state(scrape, ctrl):
        on = [x[1]['state'] for x in scrape['samples'] if x[0] == 'nvmeof_controller_state'
              and x[1].get('controller') == ctrl and x[2] == 1]
        return on[0] if len(on) == 1 else None

    def faults_port(self, scrapes):
        e = self.env
        ports = [sorted(x[1]['nvmet_port'] for x in s['samples'] if x[0] == 'nvmeof_target_port_info')
                 for s in scrapes if s['phase'] == 'port' and s['http'] == '200']
        self.check(any('2' not in p for p in ports) and '2' in ports[-1] if ports else False,
                   'port: scrapes saw nvmet port 2 gone, then back', str(ports))
        removed = self.metrics('port-removed')
        self.expect_none([s for s in removed if s[1].get('nvmet_port') == '2'], 'port-removed',
                         'nvmeof_target_port_info', 'nvmeof_target_port_subsystem')
        self.expect_one(removed, 'port-removed', 'nvmeof_target_port_info', 1.0, nvmet_port='1')
        after = self.metrics('port-after')
        self.expect_one(after, 'port-after', 'nvmeof_target_port_info', 1.0, nvmet_port='2', trtype='tcp',
                        traddr=e['TRADDR'], trsvcid='4421')
        self.expect_one(after, 'port-after', 'nvmeof_target_port_subsystem', 1.0, nvmet_port='2',
                        nqn=e['TCP_NQN'])
        self.expect_one(after, 'port-after', 'nvmeof_controller_state', 1.0, controller=e['TCP_CONTROLLER'],
                        state='live')

    def faults_bpf_ids(self, name):
        text = self.faults_file('bpf-%s.txt' % name)
        if text is None:
            return None
        return {tuple(line.split()) for line in text.splitlines() if line.strip()}

    def faults_kill(self):
        before, running, after = (self.faults_bpf_ids(n) for n in ('before-start', 'running', 'after-kill'))
        if not self.check(None not in (before, running, after), 'bpftool lists before start, running, after kill'):
            return
        own = running - before
        kinds = {k: len([1 for kind, _ in own if kind == k]) for k in ('prog', 'map', 'link')}
        self.check(all(kinds.values()), 'the running exporter owned BPF objects (%s)' % ', '.join(
            '%d %ss' % (n, k) for k, n in kinds.items()), str(kinds))
        left = after - before
        self.check(not left, 'after SIGKILL none of its %d BPF progs/maps/links is left' % len(own),
                   '%d left: %s' % (len(left), sorted(left)[:10]))
        bpffs = (self.faults_file('bpffs-after-kill.txt') or '').split()
        self.check(bpffs == ['/sys/fs/bpf:'], 'nothing pinned in /sys/fs/bpf after the kill', str(bpffs[:5]))
        marks = self.faults_timings()
        if marks.get('kill') and marks.get('exporter_killed') and marks.get('bpf_objects_released'):
            print('     SIGKILL: process reaped %.2f s after the signal, BPF objects gone %.2f s after '
                  'that (bpftool polled every 0.2 s)' % (
                      marks['exporter_killed'][0] - marks['kill'][0],
                      marks['bpf_objects_released'][0] - marks['exporter_killed'][0]))

    def faults_hooks(self, name):
        text = self.faults_file('hooks-%s.txt' % name)
        return [tuple(line.split()) for line in (text or '').splitlines() if line.strip()]

    def faults_commands(self, before, after, role, transport):
        def total(samples):
            return sum(v for n, l, v in samples if n == 'nvmeof_commands_total' and l.get('role') == role
                       and l.get('transport') == transport)
        return total(after) - total(before)

    @staticmethod
    def faults_stages(before, after, role, transport):
        """Stages that most of the sampled commands between two scrapes went through (their
        nvmeof_stage_latency_seconds_count rose by at least 10% of the largest rise): a dead hook
        moves all of them, while a stray command (6.1: 1 in 51 without a response point) does not."""
        def counts(samples):
            out = {}
            for n, l, v in samples:
                if n == 'nvmeof_stage_latency_seconds_count' and l.get('role') == role \
                        and l.get('transport') == transport:
                    out[l['stage']] = out.get(l['stage'], 0) + v
            return out
        b, a = counts(before), counts(after)
        rise = {st: v - b.get(st, 0) for st, v in a.items()}
        top = max(rise.values(), default=0)
        return {st for st, d in rise.items() if top > 0 and d >= 0.1 * top}

    def faults_rmmod(self):
        e = self.env
        marks = self.faults_timings()
        for m in ('nvme_rdma', 'nvme_tcp'):
            out = self.faults_file('rmmod-%s.txt' % m) or ''
            took = ''
            if marks.get('disconnected') and marks.get('rmmod_' + m):
                took = ', %.1f s after the disconnect' % (marks['rmmod_' + m][0] - marks['disconnected'][0])
            self.check('rc=0 ' in out + ' ', 'rmmod %s with the exporter running%s' % (m, took),
                       out.strip().replace('\n', ' | '))
        lsmod = self.faults_file('lsmod-after-rmmod.txt') or ''
        loaded = [m for m in ('nvme_rdma', 'nvme_tcp') if re.search(r'^%s\s' % m, lsmod, re.M)]
        self.check(not loaded, 'nvme_rdma and nvme_tcp gone from lsmod', 'still loaded: %s' % loaded)
        before = self.faults_hooks('before-rmmod')
        host = [h for h in before if HOST_TRANSPORT_HOOK.match(h[0])]
        if not host and no_module_btf(e.get('KERNEL', '')):
            # Before 5.11 the host transports' hooks cannot load (no module BTF): rmmod under
            # them is not tested; the exporter must report them unattached, saying why.
            base = self.metrics('baseline-after-io')
            unattached = [s[1]['hook'] for s in base if s[0] == 'nvmeof_exporter_bpf_hook_attached'
                          and HOST_TRANSPORT_HOOK.match(s[1]['hook']) and s[2] == 0]
            log = ''.join(open(p, errors='replace').read() for p in glob.glob(
                os.path.join(self.dir, 'exporter-*.log')))
            self.check(bool(unattached) and 'no BTF for module nvme_rdma' in log,
                       'SKIP rmmod under attached nvme_rdma/nvme_tcp hooks on %s: reported '
                       'unattached (%s), the log saying no BTF for module nvme_rdma'
                       % (e.get('KERNEL'), ' '.join(unattached)))
        else:
            self.check(bool(host), 'hooks in nvme_rdma/nvme_tcp attached before rmmod (%s)' % ' '.join(
                '%s/%s' % h for h in host))
        gone = self.metrics('modules-gone')
        still = [s[1]['hook'] for s in gone if s[0] == 'nvmeof_exporter_bpf_hook_attached'
                 and HOST_TRANSPORT_HOOK.match(s[1]['hook']) and s[2] == 1]
        if loaded:
            print('     modules-gone: not judged, the modules are still loaded (hooks attached: %s)' % still)
        else:
            self.check(not still, 'modules-gone: no nvme_rdma/nvme_tcp hook reported attached', str(still))
        after = self.faults_hooks('after-reload')
        self.check(before and after == before, 'after modprobe and reconnect the same %d hooks are attached '
                   'with the same mechanisms' % len(before),
                   'lost %s, new %s' % (sorted(set(before) - set(after)), sorted(set(after) - set(before))))
        b, a = self.metrics('reload-before-io'), self.metrics('reload-after-io')
        ios = int(e['FIO_IOS'])
        # Attached must mean firing: the stages fio's reads went through after the reload are
        # those of the baseline. A hook that is listed but dead merges its neighbours instead
        # (driver_submit+network_and_target where command_send and target_and_response were).
        base_b, base_a = self.metrics('baseline-before-io'), self.metrics('baseline-after-io')
        for transport in ('rdma', 'tcp'):
            for role in ('host', 'target'):
                was = self.faults_stages(base_b, base_a, role, transport)
                now = self.faults_stages(b, a, role, transport)
                self.check(was and now == was, 'reload: %s %s commands go through the baseline\'s stages (%s)' % (
                    role, transport, ' '.join(sorted(was))), 'now %s' % ' '.join(sorted(now)))
        for transport in ('rdma', 'tcp'):
            self.fio('reload-%s' % transport)
            for role in ('host', 'target'):
                n = self.faults_commands(b, a, role, transport)
                self.check(n == ios, 'reload: %s %s nvmeof_commands_total rose by fio\'s %d I/Os' % (
                    role, transport, ios), 'rose by %g' % n)

    def faults_sigterm(self):
        text = self.faults_file('sigterm.txt')
        if not self.check(text is not None, 'sigterm.txt present'):
            return
        kv = dict(p.split('=', 1) for p in text.split())
        took = float(kv['exited_at']) - float(kv['sigterm_at'])
        self.check(int(kv['scrapes_in_flight']) >= 1, 'SIGTERM sent with %s scrape(s) in flight' % kv['scrapes_in_flight'])
        self.check(kv['exit_code'] == '0', 'SIGTERM: exit status 0', 'status %s' % kv['exit_code'])
        # Process exit detaches every BPF link in the kernel (a trampoline or kprobe update with
        # an RCU-tasks grace period each), which no exporter code can shorten: under TCG that
        # alone takes seconds, as the SIGKILL above shows. So the bound is 2 s or, when the
        # kernel's own teardown took longer, no longer than that.
        marks = self.faults_timings()
        reap = (marks['exporter_killed'][0] - marks['kill'][0]
                if marks.get('kill') and marks.get('exporter_killed') else None)
        bound = max(SIGTERM_LIMIT_S, reap or 0)
        self.check(took <= bound, 'SIGTERM: exited %.2f s after the signal (bound %.2f s: 2 s, or the %s s '
                   'a SIGKILL of it took to be reaped)' % (took, bound, '%.2f' % reap if reap else '?'),
                   '%.2f s' % took)

    def scenario_faults(self):
        scrapes = self.faults_series()
        marks = self.faults_timings()
        print('     kernel %s, %d timed scrapes' % (kernel_short(self.env['KERNEL']), len(scrapes)))
        self.faults_scrape_statuses(scrapes, marks)
        self.faults_collectors(scrapes)
        for name in ('baseline-rdma', 'baseline-tcp'):
            self.fio(name)
        b, a = self.metrics('baseline-before-io'), self.metrics('baseline-after-io')
        self.collectors_ok(a, 'baseline-after-io')
        for transport in ('rdma', 'tcp'):
            n = self.faults_commands(b, a, 'host', transport)
            self.check(n == int(self.env['FIO_IOS']), 'baseline: host %s commands counted exactly' % transport,
                       'rose by %g' % n)
        self.faults_link(scrapes)
        self.faults_port(scrapes)
        self.faults_kill()
        self.collectors_ok(self.metrics('restarted'), 'restarted')
        self.faults_rmmod()
        self.faults_sigterm()
        errors = (self.faults_file('fio-errors.txt') or '').strip()
        print('     fio during the faults: %s' % (errors.replace('\n', '; ') or 'no error'))
