#include "collectors/pfc.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <map>
#include <regex>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "base/fd.h"
#include "base/files.h"
#include "base/log.h"
#include "base/yaml.h"
#include "collectors/collector_options.h"
#include "readers/netdev_sysfs.h"
#include "readers/rdma_sysfs.h"

namespace nvmeof {
namespace {

// ---- Driver statistic names -> metric families -------------------------------------------------

enum Family {
  kPfcFrames,
  kPfcSeconds,
  kPfcTransitions,
  kLinkFrames,
  kLinkSeconds,
  kLinkTransitions,
  kStormEvents,
  kPhyDiscards,
  kPriorityDiscards,
};

struct FamilyInfo {
  const char* name;
  const char* help;
  const char* label;  // "direction" or "level"
};

// Indexed by Family.
constexpr FamilyInfo kFamilies[] = {
    {"nvmeof_rdma_pfc_pause_frames_total",
     "PFC (802.1Qbb) pause frames per priority, from the driver's ethtool statistics "
     "(mlx5 rx/tx_prioN_pause, bnxt_en rx/tx_pfc_ena_frames_priN, ice XOFF frames only).",
     "direction"},
    {"nvmeof_rdma_pfc_pause_seconds_total",
     "Time paused by PFC per priority: rx = the peer paused our transmission, tx = we paused "
     "the peer (mlx5 *_pause_duration, bnxt_en *_duration_us; microseconds in the driver).",
     "direction"},
    {"nvmeof_rdma_pfc_pause_transitions_total",
     "PFC pause state transitions per priority (mlx5 rx_prioN_pause_transition, bnxt_en "
     "pfc_priN_{rx,tx}_transitions).",
     "direction"},
    {"nvmeof_rdma_link_pause_frames_total",
     "Link-level (802.3x global) pause frames (mlx5 *_global_pause, ice link_xoff_*.nic, "
     "bnxt_en *_pause_frames).",
     "direction"},
    {"nvmeof_rdma_link_pause_seconds_total",
     "Time paused by link-level (802.3x) pause (mlx5 *_global_pause_duration).", "direction"},
    {"nvmeof_rdma_link_pause_transitions_total",
     "Link-level (802.3x) pause state transitions (mlx5 rx_global_pause_transition).", "direction"},
    {"nvmeof_rdma_pause_storm_events_total",
     "Pause storm events: the NIC sent pause frames continuously past the stall watermark "
     "(warning) or the critical one, after which it stops honouring them (error) "
     "(mlx5 tx_pause_storm_{warning,error}_events).",
     "level"},
    {"nvmeof_rdma_phy_discards_total",
     "Packets discarded at the physical port (mlx5 *_discards_phy, ice rx_dropped.nic, bnxt_en "
     "*_stat_discard).",
     "direction"},
    {"nvmeof_rdma_priority_discards_total",
     "Received packets discarded per priority at the port (mlx5 rx_prioN_discards).", "direction"},
};

struct Rule {
  const char* pattern;  // '#' stands for the priority digit 0-7
  Family family;
  const char* label;
  double scale;  // to base units
};

struct Target {
  Family family;
  const char* label;
  int priority;  // -1 for families without one
  double scale;
};

using Table = std::unordered_map<std::string, Target>;

constexpr double kMicro = 1e-6;

Table Expand(std::initializer_list<Rule> rules) {
  Table table;
  for (const Rule& r : rules) {
    const std::string pattern = r.pattern;
    const auto hash = pattern.find('#');
    if (hash == std::string::npos) {
      table.emplace(pattern, Target{r.family, r.label, -1, r.scale});
      continue;
    }
    for (int p = 0; p < 8; ++p) {
      std::string name = pattern;
      name[hash] = static_cast<char>('0' + p);
      table.emplace(std::move(name), Target{r.family, r.label, p, r.scale});
    }
  }
  return table;
}

// Names from the kernel sources: drivers/net/ethernet/mellanox/mlx5/core/en_stats.c,
// intel/ice/ice_ethtool.c, broadcom/bnxt/bnxt_ethtool.c.
const Table* TableFor(std::string_view driver) {
  // mlx5 lists rx/tx_prioN_pause* only for priorities with PFC enabled and *_global_pause* only
  // with link pause on; the storm counters need the stall_detect capability.
  static const Table mlx5 = Expand({
      {"rx_prio#_pause", kPfcFrames, "rx", 1},
      {"tx_prio#_pause", kPfcFrames, "tx", 1},
      {"rx_prio#_pause_duration", kPfcSeconds, "rx", kMicro},
      {"tx_prio#_pause_duration", kPfcSeconds, "tx", kMicro},
      {"rx_prio#_pause_transition", kPfcTransitions, "rx", 1},
      {"rx_global_pause", kLinkFrames, "rx", 1},
      {"tx_global_pause", kLinkFrames, "tx", 1},
      {"rx_global_pause_duration", kLinkSeconds, "rx", kMicro},
      {"tx_global_pause_duration", kLinkSeconds, "tx", kMicro},
      {"rx_global_pause_transition", kLinkTransitions, "rx", 1},
      {"tx_pause_storm_warning_events", kStormEvents, "warning", 1},
      {"tx_pause_storm_error_events", kStormEvents, "error", 1},
      {"rx_discards_phy", kPhyDiscards, "rx", 1},
      {"tx_discards_phy", kPhyDiscards, "tx", 1},
      {"rx_prio#_discards", kPriorityDiscards, "rx", 1},
  });
  // ice counts XOFF (pause, quanta > 0) and XON (resume, quanta 0) frames apart. Pause frames
  // are the XOFF ones: that is what ice's own DCB ieee_getpfc reports as requests/indications,
  // and an XON frame ends a pause rather than starting one. XON counts are not exported.
  static const Table ice = Expand({
      {"rx_priority_#_xoff.nic", kPfcFrames, "rx", 1},
      {"tx_priority_#_xoff.nic", kPfcFrames, "tx", 1},
      {"link_xoff_rx.nic", kLinkFrames, "rx", 1},
      {"link_xoff_tx.nic", kLinkFrames, "tx", 1},
      {"rx_dropped.nic", kPhyDiscards, "rx", 1},
  });
  // The pfc_pri* duration and transition counters are port_stats_ext (newer firmware only).
  static const Table bnxt = Expand({
      {"rx_pfc_ena_frames_pri#", kPfcFrames, "rx", 1},
      {"tx_pfc_ena_frames_pri#", kPfcFrames, "tx", 1},
      {"pfc_pri#_rx_duration_us", kPfcSeconds, "rx", kMicro},
      {"pfc_pri#_tx_duration_us", kPfcSeconds, "tx", kMicro},
      {"pfc_pri#_rx_transitions", kPfcTransitions, "rx", 1},
      {"pfc_pri#_tx_transitions", kPfcTransitions, "tx", 1},
      {"rx_pause_frames", kLinkFrames, "rx", 1},
      {"tx_pause_frames", kLinkFrames, "tx", 1},
      {"rx_stat_discard", kPhyDiscards, "rx", 1},
      {"tx_stat_discard", kPhyDiscards, "tx", 1},
  });
  if (driver == "mlx5_core") return &mlx5;
  if (driver == "ice") return &ice;
  if (driver == "bnxt_en") return &bnxt;
  return nullptr;
}

const char* const kPriorities[] = {"0", "1", "2", "3", "4", "5", "6", "7"};

// Label values from drivers (firmware versions) must stay printable ASCII so one odd driver
// cannot make the whole exposition invalid UTF-8.
std::string Printable(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c >= 0x20 && c < 0x7f) out += c;
  }
  return out;
}

