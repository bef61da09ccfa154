#!/usr/bin/env python3
"""Generates the Grafana dashboards in this directory (python3 stdlib only).

The JSON files are generated, not hand-edited, so panel ids, grid positions, datasource references
and template variables stay consistent. Edit this file, then run:

    dashboards/generate.py           # rewrite the JSON files
    dashboards/generate.py --check   # exit 1 if a JSON file is not what this script generates

Latency panels read the recorded series of deploy/prometheus/nvmeof-recording.rules.yml (rates,
sums, counts and p99s recorded once per interval, on native and classic histograms alike), never a
raw histogram; the one exception is the two end-to-end heatmaps of one instance, which need the
distribution itself (`heatmap()` below). Every query uses the template variables as regular
expressions (`=~"$var"`) so "All" (`.*`) also matches series without that label. Metric names: docs/metrics.md and deploy/README.md.
"""
import json
import os
import sys

DS = {"type": "prometheus", "uid": "${datasource}"}
HERE = os.path.dirname(os.path.abspath(__file__))


class Dashboard:
    def __init__(self, uid, title, description, tags):
        self.uid, self.title, self.description, self.tags = uid, title, description, tags
        self.panels, self.variables = [], []
        self.next_id, self.x, self.y, self.row_h = 1, 0, 0, 0

    # --- template variables
    def var(self, name, label, query, multi=True, regex="", all_value=".*"):
        # multi=False: single-select without "All"; Grafana selects the first value.
        self.variables.append({
            "name": name, "label": label, "type": "query", "datasource": DS,
            "query": {"query": query, "refId": "var_" + name}, "definition": query,
            "refresh": 2, "regex": regex, "sort": 1, "multi": multi, "includeAll": multi,
            "allValue": all_value if multi else None,
            "current": ({"selected": True, "text": ["All"], "value": ["$__all"]} if multi else {}),
            "hide": 0, "options": [],
        })

    def fleet_vars(self):
        """job (the scrape job, standing in for a cluster) and instance, single-select: a fleet
        has hundreds of instances, and histogram_quantile over all of them is no one's answer."""
        self.var("job", "Job", "label_values(nvmeof_exporter_build_info, job)")
        self.var("instance", "Instance",
                 'label_values(nvmeof_exporter_build_info{job=~"$job"}, instance)', multi=False)

    # --- layout: panels flow left to right, 24 columns wide
    def _place(self, w, h):
        if self.x + w > 24:
            self.x, self.y = 0, self.y + self.row_h
            self.row_h = 0
        pos = {"x": self.x, "y": self.y, "w": w, "h": h}
        self.x += w
        self.row_h = max(self.row_h, h)
        return pos

    def row(self, title):
        if self.x:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        self.panels.append({"id": self.next_id, "type": "row", "title": title, "collapsed": False,
                            "gridPos": {"x": 0, "y": self.y, "w": 24, "h": 1}, "panels": []})
        self.next_id += 1
        self.y += 1

    def panel(self, kind, title, description, unit, targets, w=12, h=8, **extra):
        p = {
            "id": self.next_id, "type": kind, "title": title, "description": description,
            "datasource": DS, "gridPos": self._place(w, h),
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "options": {}, "targets": [],
        }
        self.next_id += 1
        for i, t in enumerate(targets):
            expr, legend, *more = (t, "") if isinstance(t, str) else t
            p["targets"].append({"refId": chr(ord("A") + i), "datasource": DS, "expr": expr,
                                 "legendFormat": legend, "range": True, "instant": False,
                                 **(more[0] if more else {})})
        if kind == "timeseries":
            stack = extra.pop("stack", False)
            p["fieldConfig"]["defaults"]["custom"] = {
                "drawStyle": extra.pop("draw", "line"), "lineWidth": 1, "fillOpacity": 10,
                "showPoints": "never", "spanNulls": False,
                "stacking": {"mode": "normal" if stack else "none", "group": "A"}}
            p["options"] = {"legend": {"displayMode": "table", "placement": "bottom",
                                       "calcs": ["mean", "max", "lastNotNull"]},
                            "tooltip": {"mode": "multi", "sort": "desc"}}
        elif kind == "stat":
            p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "",
                                              "values": False},
                            "colorMode": "value", "graphMode": "area", "textMode": "auto"}
        elif kind == "table":
            for t in p["targets"]:
                t.update({"format": "table", "instant": True, "range": False})
            p["options"] = {"showHeader": True}
            p["transformations"] = [{"id": "organize", "options": {
                "excludeByName": {"Time": True, "__name__": True, "job": True}}}]
        elif kind == "heatmap":
            for t in p["targets"]:
                t.update({"format": "heatmap", "legendFormat": "{{le}}"})
            p["options"] = {"calculate": False, "yAxis": {"unit": unit},
                            "cellGap": 1, "color": {"mode": "scheme", "scheme": "Spectral",
                                                    "steps": 64},
                            "tooltip": {"show": True, "yHistogram": True}}
        p.update(extra)
        self.panels.append(p)

    def json(self):
        return {
            "uid": self.uid, "title": self.title, "description": self.description,
            "tags": self.tags, "timezone": "", "editable": True, "graphTooltip": 1,
            "schemaVersion": 39, "version": 1, "refresh": "30s",
            "time": {"from": "now-3h", "to": "now"}, "fiscalYearStartMonth": 0,
            "annotations": {"list": []},
            "links": [{"title": "nvmeof dashboards", "type": "dashboards", "tags": ["nvmeof"],
                       "asDropdown": True, "includeVars": True, "keepTime": True}],
            "templating": {"list": [{
                "name": "datasource", "label": "Data source", "type": "datasource",
                "query": "prometheus", "current": {}, "hide": 0, "refresh": 1, "regex": "",
                "options": []}] + self.variables},
            "panels": self.panels,
        }


RI = "$__rate_interval"


def p99(by, metric, sel):
    """The recorded p99 of METRIC (instance:METRIC:p99_5m: per namespace or NQN end to end, per
    controller or NQN and stage for the stages, per disk (and stage) for the block layer),
    grouped by `by` as a maximum: the worst of the series selected. p99s do not add up, so a
    panel shows the worst series' p99, never a p99 rebuilt over several series."""
    rec = f"instance:{metric}:p99_5m{{{sel}}}"
    return f"max by ({by}) ({rec})" if by else f"max({rec})"


def exemplars(metric, sel):
    """A target that draws no line, only the exemplars of METRIC's raw series (the classic
    `_bucket` series and the native histogram: the exporter puts each scrape's slowest recorded
    command on them, labelled `command`). Recorded series carry no exemplars, and a comparison
    no sample passes keeps the query to one instant selection; Prometheus' query_exemplars takes
    the selector from the expression."""
    return (f'{{__name__=~"{metric}(_bucket)?",{sel}}} < 0', "slowest command",
            {"exemplar": True})


