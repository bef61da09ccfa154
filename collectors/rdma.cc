// The rdma collector: RDMA devices and ports from sysfs (/sys/class/infiniband).
//
// Per device: <dev>/{node_type,fw_ver,node_guid,hca_type,board_id} and <dev>/hw_counters/.
// Per port:   <dev>/ports/N/{state,phys_state,rate,link_layer}, gid_attrs/ndevs/* (netdevs),
//             counters/ (IB PMA port counters) and hw_counters/ (driver counters).
// Per netdev bound to a port: class/net/<netdev>/mtu, and for RoCE ports the path MTU rdma_cm
// derives from it (no sysfs or rdma netlink file carries a port's active MTU).
// Needs no privileges: everything read here is world-readable.
#include "collectors/rdma.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/files.h"
#include "base/yaml.h"
#include "collectors/collector_options.h"
#include "collectors/rdma_counter_map.h"
#include "readers/netdev_sysfs.h"
#include "readers/rdma_sysfs.h"
#include "readers/sysfs_files.h"

namespace nvmeof {
namespace {

// Kernel names (drivers/infiniband/core/sysfs.c), in the order of their numbers from 1 (the
// file reads "<number>: <name>"; enum ib_port_state, enum ib_port_phys_state). Number 0 (NOP,
// "<unknown>") is left out: the port is not reporting.
constexpr StateName kPortStates[] = {{"DOWN", "DOWN"},
                                     {"INIT", "INIT"},
                                     {"ARMED", "ARMED"},
                                     {"ACTIVE", "ACTIVE"},
                                     {"ACTIVE_DEFER", "ACTIVE_DEFER"}};
constexpr StateName kPhysStates[] = {
    {"Sleep", "Sleep"},       {"Polling", "Polling"},
    {"Disabled", "Disabled"}, {"PortConfigurationTraining", "PortConfigurationTraining"},
    {"LinkUp", "LinkUp"},     {"LinkErrorRecovery", "LinkErrorRecovery"},
    {"Phy Test", "Phy Test"}};

// counters/ files with their own metric; every other file goes to nvmeof_rdma_port_counters_total.
struct PortCounter {
  std::string_view file;
  std::string_view metric;
  std::string_view help;
  double scale;
  bool traffic_detail = false;  // served only with rdma.traffic_detail
};
constexpr PortCounter kPortCounters[] = {
    // PortXmitData/PortRcvData count 4-byte words (IBA PortCounters), not bytes.
    {"port_xmit_data", "nvmeof_rdma_port_transmit_bytes_total",
     "Bytes transmitted on the port (PMA).", 4},
    {"port_rcv_data", "nvmeof_rdma_port_receive_bytes_total", "Bytes received on the port (PMA).",
     4},
    {"port_xmit_packets", "nvmeof_rdma_port_transmit_packets_total",
     "Packets transmitted on the port (PMA).", 1},
    {"port_rcv_packets", "nvmeof_rdma_port_receive_packets_total",
     "Packets received on the port (PMA).", 1},
    {"unicast_xmit_packets", "nvmeof_rdma_port_unicast_transmit_packets_total",
     "Unicast packets transmitted on the port (PMA).", 1, true},
    {"unicast_rcv_packets", "nvmeof_rdma_port_unicast_receive_packets_total",
     "Unicast packets received on the port (PMA).", 1, true},
    {"multicast_xmit_packets", "nvmeof_rdma_port_multicast_transmit_packets_total",
     "Multicast packets transmitted on the port (PMA).", 1, true},
    {"multicast_rcv_packets", "nvmeof_rdma_port_multicast_receive_packets_total",
     "Multicast packets received on the port (PMA).", 1, true},
};

constexpr std::string_view kHwCounterHelp =
    "Every RDMA hw_counter by its driver name; port=\"0\" is the device-scope hw_counters "
    "directory.";

// "4: ACTIVE" -> "ACTIVE", "5: LinkUp" -> "LinkUp", "1: CA" -> "CA".
std::optional<std::string> ParseNumberedName(std::string_view text) {
  const auto colon = text.find(": ");
  if (colon == std::string_view::npos || !ParseU64(text.substr(0, colon))) return std::nullopt;
  std::string_view name = text.substr(colon + 2);
  if (name.empty()) return std::nullopt;
  return std::string(name);
}

// A state file: "4: ACTIVE" -> {4, "ACTIVE"}; nullopt for text that is not "<number>: <name>".
struct NumberedState {
  std::uint64_t number;
  std::string name;
};
std::optional<NumberedState> ParseNumberedState(std::string_view text) {
  const auto colon = text.find(": ");
  if (colon == std::string_view::npos) return std::nullopt;
  auto number = ParseU64(text.substr(0, colon));
  if (!number) return std::nullopt;
  return NumberedState{*number, std::string(text.substr(colon + 2))};
}

// "100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)" -> bytes per second. The kernel prints the
// signalling rate of width x lane speed; for SDR/DDR/QDR that includes 8b/10b encoding.
std::optional<double> ParseRateBytesPerSecond(std::string_view text) {
  const auto unit = text.find(" Gb/sec");
  if (unit == std::string_view::npos || unit == 0) return std::nullopt;
  const std::string_view number = text.substr(0, unit);
  if (number.find_first_not_of("0123456789.") != std::string_view::npos) return std::nullopt;
  double gbps = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), gbps);
  if (ec != std::errc() || ptr != number.data() + number.size()) return std::nullopt;
  return gbps * 1e9 / 8;
}

