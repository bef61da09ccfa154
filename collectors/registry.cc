#include "collectors/registry.h"
#include "collectors/bpf.h"
#include "collectors/kubernetes.h"
#include "collectors/nvme_host.h"
#include "collectors/nvmet.h"
#include "collectors/pfc.h"
#include "collectors/rdma.h"
#include "collectors/rdma_netlink.h"
#include "collectors/tcp.h"

namespace nvmeof {
namespace {

// One section parser per collector that has options, on its own part of CollectorOptions.
template <typename T, T CollectorOptions::*member,
          bool (*parse)(const YAML::Node&, T*, std::string*)>
bool ParseSection(const YAML::Node& section, CollectorOptions* options, std::string* error) {
  return parse(section, &(options->*member), error);
}

}  // namespace

const std::vector<CollectorInfo>& AllCollectors() {
  static const std::vector<CollectorInfo> all = {
      {"rdma", true, "RDMA devices, ports, port counters and hw_counters (sysfs)", NewRdmaCollector,
       ParseSection<RdmaOptions, &CollectorOptions::rdma, ParseRdmaOptions>},
      {"pfc", true, "PFC pause frames/duration per priority, pause storms (ethtool, DCB netlink)",
       NewPfcCollector, ParseSection<PfcOptions, &CollectorOptions::pfc, ParsePfcOptions>},
      {"nvme_host", true, "NVMe host controllers, paths and namespaces (sysfs)",
       NewNvmeHostCollector,
       ParseSection<NvmeHostOptions, &CollectorOptions::nvme_host, ParseNvmeHostOptions>},
      {"nvmet", true, "NVMe target subsystems, namespaces, ports and hosts (configfs)",
       NewNvmetCollector, ParseSection<NvmetOptions, &CollectorOptions::nvmet, ParseNvmetOptions>},
      {"tcp", true,
       "NVMe/TCP connections and their retransmits (sock_diag); node-wide TCP counters (procfs) "
       "with tcp.node_counters",
       NewTcpCollector, ParseSection<TcpOptions, &CollectorOptions::tcp, ParseTcpOptions>},
      {"bpf", true,
       "eBPF stage latency: block layer (queue, device, end to end) and NVMe-oF host and target "
       "stages",
       NewBpfCollector, ParseSection<BpfOptions, &CollectorOptions::bpf, ParseBpfOptions>},
      // Serves nothing on a node without a kubelet directory: on by default costs others one
      // stat per scrape.
      {"kubernetes", true,
       "Pod and PersistentVolume of each CSI volume on an NVMe namespace (mountinfo, kubelet "
       "directories)",
       NewKubernetesCollector,
       ParseSection<KubernetesOptions, &CollectorOptions::kubernetes, ParseKubernetesOptions>},
      // Off by default: its port statistics are the hw_counters the rdma collector serves, and
      // no shipped panel, rule or alert reads its resources or per-QP series (docs/fleet.md).
      {"rdma_netlink", false,
       "RDMA port statistics, optional counters, resources and per-QP counters (rdma netlink); "
       "off by default",
       NewRdmaNetlinkCollector,
       ParseSection<RdmaNetlinkOptions, &CollectorOptions::rdma_netlink, ParseRdmaNetlinkOptions>},
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
