// nvme_host: NVMe host controllers, subsystems, namespaces and multipath paths from sysfs.
//
// Layout read (drivers/nvme/host/core.c, sysfs.c, multipath.c):
//   class/nvme/nvmeN                     -> the controller device (fabrics: devices/virtual/
//                                           nvme-fabrics/ctl/nvmeN; pcie: under the PCI function)
//     transport address state subsysnqn hostnqn cntlid queue_count kato
//     reconnect_delay ctrl_loss_tmo fast_io_fail_tmo   (fabrics only; "off" = no limit)
//     diag/{reset_count,reconnect_count,command_error_count}  (recent kernels only)
//     nvmeXcNnY/{nsid,ana_state,inflight}  one path of namespace head nvmeXnY (native multipath)
//       diag/{multipath_failover_count,command_retries_count} (kernels with the diag group:
//                                        Debian's 7.2, not 6.12; also on
//                                        nvmeXnY without a head)
//     nvmeXnY/{nsid,size,ana_state}      a namespace without a multipath head (pcie, or
//                                        nvme_core.multipath=N: ana_state is here then)
//   class/nvme-subsystem/nvme-subsysX     -> devices/virtual/nvme-subsystem/nvme-subsysX
//     subsysnqn subsystype iopolicy model serial firmware_rev
//     nvmeN                              symlink to each controller of the subsystem
//     nvmeXnY/{nsid,size}                namespace head (the block device users see); some
//       diag/{io_requeue_no_usable_path_count,io_fail_no_available_path_count}  (diag group)
//                                        layouts show a non-multipath namespace here too, as
//                                        well as under its controller: served once
// dhchap_secret / dhchap_ctrl_secret hold authentication secrets: never read them.
#include "collectors/nvme_host.h"

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "base/files.h"
#include "base/yaml.h"
#include "collectors/collector_options.h"