// ---- The collector ---------------------------------------------------------------------------

class PfcCollector : public Collector {
 public:
  PfcCollector(const CollectorOptions& options, std::unique_ptr<NetdevStatsSource> source)
      : paths_(options.paths),
        rdma_devices_(options.rdma.devices),
        netdevs_(options.pfc.netdevs),
        source_(std::move(source)) {}

  std::string_view Name() const override { return "pfc"; }

  bool Collect(MetricSink& out) override {
    const auto netdevs = Netdevs();
    size_t readable = 0, gone = 0;
    for (const auto& [netdev, devices] : netdevs) {
      if (CollectNetdev(netdev, devices, out)) {
        ++readable;
      } else if (!source_->Present(netdev) || !Exists(paths_.sysfs + "/class/net/" + netdev)) {
        ++gone;  // removed during the scrape (a netns torn down, a VF reset): nothing to fail
      }
    }
    // Every netdev that is still there unreadable (e.g. ioctls refused by a seccomp profile)
    // is a failed source.
    if (readable > 0 || readable + gone == netdevs.size()) return true;
    return out.Fail("no netdev's pause counters could be read (ethtool and sysfs)");
  }

 private:
  // netdev -> the RDMA devices on it (none for a netdev only admitted by the netdev include
  // filter).
  std::map<std::string, std::set<std::string>> Netdevs() const {
    std::map<std::string, std::set<std::string>> out;
    auto excluded = [this](const std::string& name) {
      return netdevs_.exclude && std::regex_match(name, *netdevs_.exclude);
    };
    for (const auto& rn : ListRdmaNetdevs(paths_, rdma_devices_)) {
      if (!excluded(rn.netdev)) out[rn.netdev].insert(rn.device);
    }
    if (netdevs_.include) {
      const std::string net = paths_.sysfs + "/class/net/";
      for (const auto& name : ListDir(net)) {
        // Not bonding_masters, a file that lives there too.
        if (netdevs_.Allows(name) && IsDir(net + name)) out[name];
      }
    }
    return out;
  }