// A hw_counters/ directory's counters, sorted by name. `lifespan` is the driver's cache time in
// ms, a setting and not a counter.
SysfsFiles::Counters HwCounters(SysfsFiles::Counters entries) {
  std::erase_if(entries, [](const SysfsFiles::Counter& c) { return c.name == "lifespan"; });
  return entries;
}

// The path MTU rdma_cm gives a RoCE connection over a netdev (cma_resolve_iboe_route ->
// iboe_get_mtu, include/rdma/ib_addr.h): the largest IB MTU that fits the netdev MTU less the
// RoCEv2 headers (GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4 = 96 bytes); 0 when
// none fits, and then route resolution fails with EINVAL.
std::uint64_t RocePathMtu(std::uint64_t netdev_mtu) {
  constexpr std::uint64_t kHeaders = 96;
  for (std::uint64_t mtu : {4096, 2048, 1024, 512, 256}) {
    if (netdev_mtu >= mtu + kHeaders) return mtu;
  }
  return 0;
}

// A netdev a port is bound to; the MTUs are read once per netdev after all devices.
struct BoundNetdev {
  std::string device;
  std::string port;
  std::string netdev;
  bool roce;  // a CA (not an iWARP RNIC) on an Ethernet link layer
};

class RdmaCollector : public Collector {
 public:
  explicit RdmaCollector(const CollectorOptions& options) : options_(options) {}

  std::string_view Name() const override { return "rdma"; }

  bool Collect(MetricSink& out) override {
    const std::string root = options_.paths.sysfs + "/class/infiniband";
    bool ok = true;
    if (!files_.HasDir(root)) {
      // no RDMA stack loaded: nothing to report
    } else if (::access(root.c_str(), R_OK | X_OK) != 0) {
      out.Fail(FileFailure(root));
      ok = false;
    } else {
      std::vector<BoundNetdev> bound;
      for (const auto& dev : files_.List(root)) {
        if (options_.rdma.devices.Allows(dev)) CollectDevice(root + "/" + dev, dev, &bound, out);
      }
      EmitMtus(bound, out);
    }
    files_.Sweep();  // a device that went away keeps no files open
    return ok;
  }

 private:
  void CollectDevice(const std::string& dir, const std::string& dev,
                     std::vector<BoundNetdev>* bound, MetricSink& out) {
    auto attr = [&](const char* name) { return files_.ReadAttribute(dir, name).value_or(""); };
    std::string node_type = attr("node_type");
    if (auto parsed = ParseNumberedName(node_type)) node_type = *parsed;
    out.Gauge("nvmeof_rdma_device_info", "RDMA device metadata; value is always 1.",
              {{"rdma_device", dev},
               {"node_type", node_type},
               {"hca_type", attr("hca_type")},
               {"fw_ver", attr("fw_ver")},
               {"node_guid", attr("node_guid")},
               {"board_id", attr("board_id")}},
              1);

    bool port_hw_counters = false;
    for (const auto& port : files_.List(dir + "/ports")) {
      port_hw_counters |=
          CollectPort(dir + "/ports/" + port, dev, port, node_type == "CA", bound, out);
    }

    // Device-scope counters (mlx5, cxgb4, efa) get port="0". On mlx5 they repeat port 1's
    // counter set, so stable names come from them only when no port has hw_counters; otherwise
    // a sum over ports would count them twice.
    if (auto hw = files_.ReadCounters(dir + "/hw_counters"))
      EmitHwCounters(HwCounters(std::move(*hw)), dev, "0", !port_hw_counters, out);
  }

