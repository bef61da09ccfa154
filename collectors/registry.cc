#include "collectors/registry.h"

namespace nvmeof {

const std::vector<CollectorInfo>& AllCollectors() {
  static const std::vector<CollectorInfo> all = {
      {"rdma", true, "RDMA devices, ports, port counters and hw_counters (sysfs)",
       NewRdmaCollector},
      {"pfc", true, "PFC pause frames/duration per priority, pause storms (ethtool, DCB netlink)",
       NewPfcCollector},
      {"nvme_host", true, "NVMe host controllers, paths and namespaces (sysfs)",
       NewNvmeHostCollector},
      {"nvmet", true, "NVMe target subsystems, namespaces, ports and hosts (configfs)",
       NewNvmetCollector},
      {"tcp", true, "TCP retransmits, timeouts and ECN counters (procfs)", NewTcpCollector},
      {"bpf", true, "eBPF block-layer stage latency (queue, device, end to end)", NewBpfCollector},
      {"rdma_netlink", true,
       "RDMA port statistics, optional counters, resources and per-QP counters (rdma netlink)",
       NewRdmaNetlinkCollector},
  };
  return all;
}

const CollectorInfo* FindCollector(std::string_view name) {
  for (const auto& c : AllCollectors()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace nvmeof