namespace nvmeof {
namespace {

// State strings from nvme_sysfs_show_state(); label values must not hold spaces, so
// "deleting (no IO)" is exported as deleting_noio.
constexpr StateName kControllerStates[] = {
    {"new", "new"},
    {"live", "live"},
    {"resetting", "resetting"},
    {"connecting", "connecting"},
    {"deleting", "deleting"},
    {"deleting (no IO)", "deleting_noio"},
    {"dead", "dead"},
};

// nvme_ana_state_names[] in multipath.c; 0 prints as "invalid state".
constexpr StateName kAnaStates[] = {
    {"optimized", "optimized"},
    {"non-optimized", "non-optimized"},
    {"inaccessible", "inaccessible"},
    {"persistent-loss", "persistent-loss"},
    {"change", "change"},
    {"invalid state", "invalid"},
};

// The `address` attribute: comma-separated key=value pairs (nvmf_get_address() plus
// src_addr from nvme-tcp while the admin queue is live), or a bare PCI address for pcie.
struct Address {
  std::string traddr, trsvcid, host_traddr, host_iface, src_addr;
};

Address ParseAddress(std::string_view text) {
  Address a;
  if (text.find('=') == std::string_view::npos) {
    a.traddr = std::string(text);  // pcie: "0000:03:00.0"
    return a;
  }
  while (!text.empty()) {
    auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    auto eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = item.substr(0, eq);
    std::string value(item.substr(eq + 1));
    if (key == "traddr") {
      a.traddr = std::move(value);
    } else if (key == "trsvcid") {
      a.trsvcid = std::move(value);
    } else if (key == "host_traddr") {
      a.host_traddr = std::move(value);
    } else if (key == "host_iface") {
      a.host_iface = std::move(value);
    } else if (key == "src_addr") {
      a.src_addr = std::move(value);
    }  // unknown keys are left out: labels stay a fixed set
  }
  return a;
}

// Kernel device names, matched by hand: cheaper than std::regex, and GCC 12 warns
// (-Wmaybe-uninitialized, an error here) inside <regex> in sanitizer builds. Consumes `lit` then
// one or more digits from the front of `s`; returns the digits.
std::optional<std::string_view> Take(std::string_view& s, std::string_view lit) {
  if (s.substr(0, lit.size()) != lit) return std::nullopt;
  size_t n = lit.size();
  while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
  if (n == lit.size()) return std::nullopt;
  std::string_view digits = s.substr(lit.size(), n - lit.size());
  s.remove_prefix(n);
  return digits;
}

bool IsController(std::string_view s) { return Take(s, "nvme") && s.empty(); }  // nvme0
bool IsSubsystem(std::string_view s) { return Take(s, "nvme-subsys") && s.empty(); }
bool IsNamespace(std::string_view s) {  // nvme0n1 (not nvme0n1p1, not ng0n1)
  return Take(s, "nvme") && Take(s, "n") && s.empty();
}
// nvme<subsys>c<ctrl>n<ns>, a path of namespace head nvme<subsys>n<ns>: returns the head.
std::optional<std::string> PathHead(std::string_view s) {
  auto subsys = Take(s, "nvme");
  if (!subsys || !Take(s, "c")) return std::nullopt;
  auto ns = Take(s, "n");
  if (!ns || !s.empty()) return std::nullopt;
  return "nvme" + std::string(*subsys) + "n" + std::string(*ns);
}

// A timeout attribute in seconds: absent (not a fabrics controller) emits nothing;
// "off" (never times out / disabled) is +Inf; anything else odd is skipped.
void EmitSeconds(MetricSink& out, std::string_view name, std::string_view help,
                 const std::string& path, const std::string& controller) {
  if (!Exists(path)) return;
  auto text = ReadFile(path);
  double value;
  if (text && *text == "off") {
    value = std::numeric_limits<double>::infinity();
  } else if (auto v = text ? ParseU64(*text) : std::nullopt) {
    value = static_cast<double>(*v);
  } else {
    out.Skip();
    return;
  }
  out.Gauge(name, help, {{"controller", controller}}, value);
}

// Optional counter (recent kernels): absent emits nothing, odd is skipped.
void EmitOptionalCounter(MetricSink& out, std::string_view name, std::string_view help,
                         const std::string& path, Labels labels) {
  if (!Exists(path)) return;
  if (auto v = ReadU64(path)) {
    out.Counter(name, help, std::move(labels), static_cast<double>(*v));
  } else {
    out.Skip();
  }
}
void EmitOptionalCounter(MetricSink& out, std::string_view name, std::string_view help,
                         const std::string& path, const std::string& controller) {
  EmitOptionalCounter(out, name, help, path, Labels{{"controller", controller}});
}

// The diag group's per-path counters (writable: root may reset them, seen as a counter reset).
void EmitPathDiag(MetricSink& out, const std::string& dir, const std::string& ctrl,
                  const std::string& ns, const std::string& path) {
  const Labels labels = {{"controller", ctrl}, {"nvme_namespace", ns}, {"path", path}};
  EmitOptionalCounter(out, "nvmeof_path_diag_failovers_total",
                      "I/Os failed over from this path to another after a path error "
                      "(diag/multipath_failover_count)",
                      dir + "/diag/multipath_failover_count", labels);
  EmitOptionalCounter(out, "nvmeof_path_diag_command_retries_total",
                      "Commands retried on this path (diag/command_retries_count)",
                      dir + "/diag/command_retries_count", labels);
}

// Commands in flight on a path now, by direction: the path disk's `inflight` ("reads writes",
// the block layer's count of its requests issued and not completed). Absent file: no series.
void EmitPathInflight(MetricSink& out, const std::string& dir, const std::string& ctrl,
                      const std::string& ns, const std::string& path) {
  auto text = ReadFile(dir + "/inflight");
  if (!text) return;
  std::istringstream in(*text);
  std::uint64_t reads = 0, writes = 0;
  std::string rest;
  if (!(in >> reads >> writes) || (in >> rest)) {
    out.Skip();
    return;
  }
  constexpr std::string_view kHelp =
      "Commands in flight on this path now, by direction (the path disk's inflight: issued to "
      "the controller, not completed)";
  for (const auto& [op, n] : {std::pair{"read", reads}, std::pair{"write", writes}}) {
    out.Gauge("nvmeof_path_inflight_commands", kHelp,
              {{"controller", ctrl}, {"nvme_namespace", ns}, {"path", path}, {"op", op}},
              static_cast<double>(n));
  }
}

class NvmeHostCollector : public Collector {
 public:
  explicit NvmeHostCollector(const CollectorOptions& options)
      : paths_(options.paths),
        controllers_(options.nvme_host.controllers),
        inventory_(options.nvme_host.inventory) {}

  std::string_view Name() const override { return "nvme_host"; }

  bool Collect(MetricSink& out) override {
    std::map<std::string, std::string> subsys_of;     // controller -> nvme-subsysX
    std::map<std::string, std::string> subsysnqn_of;  // nvme-subsysX -> NQN
    namespaces_.clear();
    CollectSubsystems(out, subsys_of, subsysnqn_of);
    const std::string root = paths_.sysfs + "/class/nvme";
    for (const auto& ctrl : ListDir(root)) {
      if (!IsController(ctrl) || !controllers_.Allows(ctrl)) continue;
      std::string subsys = subsys_of.count(ctrl) ? subsys_of[ctrl] : "";
      CollectController(out, root + "/" + ctrl, ctrl, subsys,
                        subsys.empty() ? "" : subsysnqn_of[subsys]);
    }
    return true;
  }

