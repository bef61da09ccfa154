// Every collector the exporter knows, with its factory: the one place to look up a name.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "collectors/base/collector.h"

namespace nvmeof {

std::unique_ptr<Collector> NewRdmaCollector(const CollectorOptions& options);      // rdma.cc
std::unique_ptr<Collector> NewPfcCollector(const CollectorOptions& options);       // pfc.cc
std::unique_ptr<Collector> NewNvmeHostCollector(const CollectorOptions& options);  // nvme_host.cc
std::unique_ptr<Collector> NewNvmetCollector(const CollectorOptions& options);     // nvmet.cc
std::unique_ptr<Collector> NewTcpCollector(const CollectorOptions& options);       // tcp.cc
std::unique_ptr<Collector> NewBpfCollector(const CollectorOptions& options);  // bpf_collector.cc
std::unique_ptr<Collector> NewRdmaNetlinkCollector(
    const CollectorOptions& options);  // rdma_netlink.cc

struct CollectorInfo {
  std::string_view name;
  bool enabled_by_default;
  std::string_view help;
  std::unique_ptr<Collector> (*make)(const CollectorOptions&);
};

const std::vector<CollectorInfo>& AllCollectors();
const CollectorInfo* FindCollector(std::string_view name);

}  // namespace nvmeof