  // Returns whether the port has a hw_counters directory. `ca`: the device is a channel
  // adapter (IB or RoCE), not an iWARP RNIC.
  bool CollectPort(const std::string& dir, const std::string& dev, const std::string& port, bool ca,
                   std::vector<BoundNetdev>* bound, MetricSink& out) {
    const std::string link_layer = files_.ReadAttribute(dir, "link_layer").value_or("");
    // IB ports have no netdev; a RoCE port normally has one (VLANs/bonds can add more).
    std::vector<std::string> netdevs = PortNetdevs(files_, dir);
    for (const auto& netdev : netdevs) {
      bound->push_back({dev, port, netdev, ca && link_layer == "Ethernet"});
    }
    if (netdevs.empty()) netdevs.push_back("");
    for (const auto& netdev : netdevs) {
      out.Gauge("nvmeof_rdma_port_info",
                "RDMA port metadata with the netdev it is bound to (\"\" for none); value is "
                "always 1.",
                {{"rdma_device", dev},
                 {"rdma_port", port},
                 {"netdev", netdev},
                 {"link_layer", link_layer}},
                1);
    }

    EmitOneHot(dir, "state", "nvmeof_rdma_port_state",
               "Logical port state (one-hot): ACTIVE means the port can carry traffic.",
               kPortStates, dev, port, out);
    EmitOneHot(dir, "phys_state", "nvmeof_rdma_port_phys_state",
               "Physical port state (one-hot): LinkUp means the link is up.", kPhysStates, dev,
               port, out);

    auto rate = files_.ReadAttribute(dir, "rate");
    auto bytes_per_second = rate ? ParseRateBytesPerSecond(*rate) : std::nullopt;
    if (bytes_per_second) {
      out.Gauge("nvmeof_rdma_port_rate_bytes_per_second",
                "Active port rate as reported by sysfs (width x lane speed), in bytes/s.",
                {{"rdma_device", dev}, {"rdma_port", port}}, *bytes_per_second);
    } else {
      out.Skip();
    }

    CollectPortCounters(dir + "/counters", dev, port, out);

    auto hw = files_.ReadCounters(dir + "/hw_counters");
    if (!hw) return false;
    EmitHwCounters(HwCounters(std::move(*hw)), dev, port, true, out);
    return true;
  }

  // Each netdev's MTU once (rxe and siw often share one), then each RoCE port's path MTU. A
  // netdev absent from class/net (another network namespace) is no data; a broken mtu file is
  // a skipped series.
  void EmitMtus(const std::vector<BoundNetdev>& bound, MetricSink& out) {
    struct Mtu {
      ReadStatus status = ReadStatus::kAbsent;
      std::uint64_t bytes = 0;
    };
    std::map<std::string, Mtu> mtus;
    for (const auto& b : bound) {
      auto [it, fresh] = mtus.try_emplace(b.netdev);
      if (!fresh) continue;
      Mtu& m = it->second;
      m.status = ReadNetdevMtu(files_, options_.paths.sysfs, b.netdev, &m.bytes);
      if (m.status == ReadStatus::kOk) {
        out.Gauge("nvmeof_rdma_netdev_mtu_bytes",
                  "MTU of a netdev an RDMA port is bound to (sysfs class/net/<netdev>/mtu).",
                  {{"netdev", b.netdev}}, static_cast<double>(m.bytes));
      } else if (m.status == ReadStatus::kFailed) {
        out.Skip();
      }
    }
    for (const auto& b : bound) {
      if (!b.roce) continue;
      const Mtu& m = mtus.at(b.netdev);
      if (m.status != ReadStatus::kOk) {
        if (m.status == ReadStatus::kFailed) out.Skip();
        continue;
      }
      out.Gauge("nvmeof_rdma_roce_path_mtu_bytes",
                "Path MTU rdma_cm gives RoCE connections over this port and netdev: the largest "
                "IB MTU (256-4096) within the netdev MTU less 96 bytes of RoCEv2 headers "
                "(kernel iboe_get_mtu); 0 when none fits and connects fail.",
                {{"rdma_device", b.device}, {"rdma_port", b.port}, {"netdev", b.netdev}},
                static_cast<double>(RocePathMtu(m.bytes)));
    }
  }

