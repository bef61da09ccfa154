// A RdmaNetlinkTransport that answers each request with DIR/<RequestKey>.bin, the replies
// recorded from real kernels in tests/fixtures/netlink (--testing.rdma-netlink-record-dir).
#pragma once

#include <memory>
#include <string>

#include "readers/rdma_netlink_socket.h"

namespace nvmeof {

// A missing directory behaves like a kernel without RDMA netlink, a missing file like a request
// the kernel never answered.
std::unique_ptr<RdmaNetlinkTransport> NewRdmaNetlinkReplay(std::string dir);

}  // namespace nvmeof