def heatmap(metric, sel):
    """The distribution of one instance's METRIC: the raw native histogram (Prometheus 2.42 cannot
    record one, see nvmeof-recording.rules.yml; one instance's series, so cheap) or the recorded
    classic bucket rates."""
    return (f"sum(rate({metric}{{{sel}}}[5m])) or "
            f"sum by (le) (instance:{metric}_bucket:rate5m{{{sel}}})")


# NVMe-oF transports; pcie (local drives) and loop are shown apart.
FABRIC = "rdma|tcp|fc"


def connections(d, I):
    """The connection lifecycle, counted by the eBPF lifecycle hooks at every event (also
    between two scrapes): docs/connections.md walks through these panels in order."""
    d.row("Connections")
    bars = dict(draw="bars")
    d.panel("timeseries", "Failed connects (host)",
            "Connect attempts that failed on the hosts, by target address and errno or NVMe "
            "status (alert: NvmeofHostConnectFailures).", "short",
            [(f"sum by (instance, traddr, trsvcid, error) "
              f"(increase(nvmeof_controller_connect_failures_total{{{I}}}[{RI}]))",
              "{{instance}} -> {{traddr}}:{{trsvcid}} {{error}}")], w=8, **bars)
    d.panel("timeseries", "RDMA-CM events",
            "RDMA connection manager events by event and status (reject reason or errno): "
            "rejected = nothing listens / refused, unreachable = no answer (alert: "
            "RdmaCmConnectFailures).", "short",
            [(f"sum by (instance, event, status) "
              f"(increase(nvmeof_rdma_cm_events_total{{{I}}}[{RI}]))",
              "{{instance}} {{event}} {{status}}")], w=8, **bars)
    d.panel("timeseries", "Connect commands (target)",
            "Fabrics Connect commands the targets answered, per subsystem, queue type and "
            "result: success, or the NVMe status (invalid_host: not in allowed_hosts; alert: "
            "NvmeofTargetConnectRejected).", "short",
            [(f'sum by (instance, nqn, queue, result) '
              f'(increase(nvmeof_target_connects_total{{{I}, nqn=~"$nqn"}}[{RI}]))',
              "{{instance}} {{nqn}} {{queue}} {{result}}")], w=8, **bars)
    d.panel("timeseries", "Controller state transitions (host)",
            "Host controller state transitions, also those between two scrapes; to=connecting "
            "is a reconnect (alert: NvmeofControllerFlapping at 3 in 10 minutes).", "short",
            [(f"sum by (instance, controller, from, to) "
              f"(increase(nvmeof_controller_state_transitions_total{{{I}}}[{RI}]))",
              "{{instance}} {{controller}} {{from}} -> {{to}}")], w=8, **bars)
    d.panel("timeseries", "Keep-alive failures and expiries",
            "Host keep-alives that failed (per controller) and target controllers torn down "
            "because their keep-alive expired (per subsystem) (alerts: "
            "NvmeofHostKeepAliveFailures, NvmeofTargetKeepAliveExpired).", "short",
            [(f"sum by (instance, controller) "
              f"(increase(nvmeof_controller_keep_alive_failures_total{{{I}}}[{RI}]))",
              "{{instance}} {{controller}} host keep-alive failed"),
             (f'sum by (instance, nqn) '
              f'(increase(nvmeof_target_keep_alive_expiries_total{{{I}, nqn=~"$nqn"}}[{RI}]))',
              "{{instance}} {{nqn}} target keep-alive expired")], w=8, **bars)
    d.panel("table", "Connected hosts (target)",
            "Controllers connected now per subsystem and host NQN (past the exporter's host "
            "NQN limit, hostnqn=\"other\").", "none",
            [f'nvmeof_target_controllers{{{I}, nqn=~"$nqn"}}'], w=8)


