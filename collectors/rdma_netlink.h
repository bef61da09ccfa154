// The rdma_netlink collector: what `rdma statistic` and `rdma resource` show, read over
// NETLINK_RDMA. The transport (a socket, or recorded replies in tests) is injectable.
#pragma once

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/collector.h"
#include "readers/rdma_netlink_socket.h"

namespace YAML {
class Node;
}

namespace nvmeof {

struct CollectorOptions;  // collectors/collector_options.h

// Config section `rdma_netlink:`. Devices are those rdma.devices admits.
struct RdmaNetlinkOptions {
  bool per_qp = false;                       // QP table and bound per-QP counter sets
  std::uint32_t max_qp_series = 1000;        // per-QP series per scrape; the rest are skipped
  std::uint64_t max_reply_bytes = 8u << 20;  // netlink bytes read per scrape
  double timeout_seconds = 2;                // netlink time per scrape
  std::vector<std::string> enable_optional_counters;  // STAT_SET: changes the system (opt-in)
  std::string record_dir;  // testing: write every netlink reply to DIR/<request>.bin
};

// The `rdma_netlink:` section on top of *options. Errors name the key:
// `rdma_netlink.max_qp_series: ...`.
bool ParseRdmaNetlinkOptions(const YAML::Node& section, RdmaNetlinkOptions* options,
                             std::string* error);

std::unique_ptr<Collector> NewRdmaNetlinkCollector(const CollectorOptions& options,
                                                   std::unique_ptr<RdmaNetlinkTransport> transport);

// The collector --collector.rdma_netlink names.
std::unique_ptr<Collector> NewRdmaNetlinkCollector(const CollectorOptions& options);

}  // namespace nvmeof