  // A state file ("4: ACTIVE") as one-hot, by its number: the number is what the kernel
  // holds, the name only its table's spelling of it (states[n - 1]). A name that disagrees with
  // the number (a phys_state of "4: ACTIVE", the port state's spelling, from a driver or a
  // copied tree) is served by the number and counted as anomaly "state_number_mismatch"; a
  // number outside the table (0: NOP, "<unknown>") serves every state 0 and counts
  // "unknown_state" (MetricSink::OneHot); text that is not "<number>: <name>" is skipped.
  void EmitOneHot(const std::string& dir, std::string_view file, std::string_view metric,
                  std::string_view help, std::span<const StateName> states, const std::string& dev,
                  const std::string& port, MetricSink& out) {
    auto text = files_.ReadAttribute(dir, file);
    auto parsed = text ? ParseNumberedState(*text) : std::nullopt;
    std::optional<std::string> current;
    if (parsed && parsed->number >= 1 && parsed->number <= states.size()) {
      const StateName& by_number = states[parsed->number - 1];
      if (parsed->name != by_number.kernel) out.Anomaly("state_number_mismatch");
      current = std::string(by_number.kernel);
    } else if (parsed) {
      current = std::move(*text);  // "0: NOP": in no table, whatever its name
    }
    out.OneHot(metric, help, {{"rdma_device", dev}, {"rdma_port", port}}, states, current,
               /*unknown_all_zero=*/true);
  }

  // counters/: IB PMA port counters. Ports without a PMA (iWARP) answer "N/A (no PMA)".
  void CollectPortCounters(const std::string& dir, const std::string& dev, const std::string& port,
                           MetricSink& out) {
    for (const auto& [name, value] : files_.ReadCounters(dir).value_or(SysfsFiles::Counters{})) {
      if (!value) {
        out.Skip();
        continue;
      }
      const PortCounter* known = nullptr;
      for (const auto& c : kPortCounters) {
        if (c.file == name) known = &c;
      }
      if (known && known->traffic_detail && !options_.rdma.traffic_detail) continue;
      if (known) {
        out.Counter(known->metric, known->help, {{"rdma_device", dev}, {"rdma_port", port}},
                    static_cast<double>(*value) * known->scale);
      } else {
        out.Counter("nvmeof_rdma_port_counters_total",
                    "IB PMA port counters (errors, discards, waits) by sysfs file name.",
                    {{"rdma_device", dev}, {"rdma_port", port}, {"counter", std::string(name)}},
                    static_cast<double>(*value));
      }
    }
  }

  // `counters` sorted by name, as SysfsFiles lists them.
  void EmitHwCounters(const SysfsFiles::Counters& counters, const std::string& dev,
                      const std::string& port, bool stable_names, MetricSink& out) {
    for (const auto& [name, value] : counters) {
      if (!value) {
        out.Skip();
        continue;
      }
      out.Counter("nvmeof_rdma_hw_counters_total", kHwCounterHelp,
                  {{"rdma_device", dev}, {"rdma_port", port}, {"counter", std::string(name)}},
                  static_cast<double>(*value));
    }
    if (!stable_names) return;
    for (const auto& stable : StableHwCounters()) {
      if (stable.traffic_detail && !options_.rdma.traffic_detail) continue;
      for (const auto& source : stable.sources) {
        auto it = std::lower_bound(
            counters.begin(), counters.end(), source.counter,
            [](const SysfsFiles::Counter& c, std::string_view name) { return c.name < name; });
        if (it == counters.end() || it->name != source.counter) continue;
        if (it->value) {
          out.Counter(stable.metric, stable.help, {{"rdma_device", dev}, {"rdma_port", port}},
                      static_cast<double>(*it->value));
        } else {
          out.Skip();
        }
        break;  // first present source wins, even if unreadable: no silent source switching
      }
    }
  }

  const CollectorOptions options_;
  // Every file and directory read, kept open between scrapes.
  SysfsFiles files_;
};

}  // namespace

bool ParseRdmaOptions(const YAML::Node& section, RdmaOptions* options, std::string* error) {
  if (!CheckKeys(section, "rdma", {"devices", "traffic_detail"}, error)) return false;
  if (section["devices"] &&
      !ReadFilter(section["devices"], "rdma.devices", &options->devices, error)) {
    return false;
  }
  return !section["traffic_detail"] || ReadBool(section["traffic_detail"], "rdma.traffic_detail",
                                                &options->traffic_detail, error);
}

std::unique_ptr<Collector> NewRdmaCollector(const CollectorOptions& options) {
  return std::make_unique<RdmaCollector>(options);
}

}  // namespace nvmeof