def latency():
    d = Dashboard("nvmeof-latency", "NVMe-oF latency",
                  "Where each NVMe-oF command spends its time, per stage, on the host and on the "
                  "target: is it the drive, the target, the network or the host?",
                  ["nvmeof", "latency"])
    d.fleet_vars()
    # Fabric transports only: local PCIe drives have their own row below, so that a fast local
    # SSD does not hide a slow fabric in a blended p99.
    d.var("transport", "Transport (fabric)",
          'label_values(nvmeof_commands_total{job=~"$job", instance=~"$instance"}, transport)',
          regex=f"/^({FABRIC})$/", all_value=FABRIC)
    d.var("controller", "Controller (host)",
          'label_values(nvmeof_commands_total{role="host", job=~"$job", instance=~"$instance", transport=~"$transport"}, controller)')
    # The subsystems the instance serves (target) or connects to (host): "Where the time goes"
    # and "Network estimate" read the fleet's per-NQN target series through it, so a host's
    # view shows its own subsystems' residence and drive, and reads only those.
    d.var("nqn", "Subsystem NQN",
          'label_values({__name__=~"nvmeof_controller_info|nvmeof_target_namespace_info", '
          'job=~"$job", instance=~"$instance"}, nqn)')
    d.var("op", "Op", 'label_values(nvmeof_commands_total{job=~"$job", instance=~"$instance"}, op)')
    d.var("disk", "Block device",
          'label_values(nvmeof_block_requests_total{job=~"$job", instance=~"$instance"}, disk)')
    J = 'job=~"$job", instance=~"$instance"'
    # The host's recorded series are per controller (one path to one subsystem): end to end
    # (the rules sum the namespaces away) and stages (bpf.stage_detail: controller, the
    # default; at namespace the stage rules sum nvme_namespace away too).
    H = f'role="host", {J}, transport=~"$transport", controller=~"$controller", op=~"$op"'
    HS = H
    T = f'role="target", {J}, transport=~"$transport", nqn=~"$nqn", op=~"$op"'
    L = f'role="host", {J}, transport="pcie", op=~"$op"'
    B = f'{J}, disk=~"$disk"'
    # The block p99s are recorded per node over its disks (per disk: the means).
    BN = J
    SAMPLED = ("Latency histograms are sampled (1 in nvmeof_exporter_bpf_sample_every commands); "
               "counts of commands are exact.")

    d.row("At a glance")
    d.panel("stat", "Host IOPS", "NVMe-oF commands completed per second on the hosts (exact).",
            "iops", [f"sum(instance:nvmeof_commands:rate5m{{{H}}})"], w=5, h=4)
    d.panel("stat", "Host p99 (worst controller)", "End-to-end p99 on the hosts, block layer "
            "submission to completion, of the worst selected controller (one path to one "
            "subsystem). " + SAMPLED, "s",
            [p99("", "nvmeof_command_latency_seconds", H)],
            w=5, h=4)
    d.panel("stat", "Target IOPS", "NVMe-oF commands completed per second on the targets.",
            "iops", [f"sum(instance:nvmeof_commands:rate5m{{{T}}})"], w=5, h=4)
    d.panel("stat", "Target p99 (worst subsystem)", "End-to-end p99 on the targets, capsule "
            "received to response sent, of the worst selected subsystem. " + SAMPLED, "s",
            [p99("", "nvmeof_command_latency_seconds", T)],
            w=5, h=4)
    d.panel("stat", "Network estimate (max)",
            "Largest estimated network time over hosts and subsystems: host mean round trip "
            "minus the target's mean residence (recording rule "
            "instance_nqn:nvmeof_network_estimate_seconds:mean5m).", "s",
            ['max(instance_nqn:nvmeof_network_estimate_seconds:mean5m{instance=~"$instance", '
             'transport=~"$transport", op=~"$op"})'], w=4, h=4)

    d.row("Controllers and paths")
    I = J
    d.panel("table", "Host controllers not live",
            "Controllers whose state is not live, with their transport and address (alert: "
            "NvmeofControllerNotLive). Empty when all are live.", "none",
            [f'(nvmeof_controller_state{{{I}, state!="live"}} == 1) * on (instance, job, controller) '
             f'group_left (transport, traddr, trsvcid, nqn) '
             f'nvmeof_controller_info{{{I}, transport=~"$transport"}}'], w=12)
    d.panel("table", "Host controllers", "Every controller's current state.", "none",
            [f"nvmeof_controller_state{{{I}}} == 1"], w=12)
    d.panel("table", "Host paths (ANA state)", "Each path of each namespace and its ANA state "
            "(alerts: NvmeofPathInaccessible, NvmeofNamespaceNoUsablePath).", "none",
            [f"nvmeof_path_ana_state{{{I}}} == 1"], w=12)
    d.panel("table", "Target ports and ANA groups", "ANA state of each target port's groups, "
            "with the port's transport and address.", "none",
            [f"(nvmeof_target_ana_group_state{{{I}}} == 1) * on (instance, job, nvmet_port) "
             f"group_left (trtype, traddr, trsvcid) nvmeof_target_port_info{{{I}}}"], w=12)
    d.panel("timeseries", "Controller resets, reconnects and errors",
            "Resets, reconnects and commands completed with an error, per controller.", "short",
            [(f"increase(nvmeof_controller_resets_total{{{I}}}[{RI}])",
              "{{instance}} {{controller}} resets"),
             (f"increase(nvmeof_controller_reconnects_total{{{I}}}[{RI}])",
              "{{instance}} {{controller}} reconnects"),
             (f"increase(nvmeof_controller_command_errors_total{{{I}}}[{RI}])",
              "{{instance}} {{controller}} command errors")], w=24)
    d.panel("timeseries", "Commands in flight per path",
            "Commands each path (controller) of each namespace has issued and not completed, at "
            "each scrape: how the multipath I/O policy spreads the load, and what waits on a "
            "path that is not live.", "short",
            [(f"sum by (instance, controller, nvme_namespace) "
              f"(nvmeof_path_inflight_commands{{{I}}})",
              "{{instance}} {{nvme_namespace}} via {{controller}}")], w=24)
    d.panel("timeseries", "Failovers and I/O without a path",
            "Host commands failed over from each path (controller) to another, and I/O each "
            "multipath head found no usable path for and requeued until a path came back "
            "(alerts: NvmeofNamespaceFailingOver, NvmeofNamespaceIoWithoutPath).", "short",
            [(f"increase(nvmeof_path_failovers_total{{{I}}}[{RI}])",
              "{{instance}} {{controller}} failed over"),
             (f"increase(nvmeof_namespace_no_usable_path_total{{{I}}}[{RI}])",
              "{{instance}} {{nvme_namespace}} without a path")], w=12)
    d.panel("timeseries", "Failover stalls",
            "How long each multipath head's I/O waited for a path, summed over the stalls that "
            "ended in the interval (from the first I/O failed over or without a path to all of "
            "it on a path again; alert NvmeofNamespaceFailoverStall past 4 s; how many: "
            "nvmeof_namespace_failover_stall_seconds_count).", "s",
            [(f"increase(nvmeof_namespace_failover_stall_seconds_sum{{{I}}}[{RI}])",
              "{{instance}} {{nvme_namespace}} stalled")], w=12)

    connections(d, I)

    STG = "nvmeof_stage_latency_seconds"
    for role, sel, who in (("host", HS, "Host"), ("target", T, "Target")):
        d.row(f"{who} stages")
        d.panel("timeseries", f"{who} p99 by stage",
                f"p99 of each {role} stage as served (default tier: block_submit, round_trip, "
                "block_complete on hosts, residence on targets; transport tier: its finer "
                "stages), of the worst selected controller or subsystem and op: one glance shows "
                "which stage moved. " + SAMPLED, "s",
                [(p99("stage", STG, sel), "{{stage}}")])
        d.panel("timeseries", f"{who}: mean time per command by stage (stacked)",
                f"Time per command in each {role} stage (stage time / commands timed end to end), "
                f"stacked: the stages add up to the {role}'s end-to-end mean, also where a command "
                "may skip a point (RDMA send completion after the response).", "s",
                [(f"sum by (stage) (instance:nvmeof_stage_latency_seconds_sum:rate5m{{{sel}}}) / "
                  f"ignoring (stage) group_left sum(instance:nvmeof_command_latency_seconds_count:rate5m{{{sel}}})",
                  "{{stage}}")], stack=True)
        d.panel("timeseries", f"{who} queue depth by stage (Little's law)",
                "Average number of commands inside each stage: arrival rate x mean time = "
                "rate(..._sum), scaled by the sampling factor.", "short",
                [(f"sum by (stage) (instance:nvmeof_stage_latency_seconds_sum:rate5m{{{sel}}} "
                  "* on (instance, job) group_left nvmeof_exporter_bpf_sample_every)", "{{stage}}")])
        if role == "host":
            # Per controller, not per namespace: the stage series' host granularity at the
            # default bpf.stage_detail (controller); end-to-end per namespace is below.
            d.panel("timeseries", "Host p99 by controller and stage",
                    "p99 of each host stage per controller (one path to one subsystem), to find "
                    "the controller whose stage moved. At bpf.stage_detail: node there is no "
                    "controller label: one line per stage. " + SAMPLED, "s",
                    [(p99("instance, controller, stage", STG, sel),
                      "{{instance}} {{controller}} {{stage}}")], w=24)

    d.row("End to end")
    d.panel("timeseries", "Host p99 by controller",
            "End-to-end p99 per controller: one host's path to one subsystem, all its "
            "namespaces (nvmeof_controller_info names the subsystem's NQN). " + SAMPLED, "s",
            [(p99("instance, controller, op", "nvmeof_command_latency_seconds", H),
              "{{instance}} {{controller}} {{op}}"),
             exemplars("nvmeof_command_latency_seconds", H)])
    d.panel("timeseries", "Target p99 by subsystem",
            "Target end-to-end p99 per subsystem. " + SAMPLED, "s",
            [(p99("instance, nqn, op", "nvmeof_command_latency_seconds", T),
              "{{instance}} {{nqn}} {{op}}"),
             exemplars("nvmeof_command_latency_seconds", T)])
    d.panel("timeseries", "Host IOPS by controller", "Commands per second per controller "
            "(exact).", "iops",
            [(f"sum by (instance, controller, op) (instance:nvmeof_commands:rate5m{{{H}}})",
              "{{instance}} {{controller}} {{op}}")])
    d.panel("timeseries", "Target IOPS by subsystem", "Commands per second per subsystem.",
            "iops", [(f"sum by (instance, nqn, op) (instance:nvmeof_commands:rate5m{{{T}}})",
                      "{{instance}} {{nqn}} {{op}}")])
    d.panel("timeseries", "Network estimate",
            "Host mean round trip (nvme_setup_cmd to nvme_complete_rq; in the transport tier its "
            "driver_submit, network_and_target and host_receive) minus the target's mean "
            "residence (nvmet_req_init to nvmet_req_complete) for the same subsystem NQN: the "
            "network both ways, the host driver and receive path, and what the target does "
            "before nvmet_req_init and after nvmet_req_complete. The same in both tiers. Needs the recording rules "
            "of deploy/prometheus and both exporters in the same Prometheus.", "s",
            [('instance_nqn:nvmeof_network_estimate_seconds:mean5m{job=~"$job", instance=~"$instance", '
              'transport=~"$transport", op=~"$op"}', "network {{instance}} {{nqn}} {{op}}"),
             ('instance_nqn:nvmeof_host_span_seconds:mean5m{span="round_trip", job=~"$job", '
              'instance=~"$instance", transport=~"$transport", op=~"$op"}',
              "host round trip {{instance}} {{nqn}} {{op}}"),
             ('nqn:nvmeof_target_residence_seconds:mean5m{transport=~"$transport", '
              'nqn=~"$nqn", op=~"$op"}', "target {{nqn}} {{op}}")], w=24)
    d.panel("timeseries", "Where the time goes: host, network, target, drive",
            "Mean time per command per subsystem NQN and op, in four parts that add up to the "
            "host's end-to-end mean, in either hook tier: host = its block layer (block_submit + "
            "block_complete); network = the estimate above; target = its residence minus the "
            "drive; drive = the block `device` stage of the target's backing disks (each "
            "namespace's device_path joined to the block series of the target node: "
            "nqn:nvmeof_target_drive_seconds:mean5m). Where no backing disk is traced (a "
            "partition, /dev/mapper path or a disk outside bpf.block_devices), target shows the "
            "whole residence and drive is absent.", "s",
            [('instance_nqn:nvmeof_host_span_seconds:mean5m{span="host", job=~"$job", '
              'instance=~"$instance", transport=~"$transport", op=~"$op"}',
              "host {{instance}} {{nqn}} {{op}}"),
             ('instance_nqn:nvmeof_network_estimate_seconds:mean5m{job=~"$job", instance=~"$instance", '
              'transport=~"$transport", op=~"$op"}', "network {{instance}} {{nqn}} {{op}}"),
             ('(nqn:nvmeof_target_residence_seconds:mean5m{transport=~"$transport", nqn=~"$nqn", op=~"$op"} '
              '- ignoring (transport) group_left nqn:nvmeof_target_drive_seconds:mean5m) or '
              'nqn:nvmeof_target_residence_seconds:mean5m{transport=~"$transport", nqn=~"$nqn", op=~"$op"}',
              "target {{nqn}} {{op}}"),
             ('nqn:nvmeof_target_drive_seconds:mean5m{nqn=~"$nqn", op=~"$op"}', "drive {{nqn}} {{op}}")],
            w=24)
    d.panel("heatmap", "Host end-to-end latency",
            "Distribution of host end-to-end latency over time (all selected devices).", "s",
            [heatmap("nvmeof_command_latency_seconds", H)])
    d.panel("heatmap", "Target end-to-end latency",
            "Distribution of target end-to-end latency over time (all selected subsystems).", "s",
            [heatmap("nvmeof_command_latency_seconds", T)])

    d.row("Local PCIe NVMe drives (not NVMe-oF)")
    d.panel("timeseries", "Local PCIe p99 by controller",
            "End-to-end p99 of local PCIe NVMe controllers (all their namespaces), apart from "
            "the fabric numbers above. " + SAMPLED, "s",
            [(p99("instance, controller, op", "nvmeof_command_latency_seconds", L),
              "{{instance}} {{controller}} {{op}}")])
    d.panel("timeseries", "Local PCIe IOPS by controller", "Commands per second per local "
            "controller (exact).", "iops",
            [(f"sum by (instance, controller, op) (instance:nvmeof_commands:rate5m{{{L}}})",
              "{{instance}} {{controller}} {{op}}")])

    d.row("Block layer (eBPF, every block device)")
    d.panel("timeseries", "Block p99 by stage",
            "Block-layer stages over all the node's timed disks: queue = allocated to issued "
            "to the driver, device = issued to completed (worst op). Per disk: the means "
            "below. " + SAMPLED, "s",
            [(p99("instance, stage", "nvmeof_block_stage_latency_seconds", BN),
              "{{instance}} {{stage}}")])
    d.panel("timeseries", "Block p99",
            "Block-layer request latency over all the node's timed disks, allocated to "
            "completed (worst op). " + SAMPLED, "s",
            [(p99("instance", "nvmeof_block_latency_seconds", BN), "p99 {{instance}}")])
    d.panel("timeseries", "Block mean by device and stage",
            "Mean time per request in each block-layer stage, per disk: the disk whose device "
            "stage stands out is the slow drive. " + SAMPLED, "s",
            [(f"sum by (instance, disk, stage) ("
              f"instance:nvmeof_block_stage_latency_seconds_sum:rate5m{{{B}}})"
              f" / sum by (instance, disk, stage) ("
              f"instance:nvmeof_block_stage_latency_seconds_count:rate5m{{{B}}})",
              "{{instance}} {{disk}} {{stage}}")])
    d.panel("timeseries", "Block IOPS", "Block requests completed per second (exact).", "iops",
            [(f"sum by (instance, disk, op) (instance:nvmeof_block_requests:rate5m{{{B}}})",
              "{{instance}} {{disk}} {{op}}")])
    d.panel("timeseries", "Block queue depth by stage (Little's law)",
            "Average requests in each block-layer stage.", "short",
            [(f"sum by (instance, disk, stage) ("
              f"instance:nvmeof_block_stage_latency_seconds_sum:rate5m{{{B}}}"
              " * on (instance, job) group_left nvmeof_exporter_bpf_sample_every)",
              "{{instance}} {{disk}} {{stage}}")])
    return d


