// The rdma_netlink collector: what `rdma statistic` and `rdma resource` show, read over
// NETLINK_RDMA. The transport (a socket, or recorded replies in tests) is injectable.
#pragma once

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectors/base/collector.h"
#include "collectors/kernel/rdma_netlink_socket.h"

namespace nvmeof {

std::unique_ptr<Collector> NewRdmaNetlinkCollector(const CollectorOptions& options,
                                                   std::unique_ptr<RdmaNetlinkTransport> transport);

}  // namespace nvmeof