 private:
  void CollectSubsystems(MetricSink& out, std::map<std::string, std::string>& subsys_of,
                         std::map<std::string, std::string>& subsysnqn_of) {
    const std::string root = paths_.sysfs + "/class/nvme-subsystem";
    for (const auto& subsys : ListDir(root)) {
      if (!IsSubsystem(subsys)) continue;
      const std::string dir = root + "/" + subsys;
      const std::string nqn = ReadFileOr(dir + "/subsysnqn");
      subsysnqn_of[subsys] = nqn;
      if (inventory_) EmitSubsystemInfo(out, dir, subsys, nqn);
      for (const auto& entry : ListDir(dir)) {
        if (IsController(entry)) {
          subsys_of[entry] = subsys;  // symlink to one of its controllers
        } else if (IsNamespace(entry) && IsDir(dir + "/" + entry)) {
          EmitNamespace(out, dir + "/" + entry, entry, subsys, nqn);  // multipath head
        }
      }
    }
  }

  static void EmitSubsystemInfo(MetricSink& out, const std::string& dir, const std::string& subsys,
                                const std::string& nqn) {
    out.Gauge("nvmeof_subsystem_info",
              "NVMe subsystem seen by this host (sysfs class nvme-subsystem); value 1",
              {{"nvme_subsystem", subsys},
               {"nqn", nqn},
               {"subsystype", ReadFileOr(dir + "/subsystype")},
               {"iopolicy", ReadFileOr(dir + "/iopolicy")},
               {"model", ReadFileOr(dir + "/model")},
               {"serial", ReadFileOr(dir + "/serial")},
               {"firmware_rev", ReadFileOr(dir + "/firmware_rev")}},
              1);
  }

  void EmitNamespace(MetricSink& out, const std::string& dir, const std::string& ns,
                     const std::string& subsys, const std::string& nqn) {
    // Namespace names are unique per host (nvmeXnY); a namespace shown under both its
    // subsystem and its controller is one block device, served once (the first place wins).
    if (!namespaces_.insert(ns).second) return;
    // A multipath head's counters of I/O with no path to go to (diag group).
    EmitOptionalCounter(out, "nvmeof_namespace_diag_no_usable_path_requeues_total",
                        "I/Os requeued because no path was usable while one may come back "
                        "(diag/io_requeue_no_usable_path_count)",
                        dir + "/diag/io_requeue_no_usable_path_count",
                        Labels{{"nvme_namespace", ns}});
    EmitOptionalCounter(out, "nvmeof_namespace_diag_no_available_path_failures_total",
                        "I/Os failed because no path was available "
                        "(diag/io_fail_no_available_path_count)",
                        dir + "/diag/io_fail_no_available_path_count",
                        Labels{{"nvme_namespace", ns}});
    out.Gauge("nvmeof_namespace_info",
              "NVMe namespace block device on this host (multipath head, or the namespace "
              "itself without native multipath); value 1",
              {{"nvme_subsystem", subsys},
               {"nvme_namespace", ns},
               {"nsid", ReadFileOr(dir + "/nsid")},
               {"nqn", nqn}},
              1);
    if (!inventory_) return;
    if (auto sectors = ReadU64(dir + "/size")) {
      out.Gauge("nvmeof_namespace_size_bytes", "Namespace capacity in bytes",
                {{"nvme_namespace", ns}}, static_cast<double>(*sectors) * 512.0);
    } else {
      out.Skip();
    }
  }

  void CollectController(MetricSink& out, const std::string& dir, const std::string& ctrl,
                         const std::string& subsys, const std::string& subsys_nqn) {
    const Address addr = ParseAddress(ReadFileOr(dir + "/address"));
    out.Gauge("nvmeof_controller_info",
              "NVMe host controller (sysfs class nvme): transport, target address and NQNs; "
              "value 1. traddr is the PCI address for pcie; src_addr only while connected",
              {{"controller", ctrl},
               {"transport", ReadFileOr(dir + "/transport")},
               {"traddr", addr.traddr},
               {"trsvcid", addr.trsvcid},
               {"host_traddr", addr.host_traddr},
               {"host_iface", addr.host_iface},
               {"src_addr", addr.src_addr},
               {"nqn", ReadFileOr(dir + "/subsysnqn")},
               {"hostnqn", ReadFileOr(dir + "/hostnqn")},
               {"cntlid", ReadFileOr(dir + "/cntlid")},
               {"nvme_subsystem", subsys}},
              1);
    const Labels base = {{"controller", ctrl}};
    out.OneHot("nvmeof_controller_state",
               "Controller state, one-hot (new, live, resetting, connecting, deleting, "
               "deleting_noio, dead)",
               base, kControllerStates, ReadFile(dir + "/state"));
    if (inventory_) EmitSettings(out, dir, ctrl);
    EmitOptionalCounter(out, "nvmeof_controller_resets_total",
                        "Controller resets (diag/reset_count; recent kernels, writable)",
                        dir + "/diag/reset_count", ctrl);
    EmitOptionalCounter(out, "nvmeof_controller_reconnects_total",
                        "Controller reconnect attempts (diag/reconnect_count; recent kernels)",
                        dir + "/diag/reconnect_count", ctrl);
    EmitOptionalCounter(out, "nvmeof_controller_command_errors_total",
                        "Admin commands completed with an error (diag/command_error_count)",
                        dir + "/diag/command_error_count", ctrl);

    for (const auto& entry : ListDir(dir)) {
      const std::string sub = dir + "/" + entry;
      if (auto head_name = PathHead(entry); head_name && IsDir(sub)) {
        const std::string& head = *head_name;
        EmitPath(out, ctrl, head, entry);
        EmitAnaState(out, sub, ctrl, head, entry);
        EmitPathDiag(out, sub, ctrl, head, entry);
        EmitPathInflight(out, sub, ctrl, head, entry);
      } else if (IsNamespace(entry) && IsDir(sub)) {
        // No multipath head (pcie drive, or multipath off): the namespace is its only path,
        // and with multipath off an ANA controller puts its ana_state here.
        EmitNamespace(out, sub, entry, subsys, subsys_nqn);
        EmitPath(out, ctrl, entry, entry);
        EmitAnaState(out, sub, ctrl, entry, entry);
        EmitPathDiag(out, sub, ctrl, entry, entry);
        EmitPathInflight(out, sub, ctrl, entry, entry);
      }
    }
  }