def fabric():
    d = Dashboard("nvmeof-rdma-fabric", "RDMA fabric",
                  "RDMA ports, PFC and pause storms, ECN/DCQCN congestion, RDMA transport "
                  "errors and NVMe/TCP retransmits.", ["nvmeof", "rdma"])
    d.fleet_vars()
    I = 'job=~"$job", instance=~"$instance"'
    d.var("rdma_device", "RDMA device",
          f'label_values(nvmeof_rdma_port_info{{{I}}}, rdma_device)')
    d.var("netdev", "Netdev",
          f'label_values(nvmeof_rdma_netdev_info{{{I}, rdma_device=~"$rdma_device"}}, netdev)')
    d.var("priority", "Priority",
          f'label_values(nvmeof_rdma_pfc_pause_frames_total{{{I}, netdev=~"$netdev"}}, priority)')
    D = I + ', rdma_device=~"$rdma_device"'
    N = I + ', netdev=~"$netdev"'
    P = N + ', priority=~"$priority"'
    port = "{{instance}} {{rdma_device}}/{{rdma_port}}"

    d.row("Ports")
    d.panel("table", "Port state", "Logical state of each RDMA port (ACTIVE = usable).", "none",
            [f"nvmeof_rdma_port_state{{{D}}} == 1"], w=8)
    d.panel("table", "Physical state", "Physical link state (LinkUp, Polling = no partner, "
            "Disabled = admin down).", "none", [f"nvmeof_rdma_port_phys_state{{{D}}} == 1"], w=8)
    d.panel("table", "Port rate", "Negotiated port rate.", "Bps",
            [f"nvmeof_rdma_port_rate_bytes_per_second{{{D}}}"], w=8)
    d.panel("table", "RDMA devices", "Firmware, board and node GUID of each RDMA device: "
            "firmware drift across a fleet is a first question of a fabric incident.", "none",
            [f"nvmeof_rdma_device_info{{{D}}}"], w=12)
    d.panel("timeseries", "Link errors (port counters)",
            "The 10 fastest-moving IB PMA port counters other than traffic (symbol_error, "
            "link_downed, link_error_recovery, port_rcv_errors, port_xmit_discards, "
            "port_xmit_wait, ...): a bad cable or optic shows here first.", "cps",
            [(f"topk(10, rate(nvmeof_rdma_port_counters_total{{{D}}}[{RI}]))",
              port + " {{counter}}")], w=12)
    d.panel("timeseries", "Throughput (port counters)",
            "Bytes per second from the port's PMA counters (all traffic on the port).", "Bps",
            [(f"rate(nvmeof_rdma_port_transmit_bytes_total{{{D}}}[{RI}])", port + " tx"),
             (f"rate(nvmeof_rdma_port_receive_bytes_total{{{D}}}[{RI}])", port + " rx")])
    d.panel("timeseries", "Link utilization", "Port throughput as a fraction of its rate.",
            "percentunit",
            [(f"rate(nvmeof_rdma_port_transmit_bytes_total{{{D}}}[{RI}]) / on (instance, job, rdma_device, rdma_port) "
              f"nvmeof_rdma_port_rate_bytes_per_second{{{D}}}", port + " tx"),
             (f"rate(nvmeof_rdma_port_receive_bytes_total{{{D}}}[{RI}]) / on (instance, job, rdma_device, rdma_port) "
              f"nvmeof_rdma_port_rate_bytes_per_second{{{D}}}", port + " rx")])
    d.panel("timeseries", "Throughput (driver counters)",
            "RDMA bytes per second as counted by the driver's hw_counters (rxe, bnxt_re; mlx5 "
            "when its optional counters are enabled).", "Bps",
            [(f"rate(nvmeof_rdma_transmit_bytes_total{{{D}}}[{RI}])", port + " tx"),
             (f"rate(nvmeof_rdma_receive_bytes_total{{{D}}}[{RI}])", port + " rx")])
    d.panel("timeseries", "Packets", "Packets per second (port counters).", "pps",
            [(f"rate(nvmeof_rdma_port_transmit_packets_total{{{D}}}[{RI}])", port + " tx"),
             (f"rate(nvmeof_rdma_port_receive_packets_total{{{D}}}[{RI}])", port + " rx")])

    d.row("Connections: fabric settings")
    d.panel("table", "RoCE path MTU and netdev MTU",
            "Per RoCE port: the path MTU rdma_cm gives its connections (the netdev MTU less 96 "
            "bytes of headers, rounded down to an IB MTU) and the netdev MTU. Every node of a "
            "fabric should show the same (alert: RdmaFabricMtuMismatch).", "bytes",
            [(f"nvmeof_rdma_roce_path_mtu_bytes{{{D}}}", ""),
             (f"nvmeof_rdma_netdev_mtu_bytes{{{N}}}", "")], w=8)
    d.panel("table", "PFC enabled per priority (all)",
            "PFC per netdev and priority, 1 = on (DCB netlink). Must be the same on every node "
            "of a fabric (alert: RdmaFabricPfcMismatch).", "none",
            [f"nvmeof_rdma_dcb_pfc_enabled{{{N}}}"], w=8)
    d.panel("table", "RoCE ECN per priority",
            "RoCE ECN per netdev, priority and point (np: send CNPs, rp: slow down on CNPs), "
            "1 = on (mlx5). Must be the same on every node of a fabric (alert: "
            "RdmaFabricEcnMismatch).", "none",
            [f"nvmeof_rdma_ecn_enabled{{{N}}}"], w=8)

    d.row("PFC and pause")
    d.panel("timeseries", "PFC pause frames per priority",
            "PFC pause frames per second: rx = the peer paused us, tx = we paused the peer.",
            "pps", [(f"sum by (instance, netdev, direction, priority) (rate(nvmeof_rdma_pfc_pause_frames_total{{{P}}}[{RI}]))",
                     "{{instance}} {{netdev}} prio {{priority}} {{direction}}")])
    d.panel("timeseries", "Time paused per priority",
            "Fraction of time the priority was paused by PFC (alert: RdmaPfcPausedHigh above "
            "25% for 10 minutes).", "percentunit",
            [(f"rate(nvmeof_rdma_pfc_pause_seconds_total{{{P}}}[{RI}])",
              "{{instance}} {{netdev}} prio {{priority}} {{direction}}")])
    d.panel("timeseries", "Pause storm events",
            "Pause storm events (mlx5 stall detection): warning = pausing past the warning "
            "threshold, error = storm prevention stopped honouring PFC.", "short",
            [(f"increase(nvmeof_rdma_pause_storm_events_total{{{N}}}[{RI}])",
              "{{instance}} {{netdev}} {{level}}")], draw="bars")
    d.panel("timeseries", "Pause transitions", "Pause on/off transitions per second: PFC per "
            "priority, and link-level (802.3x) pause.", "cps",
            [(f"rate(nvmeof_rdma_pfc_pause_transitions_total{{{P}}}[{RI}])",
              "{{instance}} {{netdev}} prio {{priority}} {{direction}}"),
             (f"rate(nvmeof_rdma_link_pause_transitions_total{{{N}}}[{RI}])",
              "{{instance}} {{netdev}} link {{direction}}")])
    d.panel("timeseries", "Link pause (802.3x) frames", "Global pause frames per second.", "pps",
            [(f"rate(nvmeof_rdma_link_pause_frames_total{{{N}}}[{RI}])",
              "{{instance}} {{netdev}} {{direction}}")])
    d.panel("timeseries", "Time paused by link pause", "Fraction of time paused by 802.3x pause.",
            "percentunit", [(f"rate(nvmeof_rdma_link_pause_seconds_total{{{N}}}[{RI}])",
                             "{{instance}} {{netdev}} {{direction}}")])
    d.panel("table", "PFC enabled priorities (DCB)", "Priorities with PFC enabled (DCB netlink).",
            "none", [f"nvmeof_rdma_dcb_pfc_enabled{{{N}}} == 1"], w=8)
    d.panel("timeseries", "PFC requests and indications (DCB)",
            "PFC frames sent (requests) and received (indications) per priority, from DCB "
            "netlink.", "pps",
            [(f"rate(nvmeof_rdma_dcb_pfc_requests_total{{{P}}}[{RI}])",
              "{{instance}} {{netdev}} prio {{priority}} sent"),
             (f"rate(nvmeof_rdma_dcb_pfc_indications_total{{{P}}}[{RI}])",
              "{{instance}} {{netdev}} prio {{priority}} received")], w=8)
    d.panel("timeseries", "Port discards", "Packets discarded at the port (PHY) and per "
            "priority.", "pps",
            [(f"rate(nvmeof_rdma_phy_discards_total{{{N}}}[{RI}])", "{{instance}} {{netdev}} phy {{direction}}"),
             (f"rate(nvmeof_rdma_priority_discards_total{{{P}}}[{RI}])",
              "{{instance}} {{netdev}} prio {{priority}} {{direction}}")], w=8)

    d.row("Congestion (ECN / DCQCN)")
    d.panel("timeseries", "ECN-marked packets received",
            "RoCE packets received with the CE mark: switches on the way in are queueing.",
            "pps", [(f"rate(nvmeof_rdma_ecn_marked_packets_total{{{D}}}[{RI}])", port)], w=8)
    d.panel("timeseries", "ECN-marked fraction",
            "Share of received packets that were ECN-marked (alert: RdmaEcnCongestion above 5% "
            "for 15 minutes).", "percentunit",
            [(f"sum by (instance, rdma_device, rdma_port) (rate(nvmeof_rdma_ecn_marked_packets_total{{{D}}}[{RI}])) / "
              f"sum by (instance, rdma_device, rdma_port) (rate(nvmeof_rdma_port_receive_packets_total{{{D}}}[{RI}]))",
              port)], w=8)
    d.panel("timeseries", "CNPs", "Congestion notification packets: sent (we saw ECN marks), "
            "handled (a peer asked us to slow down), ignored.", "pps",
            [(f"rate(nvmeof_rdma_cnp_sent_total{{{D}}}[{RI}])", port + " sent"),
             (f"rate(nvmeof_rdma_cnp_handled_total{{{D}}}[{RI}])", port + " handled"),
             (f"rate(nvmeof_rdma_cnp_ignored_total{{{D}}}[{RI}])", port + " ignored")], w=8)

    d.row("RDMA transport errors")
    d.panel("timeseries", "Retransmits", "Retransmissions (iWARP TCP segments, rxe retry "
            "sequences). mlx5/bnxt_re: see sequence errors and timeouts.", "cps",
            [(f"rate(nvmeof_rdma_retransmits_total{{{D}}}[{RI}])", port)], w=8)
    d.panel("timeseries", "Sequence errors", "Out-of-sequence packets and NAK sequence errors: "
            "packet loss that forces a go-back-N retransmit.", "cps",
            [(f"rate(nvmeof_rdma_packet_sequence_errors_total{{{D}}}[{RI}])", port + " NAK seq err"),
             (f"rate(nvmeof_rdma_implied_nak_sequence_errors_total{{{D}}}[{RI}])", port + " implied NAK"),
             (f"rate(nvmeof_rdma_out_of_sequence_total{{{D}}}[{RI}])", port + " out of sequence"),
             (f"rate(nvmeof_rdma_duplicate_requests_total{{{D}}}[{RI}])", port + " duplicate requests")],
            w=8)
    d.panel("timeseries", "Timeouts and retry exhaustion",
            "Local ACK timeouts (each stalls the QP for its timeout) and QPs that exhausted "
            "their retries (QP to error: NVMe-oF reconnects).", "cps",
            [(f"rate(nvmeof_rdma_local_ack_timeout_errors_total{{{D}}}[{RI}])", port + " ACK timeout"),
             (f"rate(nvmeof_rdma_retry_exceeded_errors_total{{{D}}}[{RI}])", port + " retry exceeded")],
            w=8)
    d.panel("timeseries", "RNR (receiver not ready)",
            "RNR NAKs received and sent, and RNR retry exhaustion: receive queues running empty.",
            "cps",
            [(f"rate(nvmeof_rdma_rnr_nak_errors_total{{{D}}}[{RI}])", port + " RNR NAK received"),
             (f"rate(nvmeof_rdma_rnr_naks_sent_total{{{D}}}[{RI}])", port + " RNR NAK sent"),
             (f"rate(nvmeof_rdma_rnr_retry_exceeded_errors_total{{{D}}}[{RI}])", port + " RNR retry exceeded")],
            w=8)
    d.panel("timeseries", "Discards",
            "Packets dropped for lack of a receive WQE, and RoCE discards.", "pps",
            [(f"rate(nvmeof_rdma_out_of_buffer_discards_total{{{D}}}[{RI}])", port + " out of buffer"),
             (f"rate(nvmeof_rdma_receive_discards_total{{{D}}}[{RI}])", port + " rx discards"),
             (f"rate(nvmeof_rdma_transmit_discards_total{{{D}}}[{RI}])", port + " tx discards")], w=8)
    d.panel("timeseries", "Completion errors", "Work completions with an error status and remote "
            "errors NAKed to the requester.", "cps",
            [(f"rate(nvmeof_rdma_requester_cqe_errors_total{{{D}}}[{RI}])", port + " requester CQE"),
             (f"rate(nvmeof_rdma_responder_cqe_errors_total{{{D}}}[{RI}])", port + " responder CQE"),
             (f"rate(nvmeof_rdma_remote_access_errors_total{{{D}}}[{RI}])", port + " remote access"),
             (f"rate(nvmeof_rdma_remote_invalid_request_errors_total{{{D}}}[{RI}])",
              port + " remote invalid request")], w=8)
    d.panel("timeseries", "Busiest hw_counters", "The 15 fastest-moving driver hw_counters "
            "under their own names (every counter the driver exposes).", "cps",
            [(f"topk(15, rate(nvmeof_rdma_hw_counters_total{{{D}}}[{RI}]))", port + " {{counter}}")],
            w=24)

    # Node-wide TCP counters are node_exporter's (netstat collector); this exporter serves them
    # only with tcp.node_counters. The per-connection NVMe/TCP series are always served.
    d.row("NVMe/TCP connections")
    d.panel("timeseries", "NVMe/TCP connections", "Open NVMe/TCP connections by role and "
            "NVMe/TCP port (sock_diag).", "short",
            [(f"nvmeof_tcp_connections{{{I}}}", "{{instance}} {{role}} :{{tcp_port}}")], w=12)
    d.panel("timeseries", "Retransmits on open NVMe/TCP connections",
            "Retransmitted segments summed over the NVMe/TCP connections open now (drops when a "
            "connection closes).", "short",
            [(f"nvmeof_tcp_connection_retransmits{{{I}}}", "{{instance}} {{role}} :{{tcp_port}}")],
            w=12)
    d.panel("timeseries", "NVMe/TCP retransmit rate", "Retransmits per second on the open "
            "NVMe/TCP connections (alert: NvmeofTcpRetransmits); connections that close make the "
            "sum drop, which is clamped to 0.", "cps",
            [(f"clamp_min(deriv(nvmeof_tcp_connection_retransmits{{{I}}}[10m]), 0)",
              "{{instance}} {{role}} :{{tcp_port}}")], w=24)
    return d


