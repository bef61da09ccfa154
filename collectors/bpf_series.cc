#include "collectors/bpf_series.h"

#include <algorithm>
#include <map>
#include <utility>

#include "base/log.h"

namespace nvmeof {

void EmitHooks(const AttachPlan& plan, bool loaded, MetricSink& out) {
  for (const auto& h : plan.hooks) {
    out.Gauge("nvmeof_exporter_bpf_hook_attached",
              "1 if the eBPF hook is attached, with the mechanism used (none if missing).",
              {{"hook", std::string(h.hook->name)},
               {"mechanism", std::string(h.chosen ? MechanismName(h.chosen->mechanism) : "none")},
               {"required", h.hook->required ? "true" : "false"}},
              h.chosen && loaded ? 1 : 0);
  }
}

void EmitMapSizes(std::string_view part, const std::vector<MapSize>& maps, MetricSink& out) {
  for (const auto& m : maps) {
    out.Gauge("nvmeof_exporter_bpf_map_bytes",
              "Most memory an eBPF map can take: max_entries x (key + value x CPUs for per-CPU "
              "maps). Reserved at load, except the histogram maps, which allocate per series; "
              "charged to the memory cgroup.",
              {{"part", std::string(part)}, {"map", m.name}}, static_cast<double>(m.bytes));
    if (m.entries) {
      out.Gauge("nvmeof_exporter_bpf_map_entries",
                "Live entries of an eBPF map that allocates per series (histograms, counts); "
                "each takes key + value x CPUs bytes.",
                {{"part", std::string(part)}, {"map", m.name}}, static_cast<double>(*m.entries));
    }
  }
}

void EmitProgramRuns(const std::vector<ProgramRun>& programs, MetricSink& out) {
  for (const auto& p : programs) {
    Labels labels = {{"hook", p.hook}, {"mechanism", std::string(MechanismName(p.mechanism))}};
    out.Counter("nvmeof_exporter_bpf_program_runs_total",
                "Runs of the eBPF program (while BPF stats are enabled: bpf.enable_stats).", labels,
                static_cast<double>(p.stats.run_count));
    out.Counter("nvmeof_exporter_bpf_program_run_seconds_total",
                "CPU time spent in the eBPF program (while BPF stats are enabled).", labels,
                static_cast<double>(p.stats.run_time_ns) / 1e9);
  }
}

std::string HostnqnFolder::Label(const std::string& hostnqn) {
  if (kept_.count(hostnqn)) return hostnqn;
  if (kept_.size() < limit_ && !folded_.count(hostnqn)) {
    kept_.insert(hostnqn);
    return hostnqn;
  }
  if (folded_.insert(hostnqn).second && folded_.size() == 1) {
    LogWarn("more host NQNs than bpf.hostnqn_limit: the others are counted as hostnqn=\"other\"",
            Kv("limit", std::to_string(limit_)));
  }
  return "other";
}

namespace {

constexpr std::string_view kHelpCm =
    "RDMA-CM events seen by this node's rdma_cm (host and target), by event and status (IB CM "
    "reject reason for rejected, errno name for errors, ok).";
constexpr std::string_view kHelpState =
    "Host controller state changes (nvme_change_ctrl_state), every one, also between scrapes.";
constexpr std::string_view kHelpConnectFail =
    "Failed host connects: `nvme connect` (error = NVMe status of the Connect command, else "
    "errno) and reconnects whose Connect command failed.";
constexpr std::string_view kHelpKaFail =
    "Host keep-alive commands that completed with an error (kernels with "
    "nvme_keep_alive_end_io and module BTF: not Debian's 6.1 or 5.10).";
constexpr std::string_view kHelpFailover =
    "Host commands failed over from this path (controller) to another path of their multipath "
    "head: a path error (ANA state, aborted by a reset or lost connection) or the path going "
    "away (nvme_failover_req).";
constexpr std::string_view kHelpAna =
    "ANA state changes a host controller reported per ANA group (nvme_update_ana_state): the "
    "group's new state; the first state seen per controller and group counts too.";
constexpr std::string_view kHelpNoPath =
    "Host I/Os a multipath head requeued because no path was usable: the bios its requeue work "
    "(nvme_requeue_work) took, less those failed over; each requeue counts, as the kernel's "
    "diag/io_requeue_no_usable_path_count does.";
constexpr std::string_view kHelpTConnect =
    "Fabrics Connect commands received by this target, by queue (admin, io) and result (nqn "
    "\"\" where not known: kernels without module BTF).";
constexpr std::string_view kHelpKaExpiry =
    "Target controllers torn down because their keep-alive timer expired.";
constexpr std::string_view kHelpCtrls =
    "Target controllers connected now, per subsystem and host NQN (host NQNs past "
    "bpf.hostnqn_limit are \"other\"); controllers created since the exporter started.";

// nvmeof_target_controllers, host NQNs past the limit folded, and the lifecycle self-metrics.
void EmitTargetControllers(const LifecycleSnapshot& snap, HostnqnFolder& folder,
                           const std::function<std::string(std::string_view)>& nqn_label,
                           MetricSink& out) {
  // Oldest first: the host NQNs that keep their name are those of the first controllers.
  std::vector<const nvmeof_lc_ctrl*> by_age;
  for (const auto& c : snap.ctrls) by_age.push_back(&c);
  std::stable_sort(by_age.begin(), by_age.end(),
                   [](const auto* a, const auto* b) { return a->created_ns < b->created_ns; });
  std::map<Labels, std::uint64_t> ctrls;
  for (const auto* cp : by_age) {
    const auto& c = *cp;
    std::string hostnqn(LcString(c.hostnqn, sizeof(c.hostnqn)));
    ++ctrls[{{"nqn", nqn_label(LcString(c.nqn, sizeof(c.nqn)))},
             {"hostnqn", folder.Label(hostnqn)}}];
  }
  for (const auto& [labels, n] : ctrls) {
    out.Gauge("nvmeof_target_controllers", kHelpCtrls, labels, static_cast<double>(n));
  }
  out.Counter("nvmeof_exporter_bpf_hostnqn_folded_total",
              "Distinct host NQNs counted as hostnqn=\"other\" (past bpf.hostnqn_limit).", {},
              static_cast<double>(folder.folded()));
  constexpr std::string_view kLost =
      "Connection events the lifecycle eBPF programs could not record: counts_full = a new "
      "event key did not fit, ctrls_full = a target controller did not fit.";
  out.Counter("nvmeof_exporter_bpf_lifecycle_lost_events_total", kLost, {{"reason", "counts_full"}},
              static_cast<double>(snap.lost[NVMEOF_LC_LOST_COUNTS]));
  out.Counter("nvmeof_exporter_bpf_lifecycle_lost_events_total", kLost, {{"reason", "ctrls_full"}},
              static_cast<double>(snap.lost[NVMEOF_LC_LOST_CTRLS]));
}

// The help of each counter family EmitLifecycle sums.
std::string_view LifecycleHelp(std::string_view family) {
  static const std::map<std::string_view, std::string_view> kHelp = {
      {"nvmeof_rdma_cm_events_total", kHelpCm},
      {"nvmeof_controller_state_transitions_total", kHelpState},
      {"nvmeof_controller_connect_failures_total", kHelpConnectFail},
      {"nvmeof_controller_keep_alive_failures_total", kHelpKaFail},
      {"nvmeof_path_failovers_total", kHelpFailover},
      {"nvmeof_path_ana_transitions_total", kHelpAna},
      {"nvmeof_namespace_no_usable_path_total", kHelpNoPath},
      {"nvmeof_target_connects_total", kHelpTConnect},
      {"nvmeof_target_keep_alive_expiries_total", kHelpKaExpiry}};
  return kHelp.at(family);
}

// The multipath stalls per head disk: NVMEOF_LC_STALL counts per bucket (at most 2^a ms) and
// NVMEOF_LC_STALL_SUM_US their microseconds, as one histogram per head.
void EmitStalls(const LifecycleSnapshot& snap, MetricSink& out) {
  struct Stalls {
    std::uint64_t buckets[NVMEOF_LC_STALL_BUCKETS + 1] = {};
    std::uint64_t sum_us = 0;
  };
  std::map<std::string, Stalls> heads;
  for (const auto& [k, v] : snap.counts) {
    if (k.kind == NVMEOF_LC_STALL && k.a <= NVMEOF_LC_STALL_BUCKETS) {
      heads[std::string(LcString(k.name, sizeof(k.name)))].buckets[k.a] += v;
    } else if (k.kind == NVMEOF_LC_STALL_SUM_US) {
      heads[std::string(LcString(k.name, sizeof(k.name)))].sum_us += v;
    } else if (k.kind == NVMEOF_LC_STALL) {
      out.Skip();  // a bucket past +Inf: not this build's programs
    }
  }
  std::vector<double> bounds;
  for (int b = 0; b < NVMEOF_LC_STALL_BUCKETS; ++b) bounds.push_back(0.001 * (1u << b));
  for (const auto& [disk, s] : heads) {
    std::vector<std::uint64_t> cumulative;
    std::uint64_t n = 0;
    for (int b = 0; b < NVMEOF_LC_STALL_BUCKETS; ++b) cumulative.push_back(n += s.buckets[b]);
    n += s.buckets[NVMEOF_LC_STALL_BUCKETS];
    out.Histogram("nvmeof_namespace_failover_stall_seconds",
                  "How long a multipath head's I/O stalled: from its first I/O failed over "
                  "(nvme_failover_req) or found without a usable path (__nvme_find_path), to the "
                  "requeue work (nvme_requeue_work) that put every requeued I/O on a path.",
                  {{"nvme_namespace", disk}}, bounds, cumulative, n,
                  static_cast<double>(s.sum_us) * 1e-6);
  }
}

// Time in the ANA `change` state per controller and group, kept in microseconds.
void EmitAnaChange(const LifecycleSnapshot& snap, MetricSink& out) {
  for (const auto& [k, v] : snap.counts) {
    if (k.kind != NVMEOF_LC_ANA_CHANGE_US) continue;
    out.Counter("nvmeof_path_ana_change_seconds_total",
                "Time each ANA group spent in the change state, as the host controller read it "
                "(nvme_update_ana_state): added when the group leaves it.",
                {{"controller", "nvme" + std::to_string(k.a)},
                 {"ana_group", std::to_string(static_cast<std::uint32_t>(k.b))}},
                static_cast<double>(v) * 1e-6);
  }
}

// A failed host connect's labels: where it went and why.
Labels ConnectFailureLabels(const nvmeof_lc_key& k) {
  ConnectTarget t = ParseConnectTarget(k);
  std::string error = k.b < 0 ? ErrnoLabel(k.b)
                              : std::string(ConnectStatusName(static_cast<std::uint32_t>(k.b), 0));
  if (error == "invalid_subsystem") error = "invalid_parameters";  // no IATTR on the host
  return {
      {"transport", t.transport}, {"traddr", t.traddr}, {"trsvcid", t.trsvcid}, {"error", error}};
}

}  // namespace

void EmitLifecycle(const LifecycleSnapshot& snap, HostnqnFolder& folder,
                   const std::function<bool(const std::string&)>& subsystem_exists,
                   MetricSink& out) {
  // "" stays: not known (the trace records of kernels without module BTF do not name it).
  auto nqn_label = [&](std::string_view raw) {
    std::string nqn(raw);
    return nqn.empty() || (nqn.find('/') == std::string::npos && subsystem_exists(nqn)) ? nqn
                                                                                        : "other";
  };
  std::map<std::pair<std::string_view, Labels>, std::uint64_t> sums;
  for (const auto& [k, v] : snap.counts) {
    const std::string_view name = LcString(k.name, sizeof(k.name));
    switch (k.kind) {
      case NVMEOF_LC_CM_EVENT:
        sums[{"nvmeof_rdma_cm_events_total",
              {{"event", std::string(CmEventName(k.a))},
               {"status", CmEventStatus(k.a, k.b)},
               {"rdma_device", PlainAddress(name)},
               {"rdma_port", name.empty() ? "" : std::to_string(k.c)}}}] += v;
        break;
      case NVMEOF_LC_STATE:
        sums[{"nvmeof_controller_state_transitions_total",
              {{"controller", "nvme" + std::to_string(k.a)},
               {"from", std::string(CtrlStateName(static_cast<std::uint32_t>(k.b)))},
               {"to", std::string(CtrlStateName(k.c))}}}] += v;
        break;
      case NVMEOF_LC_CONNECT_FAIL:
        sums[{"nvmeof_controller_connect_failures_total", ConnectFailureLabels(k)}] += v;
        break;
      case NVMEOF_LC_KA_FAIL:
        sums[{"nvmeof_controller_keep_alive_failures_total",
              {{"controller", "nvme" + std::to_string(k.a)}}}] += v;
        break;
      case NVMEOF_LC_FAILOVER:
        sums[{"nvmeof_path_failovers_total", {{"controller", "nvme" + std::to_string(k.a)}}}] += v;
        break;
      case NVMEOF_LC_NO_PATH:
        sums[{"nvmeof_namespace_no_usable_path_total", {{"nvme_namespace", std::string(name)}}}] +=
            v;
        break;
      case NVMEOF_LC_STALL:
      case NVMEOF_LC_STALL_SUM_US:
      case NVMEOF_LC_ANA_CHANGE_US:
        break;  // EmitStalls, EmitAnaChange
      case NVMEOF_LC_ANA:
        sums[{"nvmeof_path_ana_transitions_total",
              {{"controller", "nvme" + std::to_string(k.a)},
               {"ana_group", std::to_string(static_cast<std::uint32_t>(k.b))},
               {"state", std::string(AnaStateName(k.c))}}}] += v;
        break;
      case NVMEOF_LC_TARGET_CONNECT:
        sums[{
            "nvmeof_target_connects_total",
            {{"nqn", nqn_label(name)},
             {"queue", k.a == NVMEOF_LC_QUEUE_ADMIN ? "admin" : "io"},
             {"result", std::string(ConnectStatusName(static_cast<std::uint32_t>(k.b), k.c))}}}] +=
            v;
        break;
      case NVMEOF_LC_KA_EXPIRY:
        sums[{"nvmeof_target_keep_alive_expiries_total", {{"nqn", nqn_label(name)}}}] += v;
        break;
      default:
        out.Skip();
    }
  }
  for (const auto& [key, v] : sums) {
    out.Counter(key.first, LifecycleHelp(key.first), key.second, static_cast<double>(v));
  }
  EmitStalls(snap, out);
  EmitAnaChange(snap, out);
  EmitTargetControllers(snap, folder, nqn_label, out);
}

}  // namespace nvmeof