  // Queues and timeouts of a controller (nvme_host.inventory).
  static void EmitSettings(MetricSink& out, const std::string& dir, const std::string& ctrl) {
    if (auto q = ReadU64(dir + "/queue_count")) {
      out.Gauge("nvmeof_controller_queues",
                "Queues of the controller (queue_count: I/O queues plus the admin queue)",
                {{"controller", ctrl}}, static_cast<double>(*q));
    } else {
      out.Skip();
    }
    EmitSeconds(out, "nvmeof_controller_keep_alive_timeout_seconds",
                "Keep-alive timeout (kato); 0 = no keep-alive", dir + "/kato", ctrl);
    EmitSeconds(out, "nvmeof_controller_reconnect_delay_seconds",
                "Delay between reconnect attempts (fabrics)", dir + "/reconnect_delay", ctrl);
    EmitSeconds(out, "nvmeof_controller_loss_timeout_seconds",
                "ctrl_loss_tmo: time a lost controller is retried before it is removed; "
                "+Inf = retried forever (off)",
                dir + "/ctrl_loss_tmo", ctrl);
    EmitSeconds(out, "nvmeof_controller_fast_io_fail_timeout_seconds",
                "fast_io_fail_tmo: I/O fails after this long without a connection; "
                "+Inf = off (I/O waits for ctrl_loss_tmo)",
                dir + "/fast_io_fail_tmo", ctrl);
  }

  // Only controllers that use ANA have the file: absent is no series.
  static void EmitAnaState(MetricSink& out, const std::string& dir, const std::string& ctrl,
                           const std::string& ns, const std::string& path) {
    if (!Exists(dir + "/ana_state")) return;
    out.OneHot("nvmeof_path_ana_state",
               "ANA state of a path (a multipath path, or a namespace without a multipath head), "
               "one-hot (optimized, non-optimized, inaccessible, persistent-loss, change, "
               "invalid)",
               {{"controller", ctrl}, {"nvme_namespace", ns}, {"path", path}}, kAnaStates,
               ReadFile(dir + "/ana_state"));
  }

  static void EmitPath(MetricSink& out, const std::string& ctrl, const std::string& ns,
                       const std::string& path) {
    out.Gauge("nvmeof_path_info",
              "Path of a namespace through a controller (path = hidden per-controller block "
              "device nvmeXcYnZ, or the namespace itself without multipath); value 1",
              {{"controller", ctrl}, {"nvme_namespace", ns}, {"path", path}}, 1);
  }

  Paths paths_;
  NameFilter controllers_;
  bool inventory_;
  std::set<std::string> namespaces_;  // served this scrape (Collect is never run concurrently)
};

}  // namespace

bool ParseNvmeHostOptions(const YAML::Node& section, NvmeHostOptions* options, std::string* error) {
  if (!CheckKeys(section, "nvme_host", {"controllers", "inventory"}, error)) return false;
  if (section["controllers"] &&
      !ReadFilter(section["controllers"], "nvme_host.controllers", &options->controllers, error)) {
    return false;
  }
  return !section["inventory"] ||
         ReadBool(section["inventory"], "nvme_host.inventory", &options->inventory, error);
}

std::unique_ptr<Collector> NewNvmeHostCollector(const CollectorOptions& options) {
  return std::make_unique<NvmeHostCollector>(options);
}

}  // namespace nvmeof