def health():
    d = Dashboard("nvmeof-exporter-health", "nvmeof_exporter health",
                  "Is the exporter telling the truth? Collectors, eBPF hooks, overhead, scrapes.",
                  ["nvmeof", "exporter"])
    d.fleet_vars()
    d.var("collector", "Collector",
          'label_values(nvmeof_exporter_collector_success{instance=~"$instance"}, collector)')
    E = 'job=~"$job", instance=~"$instance"'
    C = E + ', collector=~"$collector"'

    d.row("Scrapes and collectors")
    d.panel("stat", "Targets up", "Exporters Prometheus scraped successfully (alert: "
            "NvmeofExporterDown).", "none", [(f"up{{{E}}}", "{{instance}}")], w=6, h=6)
    d.panel("timeseries", "Collector success", "1 if the collector read its source this scrape "
            "(alert: NvmeofExporterCollectorFailing).", "none",
            [(f"nvmeof_exporter_collector_success{{{C}}}", "{{instance}} {{collector}}")], w=9, h=6)
    d.panel("timeseries", "Skipped series", "Series a collector skipped this scrape: unreadable "
            "or malformed values in its source.", "short",
            [(f"nvmeof_exporter_collector_skipped_series{{{C}}}", "{{instance}} {{collector}}")],
            w=9, h=6)
    d.panel("timeseries", "Collector duration", "Time each collector took per scrape.", "s",
            [(f"nvmeof_exporter_collector_duration_seconds{{{C}}}", "{{instance}} {{collector}}")])
    d.panel("timeseries", "Scrape duration", "Time Prometheus took to scrape the exporter.", "s",
            [(f"scrape_duration_seconds{{{E}}}", "{{instance}}")])
    d.panel("timeseries", "Samples per scrape", "Samples in each scrape (cardinality).", "short",
            [(f"scrape_samples_scraped{{{E}}}", "{{instance}}")])
    d.panel("table", "Build", "Exporter version and revision.", "none",
            [f"nvmeof_exporter_build_info{{{E}}}"])

    d.row("eBPF")
    d.panel("table", "eBPF availability", "1 if eBPF stage latency is collected; otherwise the "
            "reason (no_capability, no_btf, lockdown, load_failed, ...).", "none",
            [f"nvmeof_exporter_bpf_available{{{E}}}"], w=8)
    d.panel("table", "eBPF hooks", "Each hook: attached (1) or not, with the mechanism used "
            "(fentry, kprobe, tp_btf, raw_tp, none) and whether it is required.", "none",
            [f"nvmeof_exporter_bpf_hook_attached{{{E}}}"], w=16)
    d.panel("timeseries", "eBPF run time per I/O",
            "CPU time of all eBPF programs per block request (needs bpf.enable_stats or the "
            "kernel.bpf_stats_enabled sysctl).", "s",
            [(f"sum by (instance) (rate(nvmeof_exporter_bpf_program_run_seconds_total{{{E}}}[{RI}])) / "
              f"sum by (instance) (rate(nvmeof_block_requests_total{{{E}}}[{RI}]))", "{{instance}}")],
            w=8)
    d.panel("timeseries", "eBPF run time per program run",
            "Mean CPU time of one run of each hook's program.", "s",
            [(f"rate(nvmeof_exporter_bpf_program_run_seconds_total{{{E}}}[{RI}]) / "
              f"rate(nvmeof_exporter_bpf_program_runs_total{{{E}}}[{RI}])",
              "{{instance}} {{hook}} ({{mechanism}})")], w=8)
    d.panel("timeseries", "eBPF CPU", "CPU used by the eBPF programs, in cores.", "percentunit",
            [(f"sum by (instance) (rate(nvmeof_exporter_bpf_program_run_seconds_total{{{E}}}[{RI}]))",
              "{{instance}}")], w=8)
    d.panel("timeseries", "eBPF lost events", "Events the programs could not record, by reason "
            "(inflight_evicted = an untimed request, map_full, recursion).", "cps",
            [(f"rate(nvmeof_exporter_bpf_lost_events_total{{{E}}}[{RI}])",
              "{{instance}} {{reason}}")], w=8)
    d.panel("timeseries", "In-flight table use",
            "Requests holding an issue timestamp, as a fraction of the table.", "percentunit",
            [(f"nvmeof_exporter_bpf_inflight_entries{{{E}}} / "
              f"nvmeof_exporter_bpf_inflight_capacity{{{E}}}", "{{instance}}")], w=8)
    d.panel("stat", "Sampling", "Latency is timed for 1 in this many commands.", "none",
            [(f"nvmeof_exporter_bpf_sample_every{{{E}}}", "{{instance}}")], w=8)
    d.row("Process")
    d.panel("timeseries", "Exporter memory", "Resident and virtual memory of the exporter "
            "(process_*): compare with the container's memory limit.", "bytes",
            [(f"process_resident_memory_bytes{{{E}}}", "{{instance}} resident"),
             (f"process_virtual_memory_bytes{{{E}}}", "{{instance}} virtual")], w=8)
    d.panel("timeseries", "Exporter CPU", "CPU used by the exporter process, in cores.",
            "percentunit", [(f"rate(process_cpu_seconds_total{{{E}}}[{RI}])", "{{instance}}")],
            w=8)
    d.panel("timeseries", "Exporter file descriptors", "Open file descriptors and the limit.",
            "short", [(f"process_open_fds{{{E}}}", "{{instance}} open"),
                      (f"process_max_fds{{{E}}}", "{{instance}} max")], w=8)
    return d