  // Returns whether anything could be read from this netdev ("no DCB" alone does not count).
  bool CollectNetdev(const std::string& netdev, const std::set<std::string>& devices,
                     MetricSink& out) {
    bool readable = false;
    const auto driver = source_->Driver(netdev);
    if (driver) {
      readable = true;
      const std::set<std::string> none = {""};
      for (const auto& device : devices.empty() ? none : devices) {
        out.Gauge("nvmeof_rdma_netdev_info",
                  "Driver of a netdev carrying RDMA traffic (ETHTOOL_GDRVINFO), value 1; "
                  "rdma_device is empty for netdevs added by the netdev include filter.",
                  {{"netdev", netdev},
                   {"driver", Printable(driver->driver)},
                   {"firmware_version", Printable(driver->firmware_version)},
                   {"rdma_device", device}},
                  1);
      }
    } else {
      out.Skip();
    }

    if (auto stats = source_->Ethtool(netdev)) {
      readable = true;
      out.Skip(stats->malformed);
      const Table* table = driver ? TableFor(driver->driver) : nullptr;
      if (table) MapStats(netdev, *table, stats->stats, out);
    } else {
      out.Skip();
    }

    IeeePfc pfc;
    switch (source_->Dcb(netdev, &pfc)) {
      case ReadStatus::kOk:
        readable = true;
        EmitDcb(netdev, pfc, out);
        break;
      case ReadStatus::kAbsent:
        break;
      case ReadStatus::kFailed:
        out.Skip();
        break;
    }
    EmitEcn(netdev, out);
    return readable;
  }

  // RoCE ECN per priority where the driver exposes it (MLNX_OFED mlx5_core); PFC and ECN
  // together make the fabric lossless and fair, so they are checked side by side.
  void EmitEcn(const std::string& netdev, MetricSink& out) const {
    for (const auto& s : ReadRoceEcn(paths_.sysfs, netdev)) {
      if (!s.ok) {
        out.Skip();
        continue;
      }
      out.Gauge("nvmeof_rdma_ecn_enabled",
                "1 if RoCE ECN is enabled on the priority, at the notification point (np: marks "
                "CNPs back to the sender) or the reaction point (rp: slows down on CNPs), else "
                "0 (mlx5 sysfs ecn/roce_<point>/enable/<priority>).",
                {{"netdev", netdev}, {"priority", kPriorities[s.priority]}, {"point", s.point}},
                s.enabled ? 1 : 0);
    }
  }

  static void MapStats(const std::string& netdev, const Table& table,
                       const std::vector<EthtoolStat>& stats, MetricSink& out) {
    // A driver listing a name twice must not produce a duplicate series; the first one wins.
    std::set<std::tuple<int, std::string, int>> seen;
    for (const auto& stat : stats) {
      auto it = table.find(stat.name);
      if (it == table.end()) continue;
      const Target& t = it->second;
      if (!seen.emplace(t.family, t.label, t.priority).second) continue;
      const FamilyInfo& f = kFamilies[t.family];
      Labels labels = {{"netdev", netdev}, {f.label, t.label}};
      if (t.priority >= 0) labels.push_back({"priority", kPriorities[t.priority]});
      out.Counter(f.name, f.help, std::move(labels), static_cast<double>(stat.value) * t.scale);
    }
  }

  // DCB under its own names: its requests/indications count the same frames as the ethtool
  // pause counters on mlx5 and ice, and one family fed from two sources would clash.
  static void EmitDcb(const std::string& netdev, const IeeePfc& pfc, MetricSink& out) {
    for (int p = 0; p < 8; ++p) {
      out.Gauge("nvmeof_rdma_dcb_pfc_enabled",
                "1 if PFC is enabled on the priority (DCB netlink IEEE PFC pfc_en), else 0.",
                {{"netdev", netdev}, {"priority", kPriorities[p]}}, (pfc.pfc_en >> p) & 1);
    }
    for (int p = 0; p < 8; ++p) {
      out.Counter("nvmeof_rdma_dcb_pfc_requests_total",
                  "PFC frames sent per priority, asking the peer to pause (DCB netlink IEEE PFC "
                  "requests).",
                  {{"netdev", netdev}, {"priority", kPriorities[p]}},
                  static_cast<double>(pfc.requests[p]));
    }
    for (int p = 0; p < 8; ++p) {
      out.Counter("nvmeof_rdma_dcb_pfc_indications_total",
                  "PFC frames received per priority, the peer pausing us (DCB netlink IEEE PFC "
                  "indications).",
                  {{"netdev", netdev}, {"priority", kPriorities[p]}},
                  static_cast<double>(pfc.indications[p]));
    }
  }

  Paths paths_;
  NameFilter rdma_devices_;
  NameFilter netdevs_;
  std::unique_ptr<NetdevStatsSource> source_;
};

}  // namespace

bool ParsePfcOptions(const YAML::Node& section, PfcOptions* options, std::string* error) {
  return ReadFilterSection(section, "pfc", "netdevs", &options->netdevs, error);
}

std::unique_ptr<Collector> NewPfcCollectorWithSource(const CollectorOptions& options,
                                                     std::unique_ptr<NetdevStatsSource> source) {
  return std::make_unique<PfcCollector>(options, std::move(source));
}

std::unique_ptr<Collector> NewPfcCollector(const CollectorOptions& options) {
  return NewPfcCollectorWithSource(
      options, options.pfc.ethtool_fixture_dir.empty()
                   ? NewKernelNetdevStatsSource()
                   : NewFixtureNetdevStatsSource(options.pfc.ethtool_fixture_dir));
}

}  // namespace nvmeof
