// Every collector the exporter knows, with its factory and the parser of its config section:
// the one place to look up a name.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/base/collector.h"
#include "collectors/bpf/options.h"
#include "collectors/nvme_host.h"
#include "collectors/nvmet.h"
#include "collectors/pfc.h"
#include "collectors/rdma.h"
#include "collectors/rdma_netlink.h"
#include "collectors/tcp.h"

namespace YAML {
class Node;
}

namespace nvmeof {

// What every collector is built from: the filesystem roots and each collector's own options
// (declared next to it; the config section of each is named after the collector).
struct CollectorOptions {
  Paths paths;
  RdmaOptions rdma;  // rdma.devices also selects the devices of pfc and rdma_netlink
  PfcOptions pfc;
  NvmeHostOptions nvme_host;
  NvmetOptions nvmet;
  BpfOptions bpf;
  RdmaNetlinkOptions rdma_netlink;
  TcpOptions tcp;
};

std::unique_ptr<Collector> NewRdmaCollector(const CollectorOptions& options);      // rdma.cc
std::unique_ptr<Collector> NewPfcCollector(const CollectorOptions& options);       // pfc.cc
std::unique_ptr<Collector> NewNvmeHostCollector(const CollectorOptions& options);  // nvme_host.cc
std::unique_ptr<Collector> NewNvmetCollector(const CollectorOptions& options);     // nvmet.cc
std::unique_ptr<Collector> NewTcpCollector(const CollectorOptions& options);       // tcp.cc
std::unique_ptr<Collector> NewBpfCollector(const CollectorOptions& options);       // bpf.cc
std::unique_ptr<Collector> NewRdmaNetlinkCollector(
    const CollectorOptions& options);  // rdma_netlink.cc

struct CollectorInfo {
  std::string_view name;
  bool enabled_by_default;
  std::string_view help;
  std::unique_ptr<Collector> (*make)(const CollectorOptions&);
  // Applies the collector's config section (the top-level key `name`) to *options; nullptr
  // when the collector has no section. Errors name the key, e.g. `rdma.devices: ...`.
  bool (*parse)(const YAML::Node& section, CollectorOptions* options, std::string* error);
};

const std::vector<CollectorInfo>& AllCollectors();
const CollectorInfo* FindCollector(std::string_view name);

}  // namespace nvmeof