def fleet():
    d = Dashboard("nvmeof-fleet", "NVMe-oF fleet",
                  "The whole fleet from the fleet recording rules (deploy/prometheus/"
                  "nvmeof-fleet.rules.yml): per fabric, per subsystem and the worst nodes, far "
                  "fewer series than the raw fleet, so it also works on a global Prometheus that "
                  "federates only those. Which nodes "
                  "and subsystems to look at first; the other dashboards then show one node.",
                  ["nvmeof", "fleet"])
    d.fleet_vars()
    # Kubernetes pods with NVMe-oF volumes (deploy/prometheus/nvmeof-kubernetes.rules.yml, with
    # kube-state-metrics): the recorded p99 by pod names no job or instance, so only this
    # variable filters it. Empty (no pods listed) where that rule file is not loaded.
    d.var("pod", "Pod (Kubernetes)", "label_values(pod:nvmeof_command_latency_seconds:p99_5m, pod)")
    J = 'job=~"$job"'
    d.row("Worst first")
    d.panel("table", "Worst nodes by stage p99", "Per role, transport and stage, the 10 nodes "
            "with the highest p99 of that stage over 5 minutes (the node's worst controller or "
            "subsystem and op). Open the NVMe-oF latency dashboard on the instance.", "s",
            [f"sort_desc(stage:nvmeof_stage_latency_seconds:p99_5m_top10{{{J}}})"], w=12, h=10)
    d.panel("table", "Subsystems by network estimate", "Per subsystem NQN, transport and op: "
            "the network estimate (host's network-and-target time minus the target's "
            "residence) of its worst host, highest first; compare with the mean over its hosts "
            "below: a worst host far above the mean is one bad link, a high mean the fabric or "
            "the target.", "s",
            [f"topk(20, nqn:nvmeof_network_estimate_seconds:max5m{{{J}}})"], w=12, h=10)
    d.row("Per fabric")
    d.panel("timeseries", "Commands per second per fabric", "Exact command rate over the "
            "fleet, per transport (fabric), role and op.", "iops",
            [(f"transport:nvmeof_commands:rate5m{{{J}}}", "{{role}} {{transport}} {{op}}")], w=8)
    d.panel("timeseries", "Mean command latency per fabric", "Mean end-to-end command latency "
            "over the fleet, per transport, role and op (host: submit to completion; target: "
            "capsule received to response sent).", "s",
            [(f"transport:nvmeof_command_latency_seconds:mean5m{{{J}}}",
              "{{role}} {{transport}} {{op}}")], w=8)
    d.panel("timeseries", "Network estimate per subsystem (mean over hosts)", "The network "
            "estimate of each subsystem, averaged over the hosts connected to it.", "s",
            [(f"nqn:nvmeof_network_estimate_seconds:mean5m{{{J}}}",
              "{{nqn}} {{transport}} {{op}}")], w=8)
    d.row("Subsystems")
    d.panel("timeseries", "Busiest subsystems", "Commands per second per subsystem NQN, summed "
            "over every host connected to it (role host) and every target port serving it "
            "(role target): where they differ, a path or a node is missing.", "iops",
            [(f"topk(20, nqn:nvmeof_commands:rate5m{{{J}}})", "{{role}} {{nqn}} {{op}}")], w=12)
    d.panel("timeseries", "$instance against its subsystems",
            "The selected node's network estimate per subsystem against the mean over all "
            "hosts of that subsystem.", "s",
            [(f'instance_nqn:nvmeof_network_estimate_seconds:mean5m{{{J}, instance=~"$instance"}}',
              "$instance {{nqn}} {{op}}"),
             (f'nqn:nvmeof_network_estimate_seconds:mean5m{{{J}}} and on (nqn, transport, op) '
              f'instance_nqn:nvmeof_network_estimate_seconds:mean5m{{{J}, instance=~"$instance"}}',
              "fleet mean {{nqn}} {{op}}")], w=12)
    d.row("Kubernetes pods")
    d.panel("timeseries", "End-to-end p99 by pod",
            "Per Kubernetes pod with NVMe-oF volumes (nvmeof_kubernetes_volume_info joined with "
            "kube-state-metrics' kube_pod_info, recording rule "
            "pod:nvmeof_command_latency_seconds:p99_5m): the worst host end-to-end p99 (any op) "
            "of the controllers behind the pod's disks, the 20 worst of the selected pods. Empty "
            "without deploy/prometheus/nvmeof-kubernetes.rules.yml and kube-state-metrics "
            "(docs/operating.md \"On Kubernetes\").", "s",
            [('topk(20, pod:nvmeof_command_latency_seconds:p99_5m{pod=~"$pod"})',
              "{{namespace}}/{{pod}}")], w=24)
    return d


DASHBOARDS = {"nvmeof-latency.json": latency, "rdma-fabric.json": fabric,
              "exporter-health.json": health, "nvmeof-fleet.json": fleet}


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for name, build in DASHBOARDS.items():
        text = json.dumps(build().json(), indent=2, sort_keys=True) + "\n"
        path = os.path.join(HERE, name)
        if check:
            old = open(path).read() if os.path.exists(path) else ""
            if old != text:
                stale.append(name)
        else:
            with open(path, "w") as f:
                f.write(text)
    if stale:
        print("out of date (run dashboards/generate.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
